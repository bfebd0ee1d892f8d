// `ptq calibrate MODEL --data SRC [--method M] [--percentile P]
//  [--samples N] [--batch N] [--backend cpu|vulkan] [--threads N] [--workers N] -o CACHE.json
//  [--trt-cache CACHE.cache] [--trt-version 8.6.1] [--trt-algo NAME] [--all-tensors]
//  [--ignore-nonfinite] [--seed S --shuffle] [--ranges-only | --ranges RANGES.json]`
// computes activation ranges and writes the ptqkit JSON cache (and the TensorRT text cache).
// --ranges-only and --ranges are the two phases of the sharded flow (docs/CACHE_FORMAT.md).
//
// The date recorded in the cache is the current time, or SOURCE_DATE_EPOCH when set (the
// reproducible-builds convention), so runs can be compared byte for byte.
#include <algorithm>
#include <ctime>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "json_output.h"
#include "method_options.h"
#include "phase_times.h"
#include "progress.h"
#include "run_date.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/onnx.h"

namespace ptq::apps {

namespace {

struct CalibrateOptions {
  std::string model;
  DataOptions data;
  BackendOptions backend;
  calib::MethodConfig method;
  int threads = 0;  // 0: all hardware threads
  int workers = 0;  // 0: make_calibration_engines chooses
  std::string out;
  std::string trt_cache;
  std::string trt_version = "8.6.1";
  std::string trt_algo;
  bool all_tensors = false;
  bool ignore_nonfinite = false;
  bool ranges_only = false;
  std::string ranges;
  bool json = false;
};

void report_nonfinite(const calib::CalibrationTable& table) {
  int64_t total = 0;
  std::vector<std::string> where;
  for (const auto& [name, r] : table.tensors) {
    if (r.nonfinite == 0) continue;
    total += r.nonfinite;
    where.push_back(fmt::format("{} ({})", name, r.nonfinite));
  }
  fmt::print(stderr, "ptq calibrate: --ignore-nonfinite skipped {} non-finite value(s){}{}\n",
             total, where.empty() ? "" : " in ", fmt::join(where, ", "));
}

void print_report(const CalibrateOptions& o, const calib::CalibrationTable& table, int64_t samples,
                  const PhaseTimes& times) {
  Json written = {{"cache", o.out}};
  if (!o.trt_cache.empty()) written["trt_cache"] = o.trt_cache;
  print_json({{"command", "calibrate"},
              {"model", o.model},
              {"written", std::move(written)},
              {"method", table.method},
              {"samples", samples},
              {"tensors", calibrated_tensors_json(table)},
              {"seconds", seconds_json(times)}});
}

Status calibrate_command(CalibrateOptions& o, const GlobalOptions& global) {
  calibration::CalibrationOptions co;
  co.method = o.method;
  PTQ_RETURN_IF_ERROR(co.method.validate());
  if (o.ranges_only && !o.ranges.empty()) {
    return usage_error("--ranges-only and --ranges are the two phases of a sharded run: give one");
  }
  PTQ_ASSIGN_OR_RETURN(calib::TrtVersion trt_version, calib::parse_trt_version(o.trt_version));
  const calib::TrtWriteOptions trt_options{trt_version, o.trt_algo};
  if (!o.trt_cache.empty()) {  // refuse a cache header TensorRT would reject before running
    calib::CalibrationTable probe;
    probe.method = o.ranges_only ? "minmax" : o.method.name;
    PTQ_RETURN_IF_ERROR(calib::trt_cache_string(probe, trt_options).status());
  }
  const int threads = runtime::thread_count(o.threads);
  PTQ_ASSIGN_OR_RETURN(co.date, run_date());

  PTQ_ASSIGN_OR_RETURN(runtime::EngineOptions eo, engine_options(o.backend, global.quiet));
  PTQ_RETURN_IF_ERROR(runtime::check_workers(eo, o.workers));
  PTQ_RETURN_IF_ERROR(runtime::pick_rank_device(eo, *global.comm));
  PhaseTimes times;
  runtime::EarlyDevice early(eo);  // opens while the model loads
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  times.mark("load model");
  std::optional<calib::CalibrationTable> common;
  if (!o.ranges.empty()) {
    calib::Warnings warnings;
    PTQ_ASSIGN_OR_RETURN(common, calib::read_cache(o.ranges, &warnings));
    for (const std::string& w : warnings) log::warn("{}", w);
    co.common_ranges = &*common;
  }
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(o.data, model.graph));
  times.mark("open data");
  PTQ_ASSIGN_OR_RETURN(
      runtime::CalibrationEngines engines,
      runtime::make_calibration_engines(model, eo, threads, o.workers, &early));
  times.mark("start backend");

  co.all_tensors = o.all_tensors;
  co.ignore_nonfinite = o.ignore_nonfinite;
  co.ranges_only = o.ranges_only;
  co.threads = threads;
  co.backend = o.backend.backend;
  co.comm = global.comm;
  ProgressLine line("calibrate", "samples", dataset.size(), global.quiet);
  int stage = 0;
  co.progress = [&](const calibration::Progress& p) -> Status {
    if (p.pass != stage) {
      stage = p.pass;
      line.set_stage(fmt::format("pass {}/{}", p.pass, p.passes), p.samples_total);
    }
    line.update(p.samples_done);
    return Status::ok();
  };
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable table,
                       calibration::calibrate(model, engines.executors(), dataset, co));
  line.finish();
  times.mark("calibrate");
  if (global.comm->rank() != 0) return Status::ok();  // rank 0 writes what the ranks measured
  if (o.ignore_nonfinite && !global.quiet) report_nonfinite(table);

  PTQ_RETURN_IF_ERROR(calib::write_cache(table, o.out, {.format = calib::CacheFormat::kJson}));
  if (!o.trt_cache.empty()) {
    calib::WriteOptions wo{.format = calib::CacheFormat::kTensorRT};
    wo.trt = trt_options;
    PTQ_RETURN_IF_ERROR(calib::write_cache(table, o.trt_cache, wo));
  }
  times.mark("write caches");
  engines = runtime::CalibrationEngines{};
  times.mark("release backend");
  if (o.json) print_report(o, table, dataset.size(), times);
  return Status::ok();
}

}  // namespace

Runner register_calibrate(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<CalibrateOptions>();
  app.description("compute activation ranges; write the ptqkit JSON cache (and a TensorRT cache)");
  app.add_option("model", o->model, "ONNX model (float)")->required();
  add_data_options(app, o->data, {.default_batch = 16});
  add_backend_options(app, o->backend, true);
  add_method_options(app, o->method, {});
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  add_workers_option(app, o->workers);
  app.add_option("-o,--out", o->out, "the ptqkit JSON cache to write")->required();
  app.add_option("--trt-cache", o->trt_cache, "also write a TensorRT text calibration cache");
  app.add_option("--trt-version", o->trt_version, "TensorRT version of the cache header")
      ->capture_default_str();
  app.add_option("--trt-algo", o->trt_algo, trt_algo_help());
  app.add_flag("--all-tensors", o->all_tensors,
               "calibrate every float activation, not only those the planner may quantize");
  app.add_flag("--ignore-nonfinite", o->ignore_nonfinite,
               "count and skip NaN/Inf activations instead of failing");
  app.add_flag("--ranges-only", o->ranges_only,
               "sharded phase 1: run the range pass only and write a ranges cache");
  app.add_option("--ranges", o->ranges,
                 "sharded phase 2: bin histograms over this merged ranges cache (ptq cache merge)");
  app.add_flag("--json", o->json,
               "print what was written, the calibrated tensors and the phase times as JSON on "
               "stdout");
  return [o, &global]() { return calibrate_command(*o, global); };
}

}  // namespace ptq::apps
