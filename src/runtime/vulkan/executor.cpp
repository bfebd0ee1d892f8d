// The Vulkan executor. For each new set of input shapes (and observed values) it learns every
// value's shape and the values computable from shapes alone (from the declared value types
// when they settle them, else by running the CPU executor once), then builds a Program (program.h)
// and replays it for every batch: inputs uploaded, the recorded command buffers submitted, CPU
// fallback steps run between them, statistics and outputs read back.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "context.h"
#include "declared_shapes.h"
#include "host_values.h"
#include "program.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/runtime/task_pool.h"
#include "ptq/vulkan.h"
#include "statistics_vulkan.h"
#include "timing.h"

namespace ptq::vulkan {

namespace {

// Records what the CPU shape pass produces: every value's type and shape, and host copies of
// the static values that are not initializers.
class ShapeRecorder final : public runtime::Observer {
 public:
  explicit ShapeRecorder(const std::unordered_set<std::string>& statics) : statics_(statics) {}
  std::vector<std::string> wanted(const ir::Graph& graph) override {
    return every_value_name(graph);
  }
  Status observe(const runtime::ObservedTensor& t) override {
    facts[t.name] = ValueFacts{t.dtype, t.shape, true};
    if (statics_.count(t.name) && t.host != nullptr && !folded.count(t.name)) {
      folded.emplace(t.name, ir::owned_copy(*t.host));
    }
    return Status::ok();
  }
  std::unordered_map<std::string, ValueFacts> facts;
  std::unordered_map<std::string, ir::Tensor> folded;

 private:
  const std::unordered_set<std::string>& statics_;
};

// A batch of images is tens of MB: one thread copying it into staging memory takes longer
// than the GPU takes to run a ResNet on it.
void parallel_copy(void* dst, const void* src, size_t bytes, int threads) {
  constexpr size_t kChunk = size_t{1} << 20;
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  if (threads <= 1 || chunks < 4) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto copy = [&](int64_t c) {
    const size_t at = static_cast<size_t>(c) * kChunk;
    std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at,
                std::min(kChunk, bytes - at));
  };
  runtime::run_tasks(threads, chunks, copy);
}

// The observed values of `blk` whose statistics the GPU computes (float32 on the device).
std::vector<std::pair<std::string, DeviceTensor>> device_statistics(const Program& prog,
                                                                    const Block& blk) {
  std::vector<std::pair<std::string, DeviceTensor>> tensors;
  for (int id : blk.observed) {
    const Value& v = prog.values[static_cast<size_t>(id)];
    if (v.stats_slot >= 0) tensors.emplace_back(v.name, prog.device_tensor(id));
  }
  return tensors;
}

class VulkanExecutor final : public runtime::Executor {
 public:
  VulkanExecutor(const ir::Model& model, VulkanOptions options, std::unique_ptr<Context> ctx,
                 std::unique_ptr<runtime::Backend> cpu, std::unordered_set<std::string> statics)
      : model_(model),
        options_(std::move(options)),
        ctx_(std::move(ctx)),
        cpu_(std::move(cpu)),
        statics_(std::move(statics)),
        histograms_(*ctx_) {}

  ~VulkanExecutor() override {
    const auto t0 = std::chrono::steady_clock::now();
    vkDeviceWaitIdle(ctx_->device());
    for (auto& [key, prog] : programs_) free_commands(*prog);
    programs_.clear();
    uploaded_.clear();
    if (ctx_->timing()) {
      fmt::print(stderr, "ptq: vulkan: programs and constants freed in {:.1f} ms\n", ms_since(t0));
    }
  }

  Expected<runtime::NamedTensors> run(const runtime::NamedTensors& inputs,
                                      std::span<runtime::Observer* const> observers) override;
  void forget_observers() override { wanted_.clear(); }
  runtime::RunStats last_run_stats() const override { return stats_; }

 private:
  Expected<ShapeFacts> shape_facts(const runtime::NamedTensors& inputs, std::string& why);
  Expected<Program*> program_for(const runtime::NamedTensors& inputs,
                                 const std::vector<std::string>& observed);
  Status execute(Program& prog, const runtime::NamedTensors& inputs,
                 std::span<runtime::Observer* const> observers, runtime::NamedTensors& outputs);
  Status show(Program& prog, int id, const runtime::TensorStatistics& stats, const ir::Tensor* host,
              std::span<runtime::Observer* const> observers);
  Status show_host(Program& prog, int id, const ir::Tensor& host,
                   std::span<runtime::Observer* const> observers);
  void free_commands(Program& prog) {
    if (prog.timer) report_timing(prog);
    for (Block& b : prog.blocks) ctx_->free_command_buffer(b.cmd);
  }
  void report_timing(const Program& prog) const {
    std::vector<std::string> labels, ops;
    for (const Step& st : prog.steps) {
      labels.push_back(model_.graph.nodes[st.node].label());
      ops.push_back(model_.graph.nodes[st.node].op_type);
    }
    prog.timer->report(labels, ops);
  }

  const ir::Model& model_;
  VulkanOptions options_;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<runtime::Backend> cpu_;
  std::unique_ptr<runtime::Executor> shapes_;  // the CPU shape pass, made when first needed
  std::unordered_set<std::string> statics_;
  HistogramRunner histograms_;
  std::unordered_map<std::string, Buffer> uploaded_;
  int64_t uploaded_bytes_ = 0;
  std::map<std::string, std::unique_ptr<Program>> programs_;
  std::deque<std::string> program_order_;
  std::unordered_map<const runtime::Observer*, std::vector<std::string>> wanted_;
  Status stats_error_;
  runtime::RunStats stats_;
};

// Shapes from the declared value types when they settle every value (no CPU run), else from
// running the batch once on the CPU executor; `why` says why the declared types did not do.
// VulkanOptions::cpu_shape_pass always runs the CPU pass (to compare the two).
Expected<ShapeFacts> VulkanExecutor::shape_facts(const runtime::NamedTensors& inputs,
                                                 std::string& why) {
  if (options_.cpu_shape_pass) {
    why = "asked for (VulkanOptions::cpu_shape_pass)";
  } else {
    PTQ_ASSIGN_OR_RETURN(
        std::optional<ShapeFacts> declared,
        declared_shape_facts(model_.graph, model_.opset(""), inputs, statics_, *cpu_, why));
    if (declared) return std::move(*declared);
  }
  if (!shapes_) {
    runtime::ExecutorOptions eo;
    eo.threads = std::max(options_.threads, 1);
    PTQ_ASSIGN_OR_RETURN(shapes_, runtime::Executor::create(model_, *cpu_, eo));
  }
  ShapeRecorder recorder(statics_);
  runtime::Observer* obs[] = {&recorder};
  shapes_->forget_observers();
  PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors ignored, shapes_->run(inputs, obs));
  (void)ignored;
  return ShapeFacts{std::move(recorder.facts), std::move(recorder.folded)};
}

Expected<Program*> VulkanExecutor::program_for(const runtime::NamedTensors& inputs,
                                               const std::vector<std::string>& observed) {
  std::string key;
  for (const auto& [name, t] : inputs) {
    key += fmt::format("{}:{}:{};", name, static_cast<int>(t.dtype()), ir::shape_str(t.shape()));
  }
  key += "|";
  for (const std::string& o : observed) key += o + "\n";
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second.get();

  const auto t0 = std::chrono::steady_clock::now();
  std::string why;
  PTQ_ASSIGN_OR_RETURN(ShapeFacts shapes, shape_facts(inputs, why));
  const double shape_ms = ms_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  BuildEnv env{*ctx_, model_, *cpu_, std::max(options_.threads, 1), options_.observe_budget_bytes,
               uploaded_, uploaded_bytes_, std::max(options_.conv_split_k, 0),
               options_.input_staging == VulkanOptions::InputStaging::kDevice};
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Program> prog,
                       build_program(env, shapes.facts, std::move(shapes.folded), observed));
  if (ctx_->timing()) {
    fmt::print(stderr, "ptq: vulkan: new program: shapes {:.1f} ms ({}), build {:.1f} ms\n",
               shape_ms, why.empty() ? "declared types" : "CPU shape pass: " + why, ms_since(t1));
  }
  if (!prog->fallback_nodes.empty()) {
    if (options_.strict) {
      free_commands(*prog);
      return runtime_error("vulkan (strict): {} node(s) have no Vulkan kernel: {}",
                           prog->fallback_nodes.size(), fmt::join(prog->fallback_nodes, "; "));
    }
    if (options_.on_fallback) options_.on_fallback(prog->fallback_nodes);
  }
  constexpr size_t kMaxPrograms = 4;
  if (programs_.size() >= kMaxPrograms) {
    auto old = programs_.find(program_order_.front());
    vkDeviceWaitIdle(ctx_->device());
    free_commands(*old->second);
    programs_.erase(old);
    program_order_.pop_front();
  }
  Program* out = prog.get();
  programs_.emplace(key, std::move(prog));
  program_order_.push_back(key);
  return out;
}

Status VulkanExecutor::show(Program& prog, int id, const runtime::TensorStatistics& stats,
                            const ir::Tensor* host, std::span<runtime::Observer* const> observers) {
  const Value& v = prog.values[static_cast<size_t>(id)];
  const ir::Node* producer =
      v.producer_step >= 0
          ? &model_.graph.nodes[prog.steps[static_cast<size_t>(v.producer_step)].node]
          : nullptr;
  runtime::ObservedTensor shown{v.name, producer, v.shape, v.dtype, host, stats};
  for (size_t i = 0; i < observers.size(); ++i) {
    const std::vector<std::string>& names = wanted_[observers[i]];
    if (std::binary_search(names.begin(), names.end(), v.name)) {
      PTQ_RETURN_IF_ERROR(observers[i]->observe(shown));
    }
  }
  return Status::ok();
}

Status VulkanExecutor::show_host(Program& prog, int id, const ir::Tensor& host,
                                 std::span<runtime::Observer* const> observers) {
  std::unique_ptr<runtime::TensorStatistics> stats =
      cpu_->statistics(host, std::max(options_.threads, 1));
  return show(prog, id, *stats, &host, observers);
}

Status VulkanExecutor::execute(Program& prog, const runtime::NamedTensors& inputs,
                               std::span<runtime::Observer* const> observers,
                               runtime::NamedTensors& outputs) {
  std::vector<ir::Tensor> host(prog.values.size());
  auto root_of = [&](int id) -> const Value& {
    return prog.values[static_cast<size_t>(prog.values[static_cast<size_t>(id)].root)];
  };
  // A host view of value `id` with its own shape (static, host-produced, or downloaded).
  auto host_view = [&](int id) -> ir::Tensor {
    const Value& v = prog.values[static_cast<size_t>(id)];
    if (v.constant != nullptr) return v.constant->view();
    const Value& r = root_of(id);
    const int rid = v.root;
    if (!r.on_gpu)
      return ir::Tensor::borrow(v.dtype, v.shape, host[static_cast<size_t>(rid)].raw());
    return ir::Tensor::borrow(v.dtype, v.shape,
                              prog.staging[static_cast<size_t>(r.staging)].mapped());
  };

  for (const auto& [name, t] : inputs) {
    const int id = prog.id(name);
    host[static_cast<size_t>(id)] = t.view();
    const Value& v = prog.values[static_cast<size_t>(id)];
    if (v.needs_device && t.nbytes() > 0) {
      parallel_copy(prog.staging[static_cast<size_t>(v.staging)].mapped(), t.raw(), t.nbytes(),
                    options_.threads);
    }
  }
  // Inputs, constants and folded values are shown first, as the CPU executor does.
  for (size_t id = 0; id < prog.values.size(); ++id) {
    const Value& v = prog.values[id];
    if (!v.observed || (!v.graph_input && v.constant == nullptr)) continue;
    PTQ_RETURN_IF_ERROR(
        show_host(prog, static_cast<int>(id), host_view(static_cast<int>(id)), observers));
  }
  for (int id : prog.start_observed)
    PTQ_RETURN_IF_ERROR(show_host(prog, id, host_view(id), observers));

  HostAllocator alloc;
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    Block& blk = prog.blocks[b];
    PTQ_RETURN_IF_ERROR(ctx_->submit_and_wait(blk.cmd));
    if (prog.timer) prog.timer->collect(static_cast<int>(b), blk.first_step, blk.end_step);
    const auto* slots = static_cast<const uint32_t*>(prog.stats_staging.mapped());
    PTQ_RETURN_IF_ERROR(histograms_.prefetch(device_statistics(prog, blk)));
    for (int id : blk.observed) {
      const Value& v = prog.values[static_cast<size_t>(id)];
      if (v.stats_slot >= 0) {
        VulkanTensorStatistics stats(histograms_, v.name, prog.device_tensor(id),
                                     decode_minmax(slots + static_cast<size_t>(v.stats_slot) * 8),
                                     stats_error_);
        PTQ_RETURN_IF_ERROR(show(prog, id, stats, nullptr, observers));
      } else {
        PTQ_RETURN_IF_ERROR(show_host(prog, id, host_view(id), observers));
      }
      PTQ_RETURN_IF_ERROR(stats_error_);
    }
    for (int s : blk.host_steps) {
      Step& st = prog.steps[static_cast<size_t>(s)];
      const ir::Node& node = model_.graph.nodes[st.node];
      std::vector<ir::Tensor> in_views(st.inputs.size());
      std::vector<const ir::Tensor*> ins(st.inputs.size(), nullptr);
      for (size_t i = 0; i < st.inputs.size(); ++i) {
        if (st.inputs[i] < 0) continue;
        in_views[i] = host_view(st.inputs[i]);
        ins[i] = &in_views[i];
      }
      std::vector<ir::Tensor> outs(st.outputs.size());
      Status status = st.kernel->run(ins, outs, alloc);
      if (!status.is_ok()) {
        if (status.message().starts_with(node.label())) return status;
        return Status(status.code(), fmt::format("{}: {}", node.label(), status.message()));
      }
      for (size_t i = 0; i < st.outputs.size(); ++i) {
        const int id = st.outputs[i];
        if (id < 0) continue;
        Value& v = prog.values[static_cast<size_t>(id)];
        if (outs[i].empty())
          return runtime_error("{}: output '{}' was not produced", node.label(), v.name);
        if (outs[i].shape() != v.shape || outs[i].dtype() != v.dtype) {
          return runtime_error("{}: output '{}' is {} {} but the shape pass saw {} {}",
                               node.label(), v.name, ir::dtype_name(outs[i].dtype()),
                               ir::shape_str(outs[i].shape()), ir::dtype_name(v.dtype),
                               ir::shape_str(v.shape));
        }
        host[static_cast<size_t>(id)] = std::move(outs[i]);
        if (v.needs_device && v.staging >= 0 && v.bytes() > 0) {
          std::memcpy(prog.staging[static_cast<size_t>(v.staging)].mapped(),
                      host[static_cast<size_t>(id)].raw(), v.bytes());
        }
      }
      for (int id : st.observe_after)
        PTQ_RETURN_IF_ERROR(show_host(prog, id, host_view(id), observers));
    }
  }
  outputs.clear();
  for (int id : prog.outputs) {
    outputs.emplace_back(prog.values[static_cast<size_t>(id)].name, ir::owned_copy(host_view(id)));
  }
  return Status::ok();
}

Expected<runtime::NamedTensors> VulkanExecutor::run(const runtime::NamedTensors& inputs,
                                                    std::span<runtime::Observer* const> observers) {
  std::set<std::string> observed;
  for (runtime::Observer* o : observers) {
    auto it = wanted_.find(o);
    if (it == wanted_.end()) {
      std::vector<std::string> names = o->wanted(model_.graph);
      for (const std::string& n : names) {
        const bool known = model_.graph.initializer(n) != nullptr ||
                           model_.graph.is_graph_input(n) ||
                           std::any_of(model_.graph.nodes.begin(), model_.graph.nodes.end(),
                                       [&](const ir::Node& node) {
                                         return std::find(node.outputs.begin(), node.outputs.end(),
                                                          n) != node.outputs.end();
                                       });
        if (!known) return invalid_input("an observer wants tensor '{}', which the model lacks", n);
      }
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      it = wanted_.emplace(o, std::move(names)).first;
    }
    observed.insert(it->second.begin(), it->second.end());
  }
  PTQ_ASSIGN_OR_RETURN(Program * prog, program_for(inputs, std::vector<std::string>(
                                                               observed.begin(), observed.end())));
  // Inputs the program was not built for (another name set) fail in the shape pass; here only
  // the names need checking, since the program key holds dtypes and shapes.
  for (const auto& [name, t] : inputs) {
    const int id = prog->id(name);
    if (id < 0 || !prog->values[static_cast<size_t>(id)].graph_input) {
      return invalid_input("unknown input '{}'", name);
    }
  }
  stats_error_ = Status::ok();
  runtime::NamedTensors outputs;
  PTQ_RETURN_IF_ERROR(execute(*prog, inputs, observers, outputs));
  PTQ_RETURN_IF_ERROR(stats_error_);
  stats_ = runtime::RunStats{uploaded_bytes_ + prog->weight_bytes, prog->arena_bytes,
                             prog->arena_bytes + prog->staging_bytes,
                             static_cast<int64_t>(prog->steps.size())};
  return outputs;
}

}  // namespace

OpenedDevice::OpenedDevice(std::unique_ptr<Context> context) : context_(std::move(context)) {}
OpenedDevice::~OpenedDevice() = default;
std::unique_ptr<Context> OpenedDevice::take() { return std::move(context_); }

Expected<std::unique_ptr<OpenedDevice>> open_vulkan_device(const VulkanOptions& options) {
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Context> ctx, Context::create(options));
  return std::make_unique<OpenedDevice>(std::move(ctx));
}

Expected<std::unique_ptr<runtime::Executor>> make_vulkan_executor(
    const ir::Model& model, const VulkanOptions& options, std::unique_ptr<OpenedDevice> opened) {
  PTQ_ASSIGN_OR_RETURN(std::unordered_set<std::string> statics, static_values(model.graph));
  std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend(options.cpu);
  std::unique_ptr<Context> ctx = opened != nullptr ? opened->take() : nullptr;
  if (ctx == nullptr) {
    PTQ_ASSIGN_OR_RETURN(ctx, Context::create(options));
  }
  return std::unique_ptr<runtime::Executor>(std::make_unique<VulkanExecutor>(
      model, options, std::move(ctx), std::move(cpu), std::move(statics)));
}

}  // namespace ptq::vulkan
