// The executor: runs a Plan step by step with pooled buffers, views and observers.
#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "fusion.h"
#include "plan.h"
#include "pool_allocator.h"
#include "step_times.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/runtime.h"

namespace ptq::runtime {

namespace {

// One value during a run: its tensor and the pool block it lies in (null when it lies in
// caller memory, an initializer, or owns its bytes).
struct Slot {
  ir::Tensor tensor;
  Block* block = nullptr;
  bool set = false;
};

bool contains(const Block* b, const void* p) {
  const auto* q = static_cast<const std::byte*>(p);
  return b != nullptr && q >= b->data && q < b->data + b->capacity;
}

Status check_input(const PlanValue& v, const ir::Tensor& t) {
  const ir::TypeInfo& type = v.info->type;
  if (type.dtype != ir::DType::kUndefined && t.dtype() != type.dtype) {
    return invalid_input("input '{}' has element type {} but the model expects {}", v.name,
                         ir::dtype_name(t.dtype()), ir::dtype_name(type.dtype));
  }
  if (!type.dims) return Status::ok();
  const auto& dims = *type.dims;
  bool ok = dims.size() == t.shape().size();
  for (size_t i = 0; ok && i < dims.size(); ++i) {
    ok = !dims[i].known() || dims[i].value == t.shape()[i];
  }
  if (!ok) {
    return invalid_input("input '{}' has shape {} but the model expects {}", v.name,
                         ir::shape_str(t.shape()), ir::dims_str(type.dims));
  }
  return Status::ok();
}

class PlanExecutor final : public Executor {
 public:
  PlanExecutor(const ir::Model& model, Backend& backend, ExecutorOptions options, ExecGraph graph,
               Plan plan, std::vector<std::unique_ptr<Kernel>> kernels,
               std::vector<FusedChain> chains, std::vector<Rewrite> rewrites)
      : model_(model),
        backend_(backend),
        options_(options),
        exec_graph_(std::move(graph)),
        graph_(*exec_graph_.graph),
        plan_(std::move(plan)),
        kernels_(std::move(kernels)),
        chains_(std::move(chains)),
        rewrites_(std::move(rewrites)) {
    for (int32_t id : plan_.constants) {
      weight_bytes_ += static_cast<int64_t>(plan_.values[id].constant->nbytes());
    }
    for (const std::string& name : exec_graph_.folded) folded_.push_back(plan_.id(name));
  }

  Expected<NamedTensors> run(const NamedTensors& inputs,
                             std::span<Observer* const> observers) override {
    return run_reusing(inputs, {}, observers);
  }
  Expected<NamedTensors> run_reusing(const NamedTensors& inputs, NamedTensors reuse,
                                     std::span<Observer* const> observers) override;
  void forget_observers() override { wanted_.clear(); }
  RunStats last_run_stats() const override { return stats_; }
  std::vector<std::pair<std::string, ir::Shape>> value_shapes() const override;

 private:
  Status bind_inputs(const NamedTensors& inputs);
  std::vector<int64_t> pool_key() const;
  void choose_schedule();
  Status run_step(size_t s);
  Status run_chain(const FusedChain& chain);
  Status run_rewrite(const Rewrite& rewrite);
  void note_hidden_shapes(const ScheduleItem& item);
  std::optional<Epilogue> epilogue_of(const FusedChain& chain) const;
  void claim_outputs(const PlanStep& step);
  void release(int32_t id);
  Status prepare_observers(std::span<Observer* const> observers);
  Status observe(int32_t id, std::span<Observer* const> observers);
  void clear();
  void note_shape(int32_t id, int32_t like);
  using TimePoint = std::chrono::steady_clock::time_point;
  void note_time(size_t i, TimePoint t0, TimePoint t1);

  const ir::Model& model_;
  Backend& backend_;
  ExecutorOptions options_;
  ExecGraph exec_graph_;    // what the plan and kernels were made from (optimizer.h)
  const ir::Graph& graph_;  // *exec_graph_.graph: the model's, or a copy with folded values
  Plan plan_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // one per step
  std::vector<FusedChain> chains_;                // every chain the kernels can fuse
  std::vector<Rewrite> rewrites_;                 // every rewrite the optimizer found
  std::vector<int32_t> folded_;                   // value ids of the folded values
  std::vector<int32_t> active_;                   // the chains the schedule uses
  std::vector<int32_t> used_;                     // the rewrites the schedule uses
  std::vector<ScheduleItem> schedule_;
  bool scheduled_ = false;
  PoolAllocator pool_;
  std::vector<Slot> slots_;
  std::vector<ir::Shape> shapes_;  // by value id, from the last run (value_shapes())
  std::vector<char> shaped_;       // by value id: shapes_ holds the last run's
  // Per observer (by address): which value ids it wants.
  std::unordered_map<const Observer*, std::vector<bool>> wanted_;
  std::vector<bool> any_wanted_;
  int64_t weight_bytes_ = 0;
  int64_t fused_ = 0;      // nodes of this run folded into a kernel
  int64_t rewritten_ = 0;  // nodes of this run replaced by a rewrite's substitute
  RunStats stats_;
  StepTimes times_{options_.step_timing};
};

Status PlanExecutor::bind_inputs(const NamedTensors& inputs) {
  for (const auto& [name, tensor] : inputs) {
    const int32_t id = plan_.id(name);
    if (id < 0 || plan_.values[id].kind != ValueKind::kInput) {
      std::string known;
      for (int32_t r : plan_.real_inputs)
        known += (known.empty() ? "" : ", ") + plan_.values[r].name;
      return invalid_input("unknown input '{}' (the model's inputs: {})", name, known);
    }
    if (slots_[id].set) return invalid_input("input '{}' is given twice", name);
    PTQ_RETURN_IF_ERROR(check_input(plan_.values[id], tensor));
    slots_[id].tensor = tensor.view();
    slots_[id].set = true;
  }
  for (int32_t id : plan_.real_inputs) {
    if (!slots_[id].set) {
      return invalid_input("missing input '{}' (expected {} {})", plan_.values[id].name,
                           ir::dtype_name(plan_.values[id].info->type.dtype),
                           ir::dims_str(plan_.values[id].info->type.dims));
    }
  }
  for (int32_t id : plan_.constants) {
    slots_[id].tensor = plan_.values[id].constant->view();
    slots_[id].set = true;
  }
  return Status::ok();
}

Status PlanExecutor::prepare_observers(std::span<Observer* const> observers) {
  any_wanted_.assign(plan_.values.size(), false);
  for (Observer* o : observers) {
    auto it = wanted_.find(o);
    if (it == wanted_.end()) {
      std::vector<bool> mask(plan_.values.size(), false);
      for (const std::string& name : o->wanted(model_.graph)) {
        const int32_t id = plan_.id(name);
        if (id < 0)
          return invalid_input("an observer wants tensor '{}', which the model lacks", name);
        mask[id] = true;
      }
      it = wanted_.emplace(o, std::move(mask)).first;
    }
    for (size_t i = 0; i < any_wanted_.size(); ++i)
      any_wanted_[i] = any_wanted_[i] || it->second[i];
  }
  return Status::ok();
}

Status PlanExecutor::observe(int32_t id, std::span<Observer* const> observers) {
  if (id < 0 || !any_wanted_[id] || !slots_[id].set || slots_[id].tensor.empty())
    return Status::ok();
  const PlanValue& v = plan_.values[id];
  const ir::Tensor& t = slots_[id].tensor;
  std::unique_ptr<TensorStatistics> stats = backend_.statistics(t, options_.threads);
  const ir::Node* producer =
      v.producer_step >= 0 ? &graph_.nodes[plan_.steps[v.producer_step].node] : nullptr;
  ObservedTensor shown{v.name, producer, t.shape(), t.dtype(), &t, *stats};
  for (Observer* o : observers) {
    if (wanted_[o][id]) PTQ_RETURN_IF_ERROR(o->observe(shown));
  }
  return Status::ok();
}

// Ties each output of a step to the block holding its bytes: a block the kernel just took
// from the pool, or (a view) the block of one of its inputs. Unclaimed fresh blocks were
// scratch and go straight back.
void PlanExecutor::claim_outputs(const PlanStep& step) {
  std::vector<Block*> fresh = pool_.take_fresh();
  for (int32_t out : step.outputs) {
    if (out < 0 || !slots_[out].set || slots_[out].tensor.raw() == nullptr) continue;
    const void* p = slots_[out].tensor.raw();
    Block* owner = nullptr;
    for (Block* b : fresh) {
      if (contains(b, p)) owner = b;
    }
    for (size_t i = 0; owner == nullptr && i < step.inputs.size(); ++i) {
      if (step.inputs[i] >= 0 && contains(slots_[step.inputs[i]].block, p)) {
        owner = slots_[step.inputs[i]].block;
      }
    }
    slots_[out].block = owner;
    if (owner != nullptr) ++owner->refs;
  }
  for (Block* b : fresh) {
    if (b->refs == 0) pool_.release(b);
  }
}

void PlanExecutor::release(int32_t id) {
  Slot& slot = slots_[id];
  if (slot.block != nullptr && --slot.block->refs == 0) pool_.release(slot.block);
  slot = Slot{};
}

// Prefixes a kernel's error with the node's label unless it already starts with it.
Status labelled(const ir::Node& node, const Status& st) {
  if (st.is_ok() || st.message().starts_with(node.label())) return st;
  return Status(st.code(), fmt::format("{}: {}", node.label(), st.message()));
}

Status PlanExecutor::run_step(size_t s) {
  const PlanStep& step = plan_.steps[s];
  const ir::Node& node = graph_.nodes[step.node];
  std::vector<const ir::Tensor*> ins(step.inputs.size(), nullptr);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (step.inputs[i] >= 0) ins[i] = &slots_[step.inputs[i]].tensor;
  }
  std::vector<ir::Tensor> outs(step.outputs.size());
  Status st = kernels_[s]->run(ins, outs, pool_);
  for (size_t i = 0; i < outs.size(); ++i) {
    if (step.outputs[i] < 0) continue;
    Slot& slot = slots_[step.outputs[i]];
    slot.tensor = std::move(outs[i]);
    slot.set = !slot.tensor.empty();
  }
  claim_outputs(step);
  PTQ_RETURN_IF_ERROR(labelled(node, st));
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const int32_t id = step.outputs[i];
    if (id >= 0 && !slots_[id].set && (plan_.values[id].graph_output || any_wanted_[id])) {
      return runtime_error("{}: output '{}' was not produced", node.label(), plan_.values[id].name);
    }
  }
  return Status::ok();
}

std::optional<Epilogue> PlanExecutor::epilogue_of(const FusedChain& c) const {
  Epilogue e;
  if (c.residual >= 0) {
    if (!slots_[c.residual].set) return std::nullopt;
    e.residual = &slots_[c.residual].tensor;
  }
  e.activation = c.activation;
  if (c.activation == Epilogue::Activation::kClip) {
    const PlanStep& act = plan_.steps[static_cast<size_t>(c.act)];
    auto bound = [&](size_t i) -> const ir::Tensor* {
      const int32_t id = i < act.inputs.size() ? act.inputs[i] : -1;
      return id >= 0 && slots_[id].set ? &slots_[id].tensor : nullptr;
    };
    const auto b = clip_bounds(graph_.nodes[act.node], model_.opset(""), bound(1), bound(2));
    if (!b) return std::nullopt;
    e.lo = b->first;
    e.hi = b->second;
  }
  return e;
}

// The head's kernel with the epilogue, or (when it declines these inputs) the steps one by one.
Status PlanExecutor::run_chain(const FusedChain& c) {
  const PlanStep& head = plan_.steps[c.head];
  if (const std::optional<Epilogue> e = epilogue_of(c)) {
    std::vector<const ir::Tensor*> ins(head.inputs.size(), nullptr);
    for (size_t i = 0; i < ins.size(); ++i) {
      if (head.inputs[i] >= 0) ins[i] = &slots_[head.inputs[i]].tensor;
    }
    std::vector<ir::Tensor> outs(head.outputs.size());
    const Expected<bool> done = kernels_[c.head]->run_fused(ins, outs, pool_, *e);
    if (!done.has_value() || *done) {
      Slot& slot = slots_[c.io.outputs[0]];
      slot.tensor = std::move(outs[0]);
      slot.set = !slot.tensor.empty();
      claim_outputs(c.io);
      const ir::Node& node = graph_.nodes[head.node];
      if (!done.has_value()) return labelled(node, done.status());
      if (!slot.set) return runtime_error("{}: fused output '{}' was not produced", node.label(),
                                          plan_.values[c.io.outputs[0]].name);
      fused_ += static_cast<int64_t>(c.steps().size()) - 1;
      return Status::ok();
    }
    for (Block* b : pool_.take_fresh()) pool_.release(b);  // a declining kernel takes nothing
  }
  for (size_t s : c.steps()) PTQ_RETURN_IF_ERROR(run_step(s));
  for (int32_t id : c.hidden) release(id);
  return Status::ok();
}

// The substitute, on inputs it takes; otherwise (another dtype) the steps one by one.
Status PlanExecutor::run_rewrite(const Rewrite& r) {
  std::vector<const ir::Tensor*> ins(r.io.inputs.size(), nullptr);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (r.io.inputs[i] >= 0) ins[i] = &slots_[r.io.inputs[i]].tensor;
  }
  if (!substitute_takes(ins)) {
    for (size_t s : r.steps) PTQ_RETURN_IF_ERROR(run_step(s));
    for (int32_t id : r.hidden) release(id);
    return Status::ok();
  }
  std::vector<ir::Tensor> outs(1);
  const Status st = r.kernel->run(ins, outs, pool_);
  Slot& slot = slots_[r.io.outputs[0]];
  slot.tensor = std::move(outs[0]);
  slot.set = !slot.tensor.empty();
  claim_outputs(r.io);
  PTQ_RETURN_IF_ERROR(labelled(*r.node, st));
  if (!slot.set) return runtime_error("{}: output was not produced", r.node->label());
  rewritten_ += static_cast<int64_t>(r.steps.size());
  return Status::ok();
}

// The rewrites and chains this run can use (none hides a value an observer wants; a rewrite
// that rounds otherwise feeds none either), and its order.
void PlanExecutor::choose_schedule() {
  std::vector<bool> taken(plan_.steps.size(), false);
  std::vector<int32_t> used = pick_rewrites(plan_, rewrites_, any_wanted_, taken);
  std::vector<int32_t> active = pick_chains(plan_, chains_, any_wanted_, std::move(taken));
  if (scheduled_ && active == active_ && used == used_) return;
  schedule_ = make_schedule(plan_, chains_, active, rewrites_, used);
  active_ = std::move(active);
  used_ = std::move(used);
  scheduled_ = true;
}

// PTQ_CPU_TIMING: schedule item i ran from t0 to t1 (a chain is named by its head node, a
// rewrite by its substitute).
void PlanExecutor::note_time(size_t i, TimePoint t0, TimePoint t1) {
  const ScheduleItem& item = schedule_[i];
  if (item.rewrite >= 0) {
    const ir::Node& node = *rewrites_[item.rewrite].node;
    times_.add(i, schedule_.size(), node.label(), node.op_type, t0, t1);
    return;
  }
  const bool alone = item.step >= 0;
  const size_t head = alone ? static_cast<size_t>(item.step) : chains_[item.chain].head;
  const ir::Node& node = graph_.nodes[plan_.steps[head].node];
  times_.add(i, schedule_.size(), node.label() + (alone ? "" : " (fused)"), node.op_type, t0, t1);
}

// The shapes of the values a chain or rewrite did not make, from its output's.
void PlanExecutor::note_hidden_shapes(const ScheduleItem& item) {
  if (item.chain >= 0) {
    const FusedChain& c = chains_[item.chain];
    for (int32_t id : c.hidden) note_shape(id, c.io.outputs[0]);
    return;
  }
  const Rewrite& r = rewrites_[item.rewrite];
  const int32_t out = r.io.outputs[0];
  for (int32_t id : r.hidden) {
    note_shape(id, out);
    const bool reduced = std::find(r.reduced.begin(), r.reduced.end(), id) != r.reduced.end();
    if (!reduced || !shaped_[id]) continue;
    ir::Shape& s = shapes_[id];
    const int64_t rank = static_cast<int64_t>(s.size());
    for (int64_t a = std::max<int64_t>(rank + r.reduced_axis, 0); a < rank; ++a) s[a] = 1;
  }
}

// Keeps the shape of value `like` (set in this run) as `id`'s.
void PlanExecutor::note_shape(int32_t id, int32_t like) {
  if (id < 0 || like < 0 || !slots_[like].set) return;
  const ir::Shape& s = slots_[like].tensor.shape();
  shapes_[id].assign(s.begin(), s.end());  // no allocation once a run has sized it
  shaped_[id] = 1;
}

std::vector<std::pair<std::string, ir::Shape>> PlanExecutor::value_shapes() const {
  std::vector<std::pair<std::string, ir::Shape>> out;
  for (size_t id = 0; id < shaped_.size(); ++id) {
    if (shaped_[id]) out.emplace_back(plan_.values[id].name, shapes_[id]);
  }
  return out;
}

void PlanExecutor::clear() {
  for (size_t id = 0; id < slots_.size(); ++id) {
    if (slots_[id].set || slots_[id].block != nullptr) release(static_cast<int32_t>(id));
  }
}

// What the pool's plan depends on: the element type and shape of every fed input, and the
// chains in use (they change which buffers a run asks for and when).
std::vector<int64_t> PlanExecutor::pool_key() const {
  std::vector<int64_t> key;
  for (int32_t id : plan_.real_inputs) {
    const ir::Tensor& t = slots_[id].tensor;
    key.push_back(static_cast<int64_t>(t.dtype()));
    key.push_back(static_cast<int64_t>(t.rank()));
    key.insert(key.end(), t.shape().begin(), t.shape().end());
  }
  key.push_back(-1);
  key.insert(key.end(), active_.begin(), active_.end());
  key.push_back(-1);
  key.insert(key.end(), used_.begin(), used_.end());
  return key;
}

Expected<NamedTensors> PlanExecutor::run_reusing(const NamedTensors& inputs, NamedTensors reuse,
                                                 std::span<Observer* const> observers) {
  slots_.assign(plan_.values.size(), Slot{});
  shapes_.resize(plan_.values.size());
  shaped_.assign(plan_.values.size(), 0);
  fused_ = 0;
  rewritten_ = 0;
  bool began = false;
  Status st = [&]() -> Status {
    PTQ_RETURN_IF_ERROR(bind_inputs(inputs));
    PTQ_RETURN_IF_ERROR(prepare_observers(observers));
    choose_schedule();
    pool_.begin_run(pool_key());
    began = true;
    for (int32_t id : plan_.real_inputs) note_shape(id, id);
    for (int32_t id : folded_) note_shape(id, id);
    for (int32_t id : plan_.real_inputs) PTQ_RETURN_IF_ERROR(observe(id, observers));
    for (int32_t id : plan_.constants) PTQ_RETURN_IF_ERROR(observe(id, observers));
    for (size_t i = 0; i < schedule_.size(); ++i) {
      const ScheduleItem& item = schedule_[i];
      const bool alone = item.step >= 0;
      const auto t0 = times_.on() ? std::chrono::steady_clock::now() : TimePoint{};
      if (alone) {
        PTQ_RETURN_IF_ERROR(run_step(static_cast<size_t>(item.step)));
      } else if (item.chain >= 0) {
        PTQ_RETURN_IF_ERROR(run_chain(chains_[item.chain]));
      } else {
        PTQ_RETURN_IF_ERROR(run_rewrite(rewrites_[item.rewrite]));
      }
      const auto t1 = times_.on() ? std::chrono::steady_clock::now() : TimePoint{};
      const PlanStep& io = alone             ? plan_.steps[item.step]
                           : item.chain >= 0 ? chains_[item.chain].io
                                             : rewrites_[item.rewrite].io;
      for (int32_t id : io.outputs) note_shape(id, id);
      if (!alone) note_hidden_shapes(item);
      for (int32_t id : io.outputs) PTQ_RETURN_IF_ERROR(observe(id, observers));
      for (int32_t id : item.release) release(id);
      if (times_.on()) note_time(i, t0, t1);
    }
    if (times_.on()) times_.end_run();
    return Status::ok();
  }();
  stats_ = RunStats{weight_bytes_, pool_.peak_bytes(), pool_.pool_bytes(),
                    static_cast<int64_t>(plan_.steps.size()), fused_, rewritten_,
                    exec_graph_.folded_nodes};
  if (!st.is_ok()) {
    clear();
    if (began) pool_.end_run(false);
    return st;
  }
  NamedTensors result;
  result.reserve(plan_.outputs.size());
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    const int32_t id = plan_.outputs[i];
    ir::Tensor spent = i < reuse.size() ? std::move(reuse[i].second) : ir::Tensor();
    result.emplace_back(plan_.values[id].name, ir::copy_into(slots_[id].tensor, std::move(spent)));
  }
  clear();
  pool_.end_run(true);
  return result;
}

}  // namespace

namespace {

// The graph's ops and those of its subgraphs, at any depth.
void add_unsupported(const ir::Graph& graph, int64_t opset, const Backend& backend,
                     std::set<std::string>& missing) {
  for (const ir::Node& node : graph.nodes) {
    if (!backend.supports(node, opset)) {
      missing.insert(node.in_default_domain() ? node.op_type : node.domain + "." + node.op_type);
    }
    for (const ir::Attribute& a : node.attributes) {
      if (a.g) add_unsupported(*a.g, opset, backend, missing);
      for (const auto& g : a.graphs) add_unsupported(*g, opset, backend, missing);
    }
  }
}

}  // namespace

std::vector<std::string> unsupported_ops(const ir::Model& model, const Backend& backend) {
  std::set<std::string> missing;
  add_unsupported(model.graph, model.opset(""), backend, missing);
  return {missing.begin(), missing.end()};
}

Expected<std::unique_ptr<Executor>> Executor::create(const ir::Model& model, Backend& backend,
                                                     ExecutorOptions options) {
  const std::vector<std::string> missing = unsupported_ops(model, backend);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& op : missing) list += (list.empty() ? "" : ", ") + op;
    return invalid_input("the {} backend cannot run these ops of the model: {}", backend.name(),
                         list);
  }
  const int64_t opset = model.opset("");
  if (opset <= 0) return invalid_input("the model imports no default-domain (ai.onnx) opset");
  options.threads = std::max(options.threads, 1);
  ExecGraph exec{&model.graph, nullptr, {}, 0};
  if (options.optimize) exec = fold_constants(model, backend, options.threads);
  const ir::Graph& graph = *exec.graph;
  PTQ_ASSIGN_OR_RETURN(Plan plan, build_plan(graph));
  std::vector<std::unique_ptr<Kernel>> kernels;
  kernels.reserve(plan.steps.size());
  for (const PlanStep& step : plan.steps) {
    // Kernels see the model's initializers only: one packing a folded weight would sum in
    // another order than the unoptimized run, and folding must not change a value's bytes.
    KernelContext ctx{graph.nodes[step.node], opset, options.threads, &model.graph};
    PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> k, backend.create_kernel(ctx));
    kernels.push_back(std::move(k));
  }
  std::vector<FusedChain> chains;
  if (options.fuse) chains = find_chains(plan, graph, kernels);
  std::vector<Rewrite> rewrites;
  if (options.optimize) rewrites = find_rewrites(plan, graph, backend, opset, options.threads);
  return std::unique_ptr<Executor>(std::make_unique<PlanExecutor>(
      model, backend, options, std::move(exec), std::move(plan), std::move(kernels),
      std::move(chains), std::move(rewrites)));
}

}  // namespace ptq::runtime
