// `ptq cache show|check|convert|merge`: inspect, check, convert and merge calibration caches of
// any format (docs/CACHE_FORMAT.md).
//   show CACHE [--json]                     summary of every tensor and the provenance
//   check CACHE MODEL [--all-tensors]       missing/extra tensors and graph hash; exit 3 if off
//   convert IN -o OUT [--format F] [--method M [--percentile P]]
//   merge SHARD... -o OUT [--method M] [--force] [--drop-histograms]
// Output formats come from --format, else from the name: calibration.cache (ONNX Runtime
// text), calibration.json (ONNX Runtime JSON), *.cache (TensorRT), *.json (ptqkit JSON).
#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "method_options.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/calibrators.h"
#include "ptq/onnx.h"
#include "ptq/report.h"
#include "ptq/util/atomic_file.h"

namespace ptq::apps {

namespace {

namespace fs = std::filesystem;

// How a converted or merged table is written.
struct OutputOptions {
  std::string out;
  std::string format;  // "" = from the file name
  std::string trt_version = "8.6.1";
  std::string trt_algo;
  std::string ort_json_style = "minmax";
};

// A method to recompute amax with (name "" = keep the table's) and its options.
struct MethodChoice {
  calib::MethodConfig config{.name = ""};
  MethodOptions options;
};

struct CacheOptions {
  std::string show_file;
  bool show_json = false;
  std::string check_cache, check_model;
  bool check_all_tensors = false;
  std::string convert_in;
  std::string convert_from_qdq;  // a Q/DQ model to read the activation scales of (ptq_report)
  OutputOptions convert_out;
  MethodChoice convert_method;
  std::vector<std::string> shards;
  OutputOptions merge_out;
  MethodChoice merge_method;
  bool force = false;
  bool drop_histograms = false;
};

Expected<calib::CacheFormat> output_format(const OutputOptions& o) {
  if (!o.format.empty()) return calib::parse_format(o.format);
  const fs::path p(o.out);
  if (p.filename() == "calibration.cache") return calib::CacheFormat::kOrtText;
  if (p.filename() == "calibration.json") return calib::CacheFormat::kOrtJson;
  if (p.extension() == ".cache") return calib::CacheFormat::kTensorRT;
  if (p.extension() == ".json") return calib::CacheFormat::kJson;
  return usage_error("cannot tell the cache format of '{}' from its name: give --format json, "
                     "tensorrt, ort or ort-json",
                     o.out);
}

Status write_output(const calib::CalibrationTable& table, const OutputOptions& o) {
  calib::WriteOptions wo;
  PTQ_ASSIGN_OR_RETURN(wo.format, output_format(o));
  PTQ_ASSIGN_OR_RETURN(wo.trt.version, calib::parse_trt_version(o.trt_version));
  wo.trt.algorithm = o.trt_algo;
  if (o.ort_json_style == "tensors-data") {
    wo.ort_json = calib::OrtJsonStyle::kTensorsData;
  } else if (o.ort_json_style != "minmax") {
    return usage_error("--ort-json-style '{}': expected minmax or tensors-data", o.ort_json_style);
  }
  return calib::write_cache(table, o.out, wo);
}

// The method to apply, or nullopt to keep the table's.
Expected<std::optional<calib::MethodConfig>> method_config(const MethodChoice& m) {
  PTQ_RETURN_IF_ERROR(m.options.check_given_with_method(m.config));
  if (m.config.name.empty()) return std::optional<calib::MethodConfig>();
  PTQ_RETURN_IF_ERROR(m.config.validate());
  return std::optional<calib::MethodConfig>(m.config);
}

Expected<calib::CalibrationTable> read(const std::string& path, bool quiet) {
  calib::Warnings warnings;
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, calib::read_cache(path, &warnings));
  (void)quiet;  // -q hides progress only, never warnings
  for (const std::string& w : warnings) log::warn("{}", w);
  return t;
}

void add_output_options(CLI::App& sub, OutputOptions& o) {
  sub.add_option("-o,--out", o.out, "the cache to write")->required();
  sub.add_option("--format", o.format, "json, tensorrt, ort or ort-json (default: from the name)");
  sub.add_option("--trt-version", o.trt_version, "TensorRT version of a TensorRT cache header")
      ->capture_default_str();
  sub.add_option("--trt-algo", o.trt_algo, trt_algo_help());
  sub.add_option("--ort-json-style", o.ort_json_style,
                 "ONNX Runtime JSON: minmax ({name: [min, max]}) or tensors-data")
      ->capture_default_str();
}

void add_method_choice(CLI::App& sub, MethodChoice& m, const std::string& what) {
  m.options = add_method_options(
      sub, m.config, {.what = what, .suffix = " (needs stored histograms)", .show_default = false});
}

// ---- show -----------------------------------------------------------------------------------

std::string number(double v) { return std::isnan(v) ? "-" : fmt::format("{:.6g}", v); }

std::string params_str(const calib::CalibrationTable& t) {
  std::vector<std::string> p;
  for (const auto& [k, v] : t.method_params) p.push_back(fmt::format("{}={}", k, v));
  return p.empty() ? "" : fmt::format(" ({})", fmt::join(p, ", "));
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::vector<std::string> d;
  for (int64_t v : s) d.push_back(v < 0 ? "?" : std::to_string(v));
  return fmt::format("[{}]", fmt::join(d, ","));
}

void show_text(const calib::CalibrationTable& t, const std::string& file, calib::CacheFormat f) {
  fmt::print("{}: {} cache, method {}{}, {} tensors{}\n", file, calib::format_name(f), t.method,
             params_str(t), t.tensors.size(), t.has_histograms() ? ", with histograms" : "");
  if (!t.model.graph_sha256.empty() || t.model.opset > 0 || !t.model.inputs.empty()) {
    std::vector<std::string> inputs;
    for (const auto& [name, shape] : t.model.inputs)
      inputs.push_back(name + " " + shape_str(shape));
    fmt::print("model: graph sha256 {}, opset {}, inputs: {}\n",
               t.model.graph_sha256.empty() ? "unknown" : t.model.graph_sha256, t.model.opset,
               inputs.empty() ? "-" : fmt::format("{}", fmt::join(inputs, ", ")));
  }
  if (t.run.samples > 0 || !t.run.backend.empty()) {
    fmt::print("run: {} samples, batch {}, backend {}, ptqkit {}, {}{}\n", t.run.samples,
               t.run.batch, t.run.backend, t.run.ptqkit_version, t.run.date,
               t.run.ignore_nonfinite ? ", non-finite values skipped" : "");
  }
  for (const auto& [k, v] : t.provenance) fmt::print("provenance: {} = {}\n", k, v);
  size_t w = 6;
  for (const auto& [name, r] : t.tensors) w = std::max(w, name.size());
  fmt::print("{:<{}}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}  {}\n", "tensor", w, "amax",
             "scale", "min", "max", "count", "nonfinite", "histogram");
  for (const auto& [name, r] : t.tensors) {
    fmt::print("{:<{}}  {:>12}  {:>12}  {:>12}  {:>12}  {:>12}  {:>9}  {}\n", name, w,
               number(r.amax), number(r.scale()), number(r.min), number(r.max), r.count,
               r.nonfinite, r.has_histogram() ? "yes" : "no");
  }
}

void show_json(const calib::CalibrationTable& t, const std::string& file, calib::CacheFormat f) {
  using json = nlohmann::ordered_json;
  auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  json inputs = json::array();
  for (const auto& [name, shape] : t.model.inputs)
    inputs.push_back({{"name", name}, {"shape", shape}});
  json tensors = json::array();
  for (const auto& [name, r] : t.tensors) {
    tensors.push_back({{"name", name}, {"amax", r.amax}, {"scale", r.scale()}, {"min", num(r.min)},
                       {"max", num(r.max)}, {"count", r.count}, {"nonfinite", r.nonfinite},
                       {"histogram", r.has_histogram()}});
  }
  json params = json::object();
  for (const auto& [k, v] : t.method_params) params[k] = v;
  json provenance = json::object();
  for (const auto& [k, v] : t.provenance) provenance[k] = v;
  json j = {
      {"file", file},
      {"format", calib::format_name(f)},
      {"method", t.method},
      {"params", params},
      {"model",
       {{"graph_sha256", t.model.graph_sha256}, {"opset", t.model.opset}, {"inputs", inputs}}},
      {"calibration",
       {{"samples", t.run.samples},
        {"batch", t.run.batch},
        {"backend", t.run.backend},
        {"ptqkit_version", t.run.ptqkit_version},
        {"date", t.run.date},
        {"ignore_nonfinite", t.run.ignore_nonfinite}}},
      {"provenance", provenance},
      {"tensors", tensors}};
  fmt::print("{}\n", j.dump(2));
}

Status show_command(const CacheOptions& o, const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(std::string bytes, util::read_file(o.show_file));
  const calib::CacheFormat f = calib::detect_format(bytes);
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, read(o.show_file, global.quiet));
  if (o.show_json) {
    show_json(t, o.show_file, f);
  } else {
    show_text(t, o.show_file, f);
  }
  return Status::ok();
}

// ---- check ----------------------------------------------------------------------------------

Status check_command(const CacheOptions& o, const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, read(o.check_cache, global.quiet));
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.check_model));
  calibration::CalibrationOptions co;
  co.all_tensors = o.check_all_tensors;
  PTQ_ASSIGN_OR_RETURN(std::vector<std::string> expected,
                       calibration::calibration_tensors(model, co));
  const std::string hash = onnx::graph_hash(model);
  const calib::ModelCheck check = calib::check_model(t, hash, expected);
  if (!check.hash_known) {
    fmt::print("graph hash: not recorded in the cache\n");
  } else if (check.hash_matches) {
    fmt::print("graph hash: matches ({})\n", hash);
  } else {
    fmt::print("graph hash: differs (cache {}, model {})\n", t.model.graph_sha256, hash);
  }
  fmt::print("tensors: {} expected, {} in the cache, {} missing, {} extra\n", expected.size(),
             t.tensors.size(), check.missing.size(), check.extra.size());
  for (const std::string& line : calib::describe(check)) fmt::print("{}\n", line);
  if (check.ok()) {
    fmt::print("ok\n");
    return Status::ok();
  }
  std::vector<std::string> why;
  if (!check.hash_matches) why.push_back("graph hash differs");
  if (!check.missing.empty())
    why.push_back(fmt::format("{} tensor(s) missing", check.missing.size()));
  if (!check.extra.empty()) why.push_back(fmt::format("{} extra tensor(s)", check.extra.size()));
  return invalid_input("cache '{}' does not fit model '{}': {}", o.check_cache, o.check_model,
                       fmt::join(why, ", "));
}

// ---- convert / merge ------------------------------------------------------------------------

// --from-qdq: the scales of an existing Q/DQ model (e.g. exported from QAT) as a cache.
Status convert_from_qdq(const CacheOptions& o, const std::optional<calib::MethodConfig>& method) {
  if (method) return usage_error("--method cannot recompute a table read from Q/DQ scales");
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.convert_from_qdq));
  std::vector<std::string> warnings;
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, report::qdq_to_table(model, &warnings));
  t.provenance["model"] = o.convert_from_qdq;
  for (const std::string& w : warnings) log::warn("{}", w);
  return write_output(t, o.convert_out);
}

Status convert_command(const CacheOptions& o, const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(std::optional<calib::MethodConfig> method, method_config(o.convert_method));
  if (!o.convert_from_qdq.empty()) return convert_from_qdq(o, method);
  if (o.convert_in.empty())
    return usage_error("ptq cache convert: give a CACHE or --from-qdq MODEL");
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, read(o.convert_in, global.quiet));
  if (method) PTQ_RETURN_IF_ERROR(calib::recalibrate(t, *method));
  return write_output(t, o.convert_out);
}

Status merge_command(const CacheOptions& o, const GlobalOptions& global) {
  PTQ_ASSIGN_OR_RETURN(std::optional<calib::MethodConfig> method, method_config(o.merge_method));
  std::vector<calib::CalibrationTable> shards;
  for (const std::string& s : o.shards) {
    PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t, read(s, global.quiet));
    shards.push_back(std::move(t));
  }
  calib::MergeOptions mo{.force = o.force, .drop_histograms = o.drop_histograms};
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable merged,
                       calib::merge_calibrations(shards, method ? &*method : nullptr, mo));
  return write_output(merged, o.merge_out);
}

}  // namespace

Runner register_cache(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<CacheOptions>();
  app.description("show, check, convert and merge calibration caches");
  app.require_subcommand(1);

  CLI::App* show = app.add_subcommand("show", "print a cache: tensors, amax, scale, provenance");
  show->add_option("cache", o->show_file, "cache file (any format)")->required();
  show->add_flag("--json", o->show_json, "print JSON");

  CLI::App* check =
      app.add_subcommand("check", "check a cache against a model (exit 3 if it does not fit)");
  check->add_option("cache", o->check_cache, "cache file (any format)")->required();
  check->add_option("model", o->check_model, "ONNX model")->required();
  check->add_flag("--all-tensors", o->check_all_tensors,
                  "expect every float activation (a cache made with calibrate --all-tensors)");

  CLI::App* convert =
      app.add_subcommand("convert", "convert between JSON, TensorRT and ONNX Runtime formats");
  CLI::Option* convert_in = convert->add_option("cache", o->convert_in, "cache file (any format)");
  convert->add_option("--from-qdq", o->convert_from_qdq,
                      "read the activation scales of a Q/DQ model (e.g. exported from QAT) "
                      "instead of a cache")
      ->excludes(convert_in);
  add_output_options(*convert, o->convert_out);
  add_method_choice(*convert, o->convert_method, "recompute amax with this method");

  CLI::App* merge = app.add_subcommand("merge", "merge caches calibrated on different data shards");
  merge->add_option("shards", o->shards, "shard caches (ptqkit JSON)")->required()->expected(1, -1);
  add_output_options(*merge, o->merge_out);
  add_method_choice(*merge, o->merge_method, "method of the merged table (default: the shards')");
  merge->add_flag("--force", o->force, "merge shards of different model hashes");
  merge->add_flag("--drop-histograms", o->drop_histograms,
                  "merge shards binned over different ranges as a min-max table");

  for (CLI::App* sub : {show, check, convert, merge}) sub->fallthrough();  // --quiet after the sub
  return [o, &global, show, check, convert, merge]() -> Status {
    if (show->parsed()) return show_command(*o, global);
    if (check->parsed()) return check_command(*o, global);
    if (convert->parsed()) return convert_command(*o, global);
    if (merge->parsed()) return merge_command(*o, global);
    return usage_error("ptq cache: give show, check, convert or merge");
  };
}

}  // namespace ptq::apps
