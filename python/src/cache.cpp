// ptqkit.CalibrationCache: a calibration table held by Python. Load any format, inspect the
// ranges and histograms, save in any format, recompute with another method, merge shards:
// what `ptq cache show|convert|merge` do, as library calls.
#include <algorithm>
#include <vector>

#include "bindings.h"

namespace ptq::python {

namespace {

void warn_all(const calib::Warnings& warnings) {
  for (const std::string& w : warnings) warn(w);
}

Cache load(const std::string& path) {
  calib::Warnings warnings;
  Cache c{value_or_throw(calib::read_cache(path, &warnings))};
  warn_all(warnings);
  return c;
}

const calib::TensorRange& find(const Cache& c, const std::string& name) {
  const calib::TensorRange* r = c.table.find(name);
  if (r == nullptr) throw py::key_error(fmt::format("no tensor '{}' in the cache", name));
  return *r;
}

py::dict range_dict(const calib::TensorRange& r) {
  py::dict d;
  d["amax"] = r.amax;
  d["min"] = r.min;
  d["max"] = r.max;
  d["scale"] = r.scale();
  d["count"] = r.count;
  d["nonfinite"] = r.nonfinite;
  d["has_histogram"] = r.has_histogram();
  return d;
}

// (counts, edges) as numpy.histogram gives them: |x| counts over [0, hist_max].
py::tuple histogram(const Cache& c, const std::string& name) {
  const calib::TensorRange& r = find(c, name);
  if (!r.has_histogram()) {
    throw_if_error(invalid_input("tensor '{}' has no histogram in this cache (method {})", name,
                                 c.table.method));
  }
  py::array_t<uint64_t> counts(static_cast<py::ssize_t>(r.histogram.size()));
  std::copy(r.histogram.begin(), r.histogram.end(), counts.mutable_data());
  py::object edges =
      py::module_::import("numpy").attr("linspace")(0.0, r.hist_max, r.histogram.size() + 1);
  return py::make_tuple(counts, edges);
}

void save(const Cache& c, const std::string& path, const std::string& format,
          const std::string& trt_version, const std::string& trt_algo) {
  calib::WriteOptions options;
  options.format = value_or_throw(calib::parse_format(format));
  options.trt.version = value_or_throw(calib::parse_trt_version(trt_version));
  options.trt.algorithm = trt_algo;
  throw_if_error(calib::write_cache(c.table, path, options));
}

Cache recalibrated(const Cache& c, const py::object& method, double percentile) {
  Cache out = c;
  throw_if_error(calib::recalibrate(out.table, method_config(method, percentile)));
  return out;
}

Cache merge(const std::vector<Cache>& shards, const py::object& method, double percentile,
            bool force) {
  std::vector<calib::CalibrationTable> tables;
  for (const Cache& s : shards) tables.push_back(s.table);
  calib::MethodConfig config;
  const bool recompute = !method.is_none();
  if (recompute) config = method_config(method, percentile);
  return Cache{value_or_throw(
      calib::merge_calibrations(tables, recompute ? &config : nullptr, {.force = force}))};
}

py::dict inputs(const Cache& c) {
  py::dict d;
  for (const auto& [name, shape] : c.table.model.inputs)
    d[py::str(name)] = py::tuple(py::cast(shape));
  return d;
}

}  // namespace

void register_cache(py::module_& m) {
  py::class_<Cache>(m, "CalibrationCache",
                    "A calibration cache: per tensor its range (amax, min, max) and, from "
                    "histogram methods, its |x| histogram.")
      .def_static("load", &load, py::arg("path"),
                  "Reads a cache of any format: ptqkit JSON, TensorRT text, ONNX Runtime.")
      .def("save", &save, py::arg("path"), py::arg("format") = "json",
           py::arg("trt_version") = "8.6.1", py::arg("trt_algo") = "",
           "Writes the cache atomically as 'json', 'tensorrt', 'ort' or 'ort-json'.")
      .def("recalibrated", &recalibrated, py::arg("method"), py::arg("percentile") = 99.99,
           "A copy with every amax recomputed from the histograms with another method.")
      .def_static("merge", &merge, py::arg("shards"), py::arg("method") = py::none(),
                  py::arg("percentile") = 99.99, py::arg("force") = false,
                  "Merges caches calibrated on shards of the data (counts added).")
      .def("to_json", [](const Cache& c) { return calib::json_cache_string(c.table); })
      .def_property_readonly("method", [](const Cache& c) { return c.table.method; })
      .def_property_readonly("method_params", [](const Cache& c) { return c.table.method_params; })
      .def_property_readonly("graph_sha256",
                             [](const Cache& c) { return c.table.model.graph_sha256; })
      .def_property_readonly("inputs", &inputs)
      .def_property_readonly("samples", [](const Cache& c) { return c.table.run.samples; })
      .def_property_readonly("date", [](const Cache& c) { return c.table.run.date; })
      .def_property_readonly("tensors",
                             [](const Cache& c) {
                               std::vector<std::string> names;
                               for (const auto& [name, r] : c.table.tensors) names.push_back(name);
                               return names;
                             })
      .def(
          "range",
          [](const Cache& c, const std::string& name) { return range_dict(find(c, name)); },
          py::arg("name"), "amax, min, max, scale, count, nonfinite and has_histogram of a tensor.")
      .def("histogram", &histogram, py::arg("name"),
           "(counts, edges) of a tensor's |x| histogram, as numpy.histogram returns them.")
      .def("__len__", [](const Cache& c) { return c.table.tensors.size(); })
      .def("__contains__",
           [](const Cache& c, const std::string& n) { return c.table.find(n) != nullptr; })
      .def("__repr__", [](const Cache& c) {
        return fmt::format("<CalibrationCache method={} tensors={}>", c.table.method,
                           c.table.tensors.size());
      });
}

}  // namespace ptq::python
