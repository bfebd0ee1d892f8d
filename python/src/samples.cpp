// The data the module's functions take, as a dataset: ONNX Runtime's CalibrationDataReader
// protocol (get_next() gives a dict of arrays, batch axis first, until None), a dict of arrays
// (samples stacked on axis 0), one array (a single-input model), or a path or NAME=PATH as
// `ptq --data` takes. Arrays become data::SampleSource objects, so binding, conversion and
// batching are the library's, as for files.
#include <cstring>
#include <map>

#include "bindings.h"

namespace ptq::python {

namespace {

// Samples stacked on axis 0 of a C-contiguous array held here. read() runs on library
// threads without the GIL: it only copies bytes the array keeps alive.
class ArraySource : public data::SampleSource {
 public:
  ArraySource(std::string name, py::array array)
      : name_(std::move(name)), array_(std::move(array)), dtype_(dtype_of(array_.dtype())) {
    shape_.assign(array_.shape() + 1, array_.shape() + array_.ndim());
    sample_bytes_ = static_cast<size_t>(ir::num_elements(shape_)) * ir::dtype_size(dtype_);
  }
  std::string name() const override { return name_; }
  ir::DType dtype() const override { return dtype_; }
  ir::Shape sample_shape() const override { return shape_; }
  int64_t count() const override { return array_.shape(0); }
  Status read(int64_t i, void* dst) const override {
    std::memcpy(dst, static_cast<const std::byte*>(array_.data()) + i * sample_bytes_,
                sample_bytes_);
    return {};
  }

 private:
  std::string name_;
  py::array array_;
  ir::DType dtype_;
  ir::Shape shape_;
  size_t sample_bytes_ = 0;
};

py::array stacked_array(const py::handle& value, const std::string& where) {
  py::array array =
      py::array::ensure(py::module_::import("numpy").attr("asarray")(value), py::array::c_style);
  if (!array) throw_if_error(invalid_input("{} is not an array", where));
  if (array.ndim() == 0) {
    throw_if_error(invalid_input("{} is a scalar: give samples stacked on a first axis", where));
  }
  return array;
}

void add_array(PythonData& d, const std::string& input, py::array array, const std::string& where) {
  d.sources.push_back(std::make_unique<ArraySource>(where, std::move(array)));
  d.spec.sources.push_back({.input = input, .path = {}, .samples = d.sources.back().get()});
}

std::string type_name(const py::handle& h) {
  return py::str(py::type::of(h).attr("__name__")).cast<std::string>();
}

// Every dict get_next() gives, its arrays concatenated on axis 0 per input.
py::dict drain_reader(const py::object& reader) {
  std::map<std::string, py::list> parts;
  py::object numpy = py::module_::import("numpy");
  for (int64_t k = 0;; ++k) {
    py::object item = reader.attr("get_next")();
    if (item.is_none()) break;
    if (!py::isinstance<py::dict>(item)) {
      throw_if_error(
          invalid_input("get_next() returned a {}, not a dict of numpy arrays or None "
                        "(item {})",
                        type_name(item), k));
    }
    const auto dict = item.cast<py::dict>();
    if (k > 0 && dict.size() != parts.size()) {
      throw_if_error(invalid_input("get_next() item {} has {} inputs, item 0 had {}", k,
                                   dict.size(), parts.size()));
    }
    for (const auto& [key, value] : dict) {
      const std::string name = py::str(key).cast<std::string>();
      if (k > 0 && parts.count(name) == 0) {
        throw_if_error(
            invalid_input("get_next() item {} gives input '{}', which item 0 did not", k, name));
      }
      parts[name].append(stacked_array(value, fmt::format("get_next()['{}'] (item {})", name, k)));
    }
  }
  if (parts.empty())
    throw_if_error(invalid_input("the reader gave no data (get_next() gave None)"));
  py::dict stacked;
  for (auto& [name, list] : parts) {
    const py::dtype first = list[0].cast<py::array>().dtype();
    for (size_t k = 1; k < list.size(); ++k) {
      if (!list[k].cast<py::array>().dtype().equal(first)) {
        throw_if_error(
            invalid_input("get_next() gives input '{}' as {} in item 0 but {} in "
                          "item {}",
                          name, dtype_str(first), dtype_str(list[k].cast<py::array>().dtype()), k));
      }
    }
    try {
      stacked[py::str(name)] = numpy.attr("concatenate")(list, 0);
    } catch (py::error_already_set& e) {
      throw_if_error(
          invalid_input("get_next() gives input '{}' in arrays whose shapes differ "
                        "beyond the first axis: {}",
                        name, e.what()));
    }
  }
  return stacked;
}

}  // namespace

std::unique_ptr<PythonData> python_data(const py::object& data, int64_t batch,
                                        int64_t default_batch) {
  auto d = std::make_unique<PythonData>();
  d->spec.batch = batch;
  d->spec.default_batch = default_batch;
  py::object os = py::module_::import("os");
  if (py::isinstance<py::str>(data) || py::isinstance(data, os.attr("PathLike"))) {
    d->spec.sources.push_back(
        data::parse_source(py::str(os.attr("fspath")(data)).cast<std::string>()));
  } else if (py::hasattr(data, "get_next")) {
    for (const auto& [key, value] : drain_reader(data)) {
      const std::string name = key.cast<std::string>();
      add_array(*d, name, value.cast<py::array>(), fmt::format("get_next()['{}']", name));
    }
  } else if (py::isinstance<py::dict>(data)) {
    for (const auto& [key, value] : data.cast<py::dict>()) {
      const std::string name = py::str(key).cast<std::string>();
      const std::string where = fmt::format("data['{}']", name);
      add_array(*d, name, stacked_array(value, where), where);
    }
  } else if (py::isinstance<py::array>(data)) {
    add_array(*d, "", stacked_array(data, "the array"), "the array");
  } else {
    throw_if_error(
        usage_error("data is a {}: give a CalibrationDataReader (get_next()), a dict "
                    "of numpy arrays, one array, or a path",
                    type_name(data)));
  }
  return d;
}

Expected<data::Dataset> open_dataset(const PythonData& d, const ir::Graph& graph) {
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, data::Dataset::open(d.spec));
  PTQ_RETURN_IF_ERROR(dataset.bind(graph));
  return dataset;
}

data::Dataset open_bound(const PythonData& d, const ir::Graph& graph) {
  return value_or_throw(open_dataset(d, graph));
}

}  // namespace ptq::python
