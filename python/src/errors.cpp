// ptqkit.Error: every library failure reaches Python as this RuntimeError subclass, with the
// library's one-line message (the file, tensor, node or line at fault) and its CLI exit code;
// the library's warnings as UserWarning.

#include "bindings.h"

namespace ptq::python {

namespace {

PyObject* error_type = nullptr;  // ptqkit.Error, owned by the module from import on

}  // namespace

void register_errors(py::module_& m) {
  error_type = PyErr_NewExceptionWithDoc(
      "ptqkit.Error",
      "A ptqkit failure: its message is the one line `ptq` prints; `code` is the exit code "
      "`ptq` would return (1 runtime, 2 usage, 3 invalid input).",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(error_type);
}

void throw_if_error(const Status& status) {
  if (status.is_ok()) return;
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();  // Ctrl-C, a reader's error
  py::object error = py::handle(error_type)(status.message());
  error.attr("code") = status.exit_code();
  PyErr_SetObject(error_type, error.ptr());
  throw py::error_already_set();
}

void warn(const std::string& message) {
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

Status interrupted() { return runtime_error("interrupted"); }

}  // namespace ptq::python
