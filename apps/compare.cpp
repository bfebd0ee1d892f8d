// `ptq compare MODEL_A MODEL_B --data SRC [--backend …] [--batch N] [--per-tensor [--jump-db X]]
//  [--json] [--min-sqnr DB] [--min-cosine C]`: how closely MODEL_B's outputs follow MODEL_A's (A
// is the reference, typically the float model): per output cosine similarity, SQNR in dB (inf
// when identical), max abs difference and relative L2 error; the top-1 agreement for
// classifiers; with --per-tensor the same for every tensor both compute, in graph order, with
// the error's jumps marked. The gate options make the exit code fail (3) when an output falls
// below them, after the result is printed. The work is compare::compare (include/ptq/compare.h,
// docs/COMPARE.md).
#include <algorithm>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "progress.h"
#include "ptq/compare.h"
#include "ptq/data.h"
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
  bool per_tensor = false;
  double jump_db = 10.0;
  std::optional<double> min_sqnr;
  std::optional<double> min_cosine;
};

Status compare_command(CompareOptions& o, const GlobalOptions& global) {
  if (o.per_tensor && o.backend.backend != "cpu") {
    return usage_error("--per-tensor reads every tensor on the host: use --backend cpu");
  }
  const int threads = runtime::thread_count(o.threads);
  PTQ_ASSIGN_OR_RETURN(ir::Model a, onnx::load_model(o.model_a));
  PTQ_ASSIGN_OR_RETURN(ir::Model b, onnx::load_model(o.model_b));
  // Before the data is bound to B: a clearer message than the binding's.
  PTQ_RETURN_IF_ERROR(compare::check_same_inputs(a, o.model_a, b, o.model_b));
  // One dataset per model: each binds the source to its own graph's inputs and dtypes.
  PTQ_ASSIGN_OR_RETURN(data::Dataset da, open_dataset(o.data, a.graph));
  PTQ_ASSIGN_OR_RETURN(data::Dataset db, open_dataset(o.data, b.graph));
  PTQ_ASSIGN_OR_RETURN(const runtime::EngineOptions eo, engine_options(o.backend, global.quiet));
  PTQ_ASSIGN_OR_RETURN(runtime::Engine ea, runtime::make_engine(a, eo, threads));
  PTQ_ASSIGN_OR_RETURN(runtime::Engine eb, runtime::make_engine(b, eo, threads));

  ProgressLine line("compare", "samples", da.size(), global.quiet);
  compare::Options options;
  options.per_tensor = o.per_tensor;
  options.jump_db = o.jump_db;
  options.progress = [&line](int64_t samples) { line.update(samples); };
  PTQ_ASSIGN_OR_RETURN(compare::Result r,
                       compare::compare({a, *ea.executor, da, o.model_a},
                                        {b, *eb.executor, db, o.model_b}, options));
  line.finish();
  fmt::print("{}", o.json ? compare::result_json(r) + "\n" : compare::result_text(r));
  return compare::check_gate(r, {o.min_sqnr, o.min_cosine});
}

}  // namespace

Runner register_compare(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<CompareOptions>();
  app.description(
      "compare two models' outputs (A the reference): cosine, SQNR (dB), max abs diff per "
      "output; top-1 agreement; with --per-tensor every tensor both compute");
  app.add_option("model_a", o->model_a, "reference model (e.g. the float model)")->required();
  app.add_option("model_b", o->model_b, "model compared with it (e.g. the Q/DQ model)")->required();
  add_data_options(app, o->data, {.default_batch = 16, .finite_only = true});
  add_backend_options(app, o->backend);
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  app.add_flag("--json", o->json, "print the result as JSON (on stdout)");
  app.add_flag("--per-tensor", o->per_tensor,
               "also compare every tensor both models compute (B's dequantized value where B "
               "quantizes it), in graph order, marking where the error jumps (CPU only; holds "
               "one batch of A's tensors)");
  app.add_option("--jump-db", o->jump_db,
                 "--per-tensor marks a tensor whose SQNR is more than this many dB below "
                 "min(40 dB, its inputs' SQNR)")
      ->default_val(10.0)
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-sqnr", o->min_sqnr,
                 "exit 3 (after printing) when an output's SQNR is below DB")
      ->type_name("DB");
  app.add_option("--min-cosine", o->min_cosine,
                 "exit 3 (after printing) when an output's cosine similarity is below C")
      ->type_name("C");
  return [o, &global]() { return compare_command(*o, global); };
}

}  // namespace ptq::apps
