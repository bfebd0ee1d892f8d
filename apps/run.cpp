// `ptq run MODEL --data SRC [--backend cpu|vulkan] [--threads N] [--batch N] -o OUTDIR`: runs
// the model over every sample and writes each output as OUTDIR/<output name>.npy, samples
// stacked on the first axis. Output names that are not plain file names ('/', ':', …) have
// those characters replaced by '_'.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "backend_options.h"
#include "command.h"
#include "data_options.h"
#include "progress.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::apps {

namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model;
  BackendOptions backend;  // --backend, --device, --strict (apps/backend_options.h)
  int threads = 0;  // 0: all hardware threads
  std::string out_dir;
  DataOptions data;
};

std::string file_name_for(const std::string& output) {
  std::string s = output;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return s.empty() || s == "." || s == ".." ? "_" + s : s;
}

// Appends one batch of outputs, creating the writers from the first batch's shapes.
Status write_batch(const runtime::NamedTensors& outputs, int64_t batch, int64_t rows,
                   const fs::path& dir, std::map<std::string, std::unique_ptr<data::NpyWriter>>& writers) {
  for (const auto& [name, t] : outputs) {
    if (t.rank() == 0 || t.dim(0) != batch) {
      return invalid_input("output '{}' has shape {}: its first dim is not the batch ({})", name,
                           ir::shape_str(t.shape()), batch);
    }
    auto it = writers.find(name);
    if (it == writers.end()) {
      const ir::Shape row(t.shape().begin() + 1, t.shape().end());
      PTQ_ASSIGN_OR_RETURN(auto w, data::NpyWriter::create(dir / (file_name_for(name) + ".npy"),
                                                           t.dtype(), row, rows));
      it = writers.emplace(name, std::move(w)).first;
    }
    PTQ_RETURN_IF_ERROR(it->second->append(t));
  }
  return Status::ok();
}

Status run_command(RunOptions& o, const GlobalOptions& global) {
  const int threads = o.threads > 0 ? o.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(o.data, model.graph));
  PTQ_ASSIGN_OR_RETURN(Engine engine, make_engine(model, o.backend, threads, global.quiet));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return runtime_error("cannot create output folder {}: {}", o.out_dir, ec.message());
  ProgressLine progress("run", "samples", dataset.size(), global.quiet);
  int64_t done = 0;
  std::map<std::string, std::unique_ptr<data::NpyWriter>> writers;
  const int64_t batches = dataset.num_batches();
  for (int64_t b = 0; b < batches; ++b) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors inputs, dataset.batch(b));
    const int64_t n = inputs.empty() ? 0 : inputs[0].second.dim(0);
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors outputs, engine.executor->run(inputs));
    PTQ_RETURN_IF_ERROR(write_batch(outputs, n, dataset.size(), o.out_dir, writers));
    done += n;
    progress.update(done);
  }
  progress.finish();
  for (auto& [name, w] : writers) PTQ_RETURN_IF_ERROR(w->commit());
  return Status::ok();
}

}  // namespace

Runner register_run(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<RunOptions>();
  app.description("run a model over samples; write each output as OUTDIR/<output name>.npy");
  app.add_option("model", o->model, "ONNX model")->required();
  add_data_options(app, o->data, {.finite_only = true});
  add_backend_options(app, o->backend);
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  app.add_option("-o,--out", o->out_dir, "output folder")->required();
  return [o, &global]() { return run_command(*o, global); };
}

}  // namespace ptq::apps
