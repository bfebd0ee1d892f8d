// What the files of the _ptqkit extension share: turning a ptq::Status into a Python exception,
// numpy arrays into tensors and back, Python data into a dataset, and the progress line.
// Each file registers one concept on the module (register_* below, called by module.cpp).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/calibrators.h"
#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/runtime/engine.h"
#include "ptq/status.h"

namespace ptq::python {

namespace py = pybind11;

// ---- errors.cpp: ptqkit.Error (a RuntimeError) carrying the library's one-line message.
void register_errors(py::module_& m);
// Throws ptqkit.Error with the status's message unless it is ok; a Status made by an
// interrupted progress callback rethrows the KeyboardInterrupt that stopped it.
void throw_if_error(const Status& status);
template <typename T>
T value_or_throw(Expected<T> e) {
  throw_if_error(e.status());
  return std::move(e).value();
}

// Issues a UserWarning (a warnings filter turning it into an error raises it).
void warn(const std::string& message);

// ---- arrays.cpp: numpy <-> ir::Tensor.
// The tensor's dtype for a numpy dtype (ptqkit.Error for one it has no DType for).
ir::DType dtype_of(const py::dtype& dtype);
py::dtype numpy_dtype(ir::DType dtype);
std::string dtype_str(const py::dtype& dtype);  // "float32"
// A tensor borrowing the array's memory when it is C-contiguous (the array must outlive it),
// else borrowing `keep`, a C-contiguous copy made here.
ir::Tensor borrow_array(const py::array& array, py::object& keep);
// An array owning the tensor's storage (no copy).
py::array to_array(ir::Tensor tensor);

// ---- samples.cpp: the data a function takes (a CalibrationDataReader, {name: array}, one
// array, or a path as `ptq --data` takes) as a dataset spec. Arrays are held by the returned
// object, which must outlive every dataset opened from it.
struct PythonData {
  data::DatasetSpec spec;
  std::vector<std::unique_ptr<data::SampleSource>> sources;
};
// `batch` 0 keeps the dataset's default (`default_batch`, or the model's fixed batch dim).
std::unique_ptr<PythonData> python_data(const py::object& data, int64_t batch,
                                        int64_t default_batch);
// Opens the dataset and binds it to `graph`; touches no Python object (no GIL needed).
Expected<data::Dataset> open_dataset(const PythonData& data, const ir::Graph& graph);
// The same, throwing ptqkit.Error (the GIL held).
data::Dataset open_bound(const PythonData& data, const ir::Graph& graph);

// ---- progress.cpp: the CLI's progress line on stderr (when it is a terminal and not quiet)
// and Ctrl-C: between batches the calling thread checks for signals and stops the run.
class Progress {
 public:
  // `label` as `ptq` names the work ("calibrate"); `stage` the word before a calibration's
  // "1/2" ("pass", or "calibration pass" within quantize).
  Progress(std::string label, int64_t total, bool quiet, std::string stage = "pass");
  ~Progress();
  // For calibration::CalibrationOptions::progress.
  calibration::ProgressFn calibration_fn();
  // After `done` items of a plain loop: redraws and checks for Ctrl-C.
  Status update(int64_t done);
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// A Status that stops a run after PyErr_CheckSignals raised (the error is kept set).
Status interrupted();

// ---- the module's functions, one concept per file.
void register_run(py::module_& m);          // run.cpp
void register_cache(py::module_& m);        // cache.cpp
void register_calibrate(py::module_& m);    // calibrate.cpp
void register_quantize(py::module_& m);     // quantize.cpp
void register_compare(py::module_& m);      // compare.cpp
void register_sensitivity(py::module_& m);  // sensitivity.cpp

// ---- engine.cpp: an executor for `model` on "cpu" or "vulkan" (one worker; a calibration's
// table is the same bit for bit for any number of workers).
using runtime::Engine;
Expected<Engine> open_engine(const ir::Model& model, const std::string& backend, int threads);
// The same, throwing ptqkit.Error (the GIL held).
Engine make_engine(const ir::Model& model, const std::string& backend, int threads);

// ---- methods.cpp: a calibration method named as ptqkit names it ("mse") or as ONNX Runtime
// does ("MinMax", CalibrationMethod.Entropy: any object whose str() or .name is such a name).
calib::MethodConfig method_config(const py::object& method, double percentile);

// ---- cache.cpp: CalibrationCache, a calib::CalibrationTable held by Python.
struct Cache {
  calib::CalibrationTable table;
};

}  // namespace ptq::python
