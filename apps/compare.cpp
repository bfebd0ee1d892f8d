// `ptq compare MODEL_A MODEL_B --data SRC [--backend …] [--batch N] [--json]`: how closely
// MODEL_B's outputs follow MODEL_A's (A is the reference, typically the float model): per
// output cosine similarity, SQNR in dB (inf when identical), max abs difference and relative
// L2 error; the top-1 agreement (argmax of the first output) for classifiers. Both models run
// through the same executor kind, batch by batch; only running sums are kept.
//
// Outputs are matched by name when B has every output name of A, else by position (same
// count required).
#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "progress.h"
#include "ptq/data.h"
#include "ptq/metrics.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::apps {

namespace {

struct CompareOptions {
  std::string model_a;
  std::string model_b;
  DataOptions data;
  BackendOptions backend;
  int threads = 0;
  bool json = false;
};

// JSON has no infinity or NaN: such metrics are written as the strings "inf", "-inf", "nan".
nlohmann::ordered_json json_metric(double v) {
  if (std::isfinite(v)) return v;
  return metrics::format_metric(v, 0);
}

void print_result(const metrics::OutputComparison& t, const CompareOptions& o) {
  if (o.json) {
    nlohmann::ordered_json j;
    j["model_a"] = o.model_a;
    j["model_b"] = o.model_b;
    j["samples"] = t.samples();
    j["outputs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < t.outputs().size(); ++i) {
      const metrics::Agreement& m = t.outputs()[i];
      j["outputs"].push_back({{"name", t.names()[i]},
                              {"cosine", json_metric(m.cosine())},
                              {"sqnr_db", json_metric(m.sqnr_db())},
                              {"max_abs_diff", json_metric(m.max_abs_diff())},
                              {"rel_l2", json_metric(m.rel_l2())}});
    }
    if (t.classifier() && t.samples() > 0) {
      j["top1_agreement"] = static_cast<double>(t.top1_same()) / static_cast<double>(t.samples());
      j["top1_same"] = t.top1_same();
    } else {
      j["top1_agreement"] = nullptr;
    }
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{} (A) vs {} (B): {} samples\n", o.model_a, o.model_b, t.samples());
  size_t width = 6;
  for (const std::string& name : t.names()) width = std::max(width, name.size());
  fmt::print("  {:<{}}  {:>10}  {:>10}  {:>12}\n", "output", width, "cosine", "SQNR (dB)",
             "max abs diff");
  for (size_t i = 0; i < t.outputs().size(); ++i) {
    const metrics::Agreement& m = t.outputs()[i];
    fmt::print("  {:<{}}  {:>10}  {:>10}  {:>12}\n", t.names()[i], width,
               metrics::format_metric(m.cosine(), 6), metrics::format_metric(m.sqnr_db(), 2),
               fmt::format("{:.6g}", m.max_abs_diff()));
  }
  if (t.classifier() && t.samples() > 0) {
    fmt::print("  top-1 agreement: {:.2f}% ({}/{})\n",
               100.0 * static_cast<double>(t.top1_same()) / static_cast<double>(t.samples()),
               t.top1_same(), t.samples());
  }
}

Status compare_command(CompareOptions& o, const GlobalOptions& global) {
  const int threads = o.threads > 0 ? o.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  PTQ_ASSIGN_OR_RETURN(ir::Model a, onnx::load_model(o.model_a));
  PTQ_ASSIGN_OR_RETURN(ir::Model b, onnx::load_model(o.model_b));
  PTQ_ASSIGN_OR_RETURN(metrics::OutputComparison tally,
                       metrics::OutputComparison::create(a.graph, b.graph, o.model_a, o.model_b));
  // One dataset per model: each binds the source to its own graph's inputs and dtypes.
  PTQ_ASSIGN_OR_RETURN(data::Dataset da, open_dataset(o.data, a.graph));
  PTQ_ASSIGN_OR_RETURN(data::Dataset db, open_dataset(o.data, b.graph));
  if (da.num_batches() != db.num_batches() || da.batch_size() != db.batch_size()) {
    return invalid_input("{} and {} take different batch sizes ({} vs {}); give --batch", o.model_a,
                         o.model_b, da.batch_size(), db.batch_size());
  }
  PTQ_ASSIGN_OR_RETURN(Engine ea, make_engine(a, o.backend, threads, global.quiet));
  PTQ_ASSIGN_OR_RETURN(Engine eb, make_engine(b, o.backend, threads, global.quiet));

  ProgressLine line("compare", "samples", da.size(), global.quiet);
  for (int64_t i = 0; i < da.num_batches(); ++i) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in_a, da.batch(i));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out_a, ea.executor->run(in_a));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in_b, db.batch(i));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out_b, eb.executor->run(in_b));
    PTQ_RETURN_IF_ERROR(tally.add(out_a, out_b));
    line.update(tally.samples());
  }
  line.finish();
  print_result(tally, o);
  return Status::ok();
}

}  // namespace

Runner register_compare(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<CompareOptions>();
  app.description(
      "compare two models' outputs (A the reference): cosine, SQNR (dB), max abs diff per "
      "output; top-1 agreement");
  app.add_option("model_a", o->model_a, "reference model (e.g. the float model)")->required();
  app.add_option("model_b", o->model_b, "model compared with it (e.g. the Q/DQ model)")->required();
  add_data_options(app, o->data, {.default_batch = 16, .finite_only = true});
  add_backend_options(app, o->backend);
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  app.add_flag("--json", o->json, "print the result as JSON");
  return [o, &global]() { return compare_command(*o, global); };
}

}  // namespace ptq::apps
