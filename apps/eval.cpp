// `ptq eval MODEL --data SRC --labels LABELS.npy [--backend …] [--batch N] [--json]`: top-1 and
// top-5 accuracy of a classifier, from the argmax of its first output. The model runs through
// the same executor as everything else (a Q/DQ model's QuantizeLinear/DequantizeLinear are ops
// of the runtime), batch by batch: memory holds one batch of outputs plus the labels.
//
// Labels: an integer .npy of shape [N] or [N, 1], one per sample of the source (N must equal
// the number of samples the source holds; with --samples/--shuffle the labels follow the
// samples' delivery order).
#include <algorithm>
#include <memory>

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

struct EvalOptions {
  std::string model;
  std::string labels;
  DataOptions data;
  BackendOptions backend;
  int threads = 0;
  bool json = false;
};

// The labels as int64, one per source sample.
Expected<std::vector<int64_t>> read_labels(const std::string& path, int64_t samples) {
  PTQ_ASSIGN_OR_RETURN(ir::Tensor t, data::load_npy(path));
  if (!ir::is_integer(t.dtype())) {
    return invalid_input("{}: labels must be integers (int64 or int32), not {}", path,
                         ir::dtype_name(t.dtype()));
  }
  if (t.rank() != 1 && !(t.rank() == 2 && t.dim(1) == 1)) {
    return invalid_input("{}: labels must have shape [N] or [N, 1], not {}", path,
                         ir::shape_str(t.shape()));
  }
  if (t.dim(0) != samples) {
    return invalid_input("{}: {} labels for {} samples in the data", path, t.dim(0), samples);
  }
  std::vector<int64_t> out(static_cast<size_t>(t.dim(0)));
  for (int64_t i = 0; i < t.dim(0); ++i) out[static_cast<size_t>(i)] = t.as_int64(i);
  return out;
}

Status eval_command(EvalOptions& o, const GlobalOptions& global) {
  const int threads = runtime::thread_count(o.threads);
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  if (model.graph.outputs.empty()) return invalid_input("{} has no outputs", o.model);
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(o.data, model.graph));
  PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> labels, read_labels(o.labels, dataset.source_size()));
  PTQ_ASSIGN_OR_RETURN(const runtime::EngineOptions eo, engine_options(o.backend, global.quiet));
  PTQ_ASSIGN_OR_RETURN(runtime::Engine engine, runtime::make_engine(model, eo, threads));

  metrics::Accuracy acc({1, 5});
  const std::vector<int64_t>& order = dataset.order();
  ProgressLine line("eval", "samples", dataset.size(), global.quiet);
  int64_t done = 0;
  for (int64_t b = 0; b < dataset.num_batches(); ++b) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors inputs, dataset.batch(b));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors outputs, engine.executor->run(inputs));
    const ir::Tensor& scores = outputs.front().second;
    const int64_t n = scores.rank() > 0 ? scores.dim(0) : 0;
    std::vector<int64_t> batch_labels;
    for (int64_t i = 0; i < n && done + i < static_cast<int64_t>(order.size()); ++i) {
      batch_labels.push_back(labels[static_cast<size_t>(order[static_cast<size_t>(done + i)])]);
    }
    if (Status s = acc.add(scores, batch_labels); !s.is_ok()) {
      return invalid_input("{}: output '{}': {}", o.model, outputs.front().first, s.message());
    }
    done += n;
    line.update(done);
  }
  line.finish();

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["output"] = model.graph.outputs.front().name;
    j["samples"] = acc.count();
    j["top1"] = acc.accuracy(0);
    j["top1_correct"] = acc.hits(0);
    j["top5"] = acc.accuracy(1);
    j["top5_correct"] = acc.hits(1);
    fmt::print("{}\n", j.dump(2));
    return Status::ok();
  }
  fmt::print("{}: {} samples (output '{}')\n", o.model, acc.count(),
             model.graph.outputs.front().name);
  fmt::print("  top-1: {:6.2f}% ({}/{})\n", 100.0 * acc.accuracy(0), acc.hits(0), acc.count());
  fmt::print("  top-5: {:6.2f}% ({}/{})\n", 100.0 * acc.accuracy(1), acc.hits(1), acc.count());
  return Status::ok();
}

}  // namespace

Runner register_eval(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<EvalOptions>();
  app.description("top-1 and top-5 accuracy of a classifier (argmax of its first output)");
  app.add_option("model", o->model, "ONNX model (float or Q/DQ)")->required();
  add_data_options(app, o->data, {.default_batch = 16, .finite_only = true});
  app.add_option("--labels", o->labels,
                 "integer .npy of shape [N] (or [N,1]), one label per sample")
      ->required();
  add_backend_options(app, o->backend);
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  app.add_flag("--json", o->json, "print the result as JSON");
  return [o, &global]() { return eval_command(*o, global); };
}

}  // namespace ptq::apps
