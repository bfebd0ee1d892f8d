// Building a Program: step kinds, fusion, residency, blocks, liveness, the arena layout, and
// the recording of each block's command buffer.
#include "program.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "timing.h"

namespace ptq::vulkan {

namespace {

constexpr int64_t kAlign = 256;

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Storage bytes a binding of `bytes` covers: whole 32-bit words (8-bit tensors are read as
// packed words), at least one.
VkDeviceSize binding_bytes(size_t bytes) { return std::max<VkDeviceSize>((bytes + 3) / 4 * 4, 4); }

struct Builder {
  BuildEnv& env;
  Program& prog;
  const ir::Graph& graph;
  int64_t opset;

  int root(int id) const { return id < 0 ? -1 : prog.values[static_cast<size_t>(id)].root; }
  Value& val(int id) { return prog.values[static_cast<size_t>(id)]; }
  bool is_static(int id) const {
    return id >= 0 && prog.values[static_cast<size_t>(id)].constant != nullptr;
  }

  Status add_values(const std::unordered_map<std::string, ValueFacts>& facts,
                    std::unordered_map<std::string, ir::Tensor>& folded);
  Status make_steps(const std::vector<size_t>& order);
  bool is_view(const ir::Node& node, const Step& step);
  bool unused(int id);
  OpBuild op_build(const Step& step) const;
  void fuse_activations();
  void mark_residency();
  void form_blocks();
  void lifetimes();
  Status layout_arena();
  Status allocate_staging();
  Expected<std::vector<int>> constants_to_upload();
  Status upload_constants();
  void bind_constants(const std::unordered_map<int, VkBuffer>& folded);
  Status record_step(Recorder& rec, int step);
  Status prepare_pipelines();
  Status record_blocks();
};

Status Builder::add_values(const std::unordered_map<std::string, ValueFacts>& facts,
                           std::unordered_map<std::string, ir::Tensor>& folded) {
  auto add = [&](const std::string& name) -> int {
    auto it = prog.ids.find(name);
    if (it != prog.ids.end()) return it->second;
    const int id = static_cast<int>(prog.values.size());
    Value v;
    v.name = name;
    v.root = id;
    if (const ir::Tensor* init = graph.initializer(name)) {
      v.constant = init;
    } else if (auto f = folded.find(name); f != folded.end()) {
      prog.folded.push_back(std::make_unique<ir::Tensor>(std::move(f->second)));
      v.constant = prog.folded.back().get();
    }
    if (v.constant != nullptr) {
      v.dtype = v.constant->dtype();
      v.shape = v.constant->shape();
    } else if (auto fact = facts.find(name); fact != facts.end()) {
      v.dtype = fact->second.dtype;
      v.shape = fact->second.shape;
    }
    prog.values.push_back(std::move(v));
    prog.ids.emplace(name, id);
    return id;
  };
  for (const ir::ValueInfo* in : graph.real_inputs()) {
    const int id = add(in->name);
    val(id).graph_input = true;
    prog.inputs.push_back(id);
  }
  for (const ir::Initializer& init : graph.initializers()) add(init.name);
  for (const ir::Node& node : graph.nodes) {
    for (const std::string& o : node.outputs) {
      if (!o.empty()) add(o);
    }
  }
  for (const ir::ValueInfo& out : graph.outputs) {
    const int id = prog.id(out.name);
    if (id < 0) return invalid_input("graph output '{}' is produced by no node", out.name);
    val(id).graph_output = true;
    prog.outputs.push_back(id);
  }
  return Status::ok();
}

OpBuild Builder::op_build(const Step& step) const {
  const ir::Node& node = graph.nodes[step.node];
  OpBuild b{env.ctx, node, opset, {}, {}, env.conv_split_k};
  auto desc = [&](int id) {
    ValueDesc d;
    if (id < 0) return d;
    const Value& v = prog.values[static_cast<size_t>(id)];
    d.present = v.dtype != ir::DType::kUndefined;
    d.dtype = v.dtype;
    d.shape = v.shape;
    d.constant = v.constant;
    return d;
  };
  for (int id : step.inputs) b.inputs.push_back(desc(id));
  for (int id : step.outputs) b.outputs.push_back(desc(id));
  return b;
}

// A value no node reads, no observer wants and the caller is not given.
bool Builder::unused(int id) {
  if (id < 0) return true;
  if (val(id).observed || val(id).graph_output) return false;
  return std::none_of(graph.nodes.begin(), graph.nodes.end(), [&](const ir::Node& n) {
    return std::find(n.inputs.begin(), n.inputs.end(), val(id).name) != n.inputs.end();
  });
}

bool Builder::is_view(const ir::Node& node, const Step& step) {
  if (!is_view_op(node, opset) || step.inputs.empty() || step.inputs[0] < 0 ||
      step.outputs[0] < 0 || is_static(step.inputs[0]) ||
      val(step.inputs[0]).dtype != val(step.outputs[0]).dtype) {
    return false;
  }
  if (node.op_type != "Dropout") return true;
  // Its mask (all true) is made by the CPU kernel when anything wants it; so is the error of a
  // training-mode Dropout (random, refused).
  if (step.outputs.size() > 1 && !unused(step.outputs[1])) return false;
  const int training = step.inputs.size() > 2 ? step.inputs[2] : -1;
  const int ratio = step.inputs.size() > 1 ? step.inputs[1] : -1;
  if (training < 0) return true;
  const ir::Tensor* t = val(training).constant;
  const ir::Tensor* r = ratio >= 0 ? val(ratio).constant : nullptr;
  const bool off = t != nullptr && t->size() == 1 && t->as_int64(0) == 0;
  const bool no_ratio = r != nullptr && r->size() == 1 && r->as_double(0) == 0.0;
  return off || no_ratio;
}

Status Builder::make_steps(const std::vector<size_t>& order) {
  for (size_t n : order) {
    const ir::Node& node = graph.nodes[n];
    Step step;
    step.node = n;
    for (const std::string& in : node.inputs) step.inputs.push_back(in.empty() ? -1 : prog.id(in));
    for (const std::string& out : node.outputs)
      step.outputs.push_back(out.empty() ? -1 : prog.id(out));
    const int s = static_cast<int>(prog.steps.size());
    for (int id : step.outputs) {
      if (id >= 0) val(id).producer_step = s;
    }
    const bool folded = std::all_of(step.outputs.begin(), step.outputs.end(),
                                    [&](int id) { return id < 0 || is_static(id); });
    if (folded) {
      step.kind = StepKind::kFolded;
    } else if (is_view(node, step)) {
      step.kind = StepKind::kView;
      val(step.outputs[0]).root = root(step.inputs[0]);
    } else {
      for (size_t i = 0; i < step.outputs.size(); ++i) {
        const int id = step.outputs[i];
        if (id >= 0 && val(id).dtype == ir::DType::kUndefined &&
            !graph.is_graph_output(node.outputs[i])) {
          step.outputs[i] = -1;  // never produced (an unused optional output)
        }
      }
      OpFactory factory = node.in_default_domain() ? find_op(node.op_type) : nullptr;
      Status why = unsupported("no Vulkan kernel for {}", node.op_type);
      if (factory != nullptr) {
        Expected<std::unique_ptr<VulkanOp>> op = factory(op_build(step));
        if (op.has_value()) {
          step.kind = StepKind::kGpu;
          step.op = std::move(op).value();
        } else {
          why = op.status();
        }
      }
      if (step.kind != StepKind::kGpu) {
        step.kind = StepKind::kHost;
        step.fallback_reason = why.message();
        runtime::KernelContext kc{node, opset, env.threads, &graph};
        PTQ_ASSIGN_OR_RETURN(step.kernel, env.cpu.create_kernel(kc));
        prog.fallback_nodes.push_back(fmt::format("{} ({})", node.label(), step.fallback_reason));
      }
    }
    prog.steps.push_back(std::move(step));
  }
  return Status::ok();
}

// A Relu or Clip moves into its producer's epilogue when the producer's op takes it
// (VulkanOp::fuse: Conv, Gemm/MatMul, the elementwise binary ops) and nothing else needs the
// pre-activation value; the activation node becomes a view.
void Builder::fuse_activations() {
  std::vector<int> uses(prog.values.size(), 0);
  for (const Step& st : prog.steps) {
    for (int id : st.inputs) {
      if (id >= 0) ++uses[static_cast<size_t>(id)];
    }
  }
  for (Step& st : prog.steps) {
    if (st.kind != StepKind::kGpu || st.inputs.empty() || st.inputs[0] < 0) continue;
    const int x = st.inputs[0];
    const Value& xv = val(x);
    if (xv.producer_step < 0 || xv.observed || xv.graph_output || uses[static_cast<size_t>(x)] != 1)
      continue;
    Step& prod = prog.steps[static_cast<size_t>(xv.producer_step)];
    if (prod.kind != StepKind::kGpu) continue;
    std::optional<Activation> act = fusable_activation(op_build(st));
    if (!act || !prod.op->fuse(*act)) continue;
    st.kind = StepKind::kView;
    st.op.reset();
    val(st.outputs[0]).root = x;
  }
  // Views made before the fusion (a Flatten after the Relu) still name the activation's output
  // as their root, which has no storage now: point every view at its input's root again (steps
  // are in topological order, so an input's root is final when its reader is reached).
  for (const Step& st : prog.steps) {
    if (st.kind != StepKind::kView || st.outputs[0] < 0) continue;
    val(st.outputs[0]).root = root(st.inputs[0]);
  }
}

void Builder::mark_residency() {
  for (const Step& st : prog.steps) {
    if (st.kind == StepKind::kGpu) {
      for (int id : st.outputs) {
        if (id >= 0) val(id).on_gpu = val(id).needs_device = true;
      }
      for (size_t i = 0; i < st.inputs.size(); ++i) {
        const int id = st.inputs[i];
        if (id >= 0 && !is_static(id) && st.op->reads_on_device(i))
          val(root(id)).needs_device = true;
      }
    } else if (st.kind == StepKind::kHost) {
      for (int id : st.inputs) {
        if (id >= 0 && !is_static(id)) val(root(id)).needs_host = true;
      }
    }
  }
  for (int id : prog.outputs) {
    if (!is_static(id)) val(root(id)).needs_host = true;
  }
}

void Builder::form_blocks() {
  auto open = [&](int first) {
    Block b;
    b.first_step = b.end_step = first;
    prog.blocks.push_back(std::move(b));
  };
  open(0);
  bool closed = false;
  int64_t observed_bytes = 0;
  for (int s = 0; s < static_cast<int>(prog.steps.size()); ++s) {
    const Step& st = prog.steps[static_cast<size_t>(s)];
    if (st.kind == StepKind::kGpu) {
      if (closed) {
        open(s);
        closed = false;
        observed_bytes = 0;
      }
      Block& b = prog.blocks.back();
      b.end_step = s + 1;
      for (int id : st.outputs) {
        if (id >= 0 && val(id).observed) {
          b.observed.push_back(id);
          observed_bytes += static_cast<int64_t>(val(id).bytes());
        }
      }
      if (observed_bytes > env.observe_budget) closed = true;
    } else if (st.kind == StepKind::kHost) {
      prog.blocks.back().host_steps.push_back(s);
      closed = true;
      for (int id : st.outputs) {
        if (id >= 0 && val(id).observed)
          prog.steps[static_cast<size_t>(s)].observe_after.push_back(id);
      }
    } else if (st.kind == StepKind::kView) {
      // An observed view is read where its root is: with the block that produces a GPU root,
      // after the CPU step that produces a host root, or at the start for an input.
      const int out = st.outputs[0];
      if (out < 0 || !val(out).observed) continue;
      const Value& r = val(root(out));
      if (r.on_gpu) {
        prog.blocks.back().observed.push_back(out);
      } else if (r.producer_step >= 0) {
        prog.steps[static_cast<size_t>(r.producer_step)].observe_after.push_back(out);
      } else {
        prog.start_observed.push_back(out);
      }
    }
  }
}

void Builder::lifetimes() {
  auto use = [&](int id, int step) {
    if (id < 0 || is_static(id)) return;
    Value& r = val(root(id));
    r.last = std::max<int64_t>(r.last, step);
  };
  for (Value& v : prog.values) {
    if (v.root != static_cast<int>(&v - prog.values.data()) || v.constant != nullptr) continue;
    v.first = v.producer_step < 0 ? 0 : v.producer_step;
    v.last = v.first;
  }
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    Block& blk = prog.blocks[b];
    const int end = std::max(blk.first_step, blk.end_step - 1);
    for (int s = blk.first_step; s < blk.end_step; ++s) {
      const Step& st = prog.steps[static_cast<size_t>(s)];
      if (st.kind != StepKind::kGpu) continue;
      for (size_t i = 0; i < st.inputs.size(); ++i) {
        if (st.op->reads_on_device(i)) use(st.inputs[i], s);
      }
      for (int id : st.outputs) {
        if (id < 0) continue;
        if (val(id).graph_output) use(id, end);
      }
    }
    for (int id : blk.observed) use(id, end);
    for (int hs : blk.host_steps) {
      const Step& st = prog.steps[static_cast<size_t>(hs)];
      for (int id : st.inputs) {
        if (id >= 0 && !is_static(id) && val(root(id)).on_gpu) {
          use(id, end);
          Value& r = val(root(id));
          if (r.staging == -1) {
            blk.downloads.push_back(root(id));
            r.staging = -2;  // marked; a buffer is assigned later
          }
        }
      }
      // Host-produced values a later GPU step reads are uploaded at the next block's start.
      for (int id : st.outputs) {
        if (id < 0 || !val(id).needs_device) continue;
        for (size_t nb = b + 1; nb < prog.blocks.size(); ++nb) {
          if (prog.blocks[nb].end_step > prog.blocks[nb].first_step) {
            prog.blocks[nb].uploads.push_back(id);
            val(id).first = prog.blocks[nb].first_step;
            val(id).last = std::max(val(id).last, val(id).first);
            break;
          }
        }
      }
    }
  }
  // Device graph outputs, and observed device values that are not float32 (their statistics
  // are computed on the host), are downloaded at the end of the block producing them.
  auto download_at_production = [&](int id) {
    const int r = root(id);
    Value& rv = val(r);
    if (!rv.on_gpu || rv.staging != -1) return;
    const int s = rv.producer_step;
    for (Block& blk : prog.blocks) {
      if (s >= blk.first_step && s < blk.end_step) {
        blk.downloads.push_back(r);
        rv.staging = -2;
        rv.last = std::max<int64_t>(rv.last, std::max(blk.first_step, blk.end_step - 1));
      }
    }
  };
  for (int id : prog.outputs) {
    if (!is_static(id)) download_at_production(id);
  }
  for (const Block& blk : prog.blocks) {
    for (int id : blk.observed) {
      if (val(id).dtype != ir::DType::kFloat32) download_at_production(id);
    }
  }
  for (int id : prog.inputs) {
    if (val(id).needs_device) prog.blocks.front().uploads.push_back(id);
  }
}

Status Builder::layout_arena() {
  struct Placed {
    int64_t offset, size, last;
  };
  std::vector<int> roots;
  for (size_t i = 0; i < prog.values.size(); ++i) {
    const Value& v = prog.values[i];
    if (v.root == static_cast<int>(i) && v.constant == nullptr && v.needs_device &&
        v.dtype != ir::DType::kUndefined) {
      roots.push_back(static_cast<int>(i));
    }
  }
  std::stable_sort(roots.begin(), roots.end(),
                   [&](int a, int b) { return val(a).first < val(b).first; });
  std::vector<Placed> placed;
  int64_t top = 0;
  const int64_t align = std::max<int64_t>(
      kAlign, static_cast<int64_t>(env.ctx.limits().minStorageBufferOffsetAlignment));
  for (int id : roots) {
    Value& v = val(id);
    const int64_t size = align_up(std::max<int64_t>(static_cast<int64_t>(v.bytes()), 4), align);
    if (static_cast<uint64_t>(size) > env.ctx.limits().maxStorageBufferRange) {
      return unsupported(
          "tensor '{}' ({} bytes) exceeds the device's storage buffer range ({} bytes)", v.name,
          v.bytes(), env.ctx.limits().maxStorageBufferRange);
    }
    std::vector<Placed> live;
    for (const Placed& p : placed) {
      if (p.last >= v.first) live.push_back(p);
    }
    std::sort(live.begin(), live.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    int64_t at = 0;
    for (const Placed& p : live) {
      if (p.offset - at >= size) break;
      at = std::max(at, p.offset + p.size);
    }
    v.offset = at;
    placed.push_back({at, size, v.last});
    top = std::max(top, at + size);
  }
  prog.arena_bytes = top;
  PTQ_ASSIGN_OR_RETURN(prog.arena,
                       Buffer::create(env.ctx, static_cast<size_t>(std::max<int64_t>(top, 256)),
                                      Buffer::Kind::kDevice));
  return Status::ok();
}

Status Builder::allocate_staging() {
  // Inputs are staged in host-visible device memory where there is some (Buffer::Kind::kUpload:
  // ResNet-18 batch 32 on the H100, 7.25-7.40 -> 6.89-7.01 ms) unless the options ask for host
  // memory, where read-backs are staged.
  const bool bar = env.inputs_on_device;
  auto staging_for = [&](int id, bool upload) -> Status {
    Value& v = val(id);
    if (v.staging >= 0) return Status::ok();
    const Buffer::Kind kind = upload && bar ? Buffer::Kind::kUpload : Buffer::Kind::kStaging;
    PTQ_ASSIGN_OR_RETURN(Buffer b, Buffer::create(env.ctx, std::max<size_t>(v.bytes(), 4), kind));
    prog.staging_bytes += static_cast<int64_t>(b.size());
    v.staging = static_cast<int>(prog.staging.size());
    prog.staging.push_back(std::move(b));
    return Status::ok();
  };
  int slots = 0;
  for (Block& blk : prog.blocks) {
    for (int id : blk.uploads) PTQ_RETURN_IF_ERROR(staging_for(id, true));
    for (int id : blk.downloads) PTQ_RETURN_IF_ERROR(staging_for(id, false));
    blk.stats_first = slots;
    for (int id : blk.observed) {
      if (ir::dtype_size(val(id).dtype) == 4 && val(id).dtype == ir::DType::kFloat32) {
        val(id).stats_slot = slots++;
      }
    }
    blk.stats_count = slots - blk.stats_first;
  }
  const size_t stats_bytes = static_cast<size_t>(std::max(slots, 1)) * 8 * sizeof(uint32_t);
  PTQ_ASSIGN_OR_RETURN(prog.stats, Buffer::create(env.ctx, stats_bytes, Buffer::Kind::kDevice));
  PTQ_ASSIGN_OR_RETURN(prog.stats_staging,
                       Buffer::create(env.ctx, stats_bytes, Buffer::Kind::kStaging));
  return Status::ok();
}

// The static values GPU steps read, each once, that have no device buffer yet (initializers
// uploaded by an earlier program of this executor are reused).
Expected<std::vector<int>> Builder::constants_to_upload() {
  std::vector<int> ids;
  std::set<int> seen;
  for (const Step& st : prog.steps) {
    if (st.kind != StepKind::kGpu) continue;
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      const int id = st.inputs[i];
      if (id < 0 || !is_static(id) || !st.op->reads_on_device(i) || !seen.insert(id).second)
        continue;
      const Value& v = val(id);
      if (v.constant->dtype() == ir::DType::kString)
        return unsupported("string constant '{}' on Vulkan", v.name);
      const bool initializer = graph.initializer(v.name) != nullptr;
      if (!initializer || !env.uploaded.count(v.name)) ids.push_back(id);
    }
  }
  return ids;
}

Status Builder::upload_constants() {
  PTQ_ASSIGN_OR_RETURN(std::vector<int> ids, constants_to_upload());
  std::vector<HostBytes> host;
  for (int id : ids) host.push_back({val(id).constant->raw(), val(id).constant->nbytes()});
  PTQ_ASSIGN_OR_RETURN(std::vector<Buffer> buffers, upload_buffers(env.ctx, host));
  std::unordered_map<int, VkBuffer> folded;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Value& v = val(ids[i]);
    const int64_t bytes = static_cast<int64_t>(buffers[i].size());
    if (graph.initializer(v.name) != nullptr) {
      env.uploaded_bytes += bytes;
      env.uploaded.emplace(v.name, std::move(buffers[i]));
    } else {
      prog.weight_bytes += bytes;
      folded.emplace(ids[i], buffers[i].handle());
      prog.constant_buffers.push_back(std::move(buffers[i]));
    }
  }
  bind_constants(folded);
  return Status::ok();
}

// Every static value a GPU step reads, as a DeviceTensor over its uploaded buffer (`folded`:
// those that are not initializers).
void Builder::bind_constants(const std::unordered_map<int, VkBuffer>& folded) {
  for (const Step& st : prog.steps) {
    if (st.kind != StepKind::kGpu) continue;
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      const int id = st.inputs[i];
      if (id < 0 || !is_static(id) || !st.op->reads_on_device(i) || prog.constant_tensors.count(id))
        continue;
      const Value& v = val(id);
      DeviceTensor d;
      d.dtype = v.dtype;
      d.shape = v.shape;
      d.bytes = binding_bytes(v.constant->nbytes());
      d.buffer =
          graph.initializer(v.name) != nullptr ? env.uploaded.at(v.name).handle() : folded.at(id);
      prog.constant_tensors.emplace(id, std::move(d));
    }
  }
}

Status Builder::record_step(Recorder& rec, int s) {
  Step& st = prog.steps[static_cast<size_t>(s)];
  if (st.kind != StepKind::kGpu) return Status::ok();
  std::vector<DeviceTensor> ins(st.inputs.size());
  std::vector<const DeviceTensor*> in_ptrs(st.inputs.size(), nullptr);
  for (size_t i = 0; i < st.inputs.size(); ++i) {
    if (st.inputs[i] < 0 || !st.op->reads_on_device(i)) continue;
    ins[i] = prog.device_tensor(st.inputs[i]);
    in_ptrs[i] = &ins[i];
  }
  std::vector<DeviceTensor> outs(st.outputs.size());
  for (size_t i = 0; i < st.outputs.size(); ++i) {
    if (st.outputs[i] >= 0) outs[i] = prog.device_tensor(st.outputs[i]);
  }
  Status status = st.op->record(rec, in_ptrs, outs);
  if (!status.is_ok())
    return runtime_error("{}: {}", graph.nodes[st.node].label(), status.message());
  return Status::ok();
}

// Drivers compile a pipeline when it is created (seconds for a whole model on some), one per
// thread: list the shaders the program dispatches (and the statistics it will need) with a
// recorder that records nothing, and build them all at once before recording.
Status Builder::prepare_pipelines() {
  Recorder list(env.ctx, prog.descriptors, VK_NULL_HANDLE);
  bool observed = false;
  for (const Block& blk : prog.blocks) {
    for (int s = blk.first_step; s < blk.end_step; ++s) PTQ_RETURN_IF_ERROR(record_step(list, s));
    observed = observed || blk.stats_count > 0;
  }
  std::vector<std::pair<std::string, uint32_t>> shaders = list.shaders();
  if (observed) {
    shaders.emplace_back("minmax", 2);
    shaders.emplace_back(env.ctx.exact_histograms() ? "histogram" : "histogram_f32", 2);
  }
  return env.ctx.prepare_pipelines(shaders);
}

Status Builder::record_blocks() {
  if (env.ctx.timing()) {
    prog.timer = StepTimer::create(env.ctx, static_cast<int>(prog.steps.size()),
                                   static_cast<int>(prog.blocks.size()));
  }
  for (size_t b = 0; b < prog.blocks.size(); ++b) {
    Block& blk = prog.blocks[b];
    PTQ_ASSIGN_OR_RETURN(blk.cmd, env.ctx.allocate_command_buffer());
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    PTQ_VK(vkBeginCommandBuffer(blk.cmd, &bi));
    Recorder rec(env.ctx, prog.descriptors, blk.cmd);
    if (blk.stats_count > 0) {
      rec.fill(prog.stats.handle(), static_cast<VkDeviceSize>(blk.stats_first) * 32,
               static_cast<VkDeviceSize>(blk.stats_count) * 32, 0);
    }
    for (int id : blk.uploads) {  // earlier submissions are complete; nothing here conflicts
      const Value& v = val(id);
      rec.no_barrier_needed();
      rec.copy(prog.staging[static_cast<size_t>(v.staging)].handle(), 0, prog.arena.handle(),
               static_cast<VkDeviceSize>(v.offset), v.bytes());
    }
    if (prog.timer)
      prog.timer->begin_block(blk.cmd, static_cast<int>(b), blk.first_step, blk.end_step);
    for (int s = blk.first_step; s < blk.end_step; ++s) {
      PTQ_RETURN_IF_ERROR(record_step(rec, s));
      if (prog.timer && prog.steps[static_cast<size_t>(s)].kind == StepKind::kGpu)
        prog.timer->end_step(blk.cmd, s);
    }
    bool first_stat = true;
    for (int id : blk.observed) {
      const Value& v = val(id);
      if (v.stats_slot < 0) continue;
      const DeviceTensor t = prog.device_tensor(id);
      struct {
        uint32_t n, slot;
      } push{static_cast<uint32_t>(t.size()), static_cast<uint32_t>(v.stats_slot) * 8};
      if (!first_stat) rec.no_barrier_needed();
      first_stat = false;
      PTQ_RETURN_IF_ERROR(
          rec.dispatch("minmax", {t, prog.stats}, push, groups_for(t.size(), 256, 1024)));
    }
    bool first_copy = true;
    if (blk.stats_count > 0) {
      const VkDeviceSize off = static_cast<VkDeviceSize>(blk.stats_first) * 32;
      rec.copy(prog.stats.handle(), off, prog.stats_staging.handle(), off,
               static_cast<VkDeviceSize>(blk.stats_count) * 32);
      first_copy = false;
    }
    for (int id : blk.downloads) {
      const Value& v = val(id);
      if (!first_copy) rec.no_barrier_needed();
      first_copy = false;
      rec.copy(prog.arena.handle(), static_cast<VkDeviceSize>(v.offset),
               prog.staging[static_cast<size_t>(v.staging)].handle(), 0, v.bytes());
    }
    rec.barrier();  // transfers -> host reads after the fence
    PTQ_VK(vkEndCommandBuffer(blk.cmd));
  }
  return Status::ok();
}

}  // namespace

DeviceTensor Program::device_tensor(int id) const {
  const Value& v = values[static_cast<size_t>(id)];
  if (auto it = constant_tensors.find(id); it != constant_tensors.end()) return it->second;
  const Value& r = values[static_cast<size_t>(v.root)];
  DeviceTensor d;
  d.buffer = arena.handle();
  d.offset = static_cast<VkDeviceSize>(r.offset);
  d.bytes = binding_bytes(v.bytes());
  d.dtype = v.dtype;
  d.shape = v.shape;
  return d;
}

bool is_view_op(const ir::Node& node, int64_t /*opset*/) {
  if (!node.in_default_domain()) return false;
  const std::string& op = node.op_type;
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Identity") {
    return true;
  }
  // Dropout at inference is the identity (the builder checks its mask and training mode).
  if (op == "Dropout") return true;
  // Cast to the same type (the caller checks the dtypes) changes nothing.
  return op == "Cast";
}

Expected<std::unique_ptr<Program>> build_program(
    BuildEnv& env, const std::unordered_map<std::string, ValueFacts>& facts,
    std::unordered_map<std::string, ir::Tensor> folded, const std::vector<std::string>& observed) {
  auto prog = std::make_unique<Program>(env.ctx);
  Builder b{env, *prog, env.model.graph, env.model.opset("")};
  PTQ_RETURN_IF_ERROR(b.add_values(facts, folded));
  for (const std::string& name : observed) {
    const int id = prog->id(name);
    if (id >= 0) b.val(id).observed = true;
  }
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::topological_order(env.model.graph));
  PTQ_RETURN_IF_ERROR(b.make_steps(order));
  b.fuse_activations();
  b.mark_residency();
  b.form_blocks();
  b.lifetimes();
  PTQ_RETURN_IF_ERROR(b.layout_arena());
  PTQ_RETURN_IF_ERROR(b.allocate_staging());
  const auto t0 = std::chrono::steady_clock::now();
  PTQ_RETURN_IF_ERROR(b.upload_constants());
  const auto t1 = std::chrono::steady_clock::now();
  PTQ_RETURN_IF_ERROR(b.prepare_pipelines());
  const auto t2 = std::chrono::steady_clock::now();
  PTQ_RETURN_IF_ERROR(b.record_blocks());
  if (env.ctx.timing()) {
    using ms = std::chrono::duration<double, std::milli>;
    fmt::print(
        stderr,
        "ptq: vulkan: constants uploaded in {:.1f} ms, pipelines {:.1f} ms, recording {:.1f} ms\n",
        ms(t1 - t0).count(), ms(t2 - t1).count(),
        ms(std::chrono::steady_clock::now() - t2).count());
  }
  return prog;
}

}  // namespace ptq::vulkan
