// `ptq run MODEL --data SRC [--backend cpu|vulkan] [--threads N] [--batch N] -o OUTDIR`: runs
// the model over every sample and writes each output as OUTDIR/<output name>.npy, gathered
// along the axis its batch maps to (data::output_batch_axis), or, for an output no axis of
// which follows the batch, one file per batch, OUTDIR/<output name>/<k>.npy. Data of several
// shapes (batches grouped by shape) writes each sample's output as its own file,
// OUTDIR/<output name>/<i>.npy, i the sample's index in the source. Output names that are not
// plain file names ('/', ':', …) have those characters replaced by '_'.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

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

// One output's file(s): streamed rows on axis 0; held parts joined on another axis at the end
// (outputs of sequence-first models); one file per batch; or one file per sample.
struct OutputSink {
  int64_t axis = data::kNoBatchAxis;
  bool per_sample = false;
  fs::path path;  // OUT/<name>.npy, or the folder OUT/<name> of per-batch or per-sample files
  std::unique_ptr<data::NpyWriter> rows;
  std::vector<ir::Tensor> parts;
};

// Joins tensors along `axis` (their other dims agree: each was checked against the batch).
ir::Tensor concat(const std::vector<ir::Tensor>& parts, int64_t axis) {
  ir::Shape shape = parts.front().shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const ir::Tensor& p : parts) shape[static_cast<size_t>(axis)] += p.dim(axis);
  ir::Tensor out(parts.front().dtype(), shape);
  const int64_t outer = ir::num_elements(ir::Shape(shape.begin(), shape.begin() + axis));
  if (outer == 0) return out;
  std::byte* dst = out.data<std::byte>();
  for (int64_t o = 0; o < outer; ++o) {
    for (const ir::Tensor& p : parts) {
      const size_t block = p.nbytes() / static_cast<size_t>(outer);
      std::memcpy(dst, static_cast<const std::byte*>(p.raw()) + static_cast<size_t>(o) * block,
                  block);
      dst += block;
    }
  }
  return out;
}

// Sample k of a batch of n along `axis`.
ir::Tensor slice(const ir::Tensor& t, int64_t axis, int64_t k, int64_t n) {
  ir::Shape shape = t.shape();
  shape.erase(shape.begin() + axis);
  ir::Tensor out(t.dtype(), shape);
  const int64_t outer = ir::num_elements(ir::Shape(shape.begin(), shape.begin() + axis));
  if (outer == 0 || out.nbytes() == 0) return out;
  const size_t block = out.nbytes() / static_cast<size_t>(outer);
  const auto* src = static_cast<const std::byte*>(t.raw());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(out.data<std::byte>() + static_cast<size_t>(o) * block,
                src + static_cast<size_t>(o * n + k) * block, block);
  }
  return out;
}

Status open_sink(const ir::Graph& graph, const data::Dataset& ds, const std::string& name,
                 const ir::Tensor& t, int64_t n, const fs::path& dir, OutputSink& sink) {
  sink.axis = data::output_batch_axis(graph, ds.inputs(), name, t.shape(), n);
  sink.per_sample = sink.axis != data::kNoBatchAxis && !ds.same_shapes();
  if (sink.axis == data::kNoBatchAxis || sink.per_sample) {
    sink.path = dir / file_name_for(name);
    std::error_code ec;
    fs::create_directories(sink.path, ec);
    if (ec) return runtime_error("cannot create {}: {}", sink.path.string(), ec.message());
    return Status::ok();
  }
  sink.path = dir / (file_name_for(name) + ".npy");
  if (sink.axis != 0) return Status::ok();
  const ir::Shape row(t.shape().begin() + 1, t.shape().end());
  PTQ_ASSIGN_OR_RETURN(sink.rows, data::NpyWriter::create(sink.path, t.dtype(), row, ds.size()));
  return Status::ok();
}

// Writes batch b's outputs (n samples), opening each output's sink at the first batch.
Status write_batch(const ir::Graph& graph, const data::Dataset& ds,
                   const runtime::NamedTensors& outputs, int64_t b, int64_t n, const fs::path& dir,
                   std::map<std::string, OutputSink>& sinks) {
  for (const auto& [name, t] : outputs) {
    auto [it, fresh] = sinks.try_emplace(name);
    OutputSink& sink = it->second;
    if (fresh) PTQ_RETURN_IF_ERROR(open_sink(graph, ds, name, t, n, dir, sink));
    if (sink.axis == data::kNoBatchAxis) {
      PTQ_RETURN_IF_ERROR(data::save_npy(sink.path / fmt::format("{}.npy", b), t));
      continue;
    }
    if (sink.axis >= t.rank() || t.dim(sink.axis) != n) {
      return invalid_input("output '{}' has shape {}: its dim {} is not the batch ({})", name,
                           ir::shape_str(t.shape()), sink.axis, n);
    }
    if (sink.per_sample) {
      const int64_t first = ds.batch_first(b);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t index = ds.order()[static_cast<size_t>(first + k)];
        PTQ_RETURN_IF_ERROR(
            data::save_npy(sink.path / fmt::format("{}.npy", index), slice(t, sink.axis, k, n)));
      }
    } else if (sink.rows) {
      PTQ_RETURN_IF_ERROR(sink.rows->append(t));
    } else {
      sink.parts.push_back(t);
    }
  }
  return Status::ok();
}

Status commit(OutputSink& sink) {
  if (sink.rows) return sink.rows->commit();
  if (sink.parts.empty()) return Status::ok();
  return data::save_npy(sink.path, concat(sink.parts, sink.axis));
}

Status run_command(RunOptions& o, const GlobalOptions& global) {
  const int threads = runtime::thread_count(o.threads);
  PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o.model));
  PTQ_ASSIGN_OR_RETURN(data::Dataset dataset, open_dataset(o.data, model.graph));
  PTQ_ASSIGN_OR_RETURN(const runtime::EngineOptions eo, engine_options(o.backend, global.quiet));
  PTQ_ASSIGN_OR_RETURN(runtime::Engine engine, runtime::make_engine(model, eo, threads));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return runtime_error("cannot create output folder {}: {}", o.out_dir, ec.message());
  ProgressLine progress("run", "samples", dataset.size(), global.quiet);
  int64_t done = 0;
  std::map<std::string, OutputSink> sinks;
  const int64_t batches = dataset.num_batches();
  for (int64_t b = 0; b < batches; ++b) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors inputs, dataset.batch(b));
    const int64_t n = dataset.batch_samples(b);
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors outputs, engine.executor->run(inputs));
    PTQ_RETURN_IF_ERROR(write_batch(model.graph, dataset, outputs, b, n, o.out_dir, sinks));
    done += n;
    progress.update(done);
  }
  progress.finish();
  for (auto& [name, sink] : sinks) PTQ_RETURN_IF_ERROR(commit(sink));
  return Status::ok();
}

}  // namespace

Runner register_run(CLI::App& app, GlobalOptions& global) {
  auto o = std::make_shared<RunOptions>();
  app.description(
      "run a model over samples; write each output as OUTDIR/<output name>.npy (data of "
      "several shapes: OUTDIR/<output name>/<sample index>.npy)");
  app.add_option("model", o->model, "ONNX model")->required();
  add_data_options(app, o->data, {.finite_only = true});
  add_backend_options(app, o->backend);
  app.add_option("--threads", o->threads, "CPU threads (default: all)")->check(at_least(0));
  app.add_option("-o,--out", o->out_dir, "output folder")->required();
  return [o, &global]() { return run_command(*o, global); };
}

}  // namespace ptq::apps
