// PyInit__ptqkit: the extension behind the ptqkit package (python/ptqkit/__init__.py).
#include "bindings.h"
#include "ptq/version.h"

PYBIND11_MODULE(_ptqkit, m) {
  namespace python = ptq::python;
  m.doc() = "ptqkit: post-training quantization for ONNX models (the C++ library's bindings)";
  m.attr("__version__") = PTQ_VERSION_STRING;
  python::register_errors(m);
  python::register_cache(m);
  python::register_run(m);
  python::register_calibrate(m);
  python::register_quantize(m);
  python::register_compare(m);
  python::register_sensitivity(m);
}
