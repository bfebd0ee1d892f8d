#include "fusion.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace ptq::runtime {

namespace {

using Activation = Epilogue::Activation;

struct Use {
  size_t step = 0, slot = 0;
};

// Every (step, input slot) reading each value.
std::vector<std::vector<Use>> uses_of(const Plan& plan) {
  std::vector<std::vector<Use>> uses(plan.values.size());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const std::vector<int32_t>& in = plan.steps[s].inputs;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] >= 0) uses[in[i]].push_back(Use{s, i});
    }
  }
  return uses;
}

bool is_op(const ir::Node& node, std::string_view op) {
  return node.op_type == op && node.in_default_domain();
}

// The one output of step s, when it has exactly one.
int32_t single_output(const PlanStep& step) {
  return step.outputs.size() == 1 ? step.outputs[0] : -1;
}

// The step reading `value` once and only there, when the value may disappear into a chain
// (no graph output, one reader, through one slot); else nullopt.
std::optional<Use> sole_use(const Plan& plan, const std::vector<std::vector<Use>>& uses,
                            int32_t value) {
  if (value < 0 || plan.values[value].graph_output || uses[value].size() != 1) return std::nullopt;
  return uses[value][0];
}

// The activation step reading `value` as its input 0, or nullopt.
std::optional<std::pair<size_t, Activation>> activation_after(
    const Plan& plan, const ir::Graph& graph, const std::vector<std::vector<Use>>& uses,
    int32_t value) {
  const std::optional<Use> u = sole_use(plan, uses, value);
  if (!u || u->slot != 0 || single_output(plan.steps[u->step]) < 0) return std::nullopt;
  const ir::Node& node = graph.nodes[plan.steps[u->step].node];
  if (is_op(node, "Relu")) return std::make_pair(u->step, Activation::kRelu);
  if (is_op(node, "Clip")) return std::make_pair(u->step, Activation::kClip);
  return std::nullopt;
}

// Fills in what a chain reads and writes.
FusedChain finish(const Plan& plan, FusedChain c) {
  const std::vector<size_t> steps = c.steps();
  c.io.node = plan.steps[c.head].node;
  for (size_t s : steps) {
    for (int32_t id : plan.steps[s].inputs) {
      if (id >= 0 && std::find(c.hidden.begin(), c.hidden.end(), id) == c.hidden.end()) {
        c.io.inputs.push_back(id);
      }
    }
  }
  c.io.outputs = {single_output(plan.steps[steps.back()])};
  return c;
}

// The chains starting at step `head`, longest first, that its kernel takes.
void chains_from(const Plan& plan, const ir::Graph& graph,
                 const std::vector<std::vector<Use>>& uses, size_t head, const Kernel& kernel,
                 std::vector<FusedChain>& out) {
  const int32_t y = single_output(plan.steps[head]);
  const std::optional<Use> u = sole_use(plan, uses, y);
  if (!u) return;
  const PlanStep& next = plan.steps[u->step];
  const ir::Node& node = graph.nodes[next.node];
  if (is_op(node, "Add") && next.inputs.size() == 2 && single_output(next) >= 0) {
    FusedChain c;
    c.head = head;
    c.add = static_cast<int64_t>(u->step);
    c.residual = next.inputs[1 - u->slot];
    if (c.residual < 0) return;
    const int32_t sum = single_output(next);
    if (auto act = activation_after(plan, graph, uses, sum);
        act && kernel.fuses(true, act->second)) {
      FusedChain longer = c;
      longer.act = static_cast<int64_t>(act->first);
      longer.activation = act->second;
      longer.hidden = {y, sum};
      out.push_back(finish(plan, std::move(longer)));
    }
    if (kernel.fuses(true, Activation::kNone)) {
      c.hidden = {y};
      out.push_back(finish(plan, std::move(c)));
    }
    return;
  }
  if (auto act = activation_after(plan, graph, uses, y); act && kernel.fuses(false, act->second)) {
    FusedChain c;
    c.head = head;
    c.act = static_cast<int64_t>(act->first);
    c.activation = act->second;
    c.hidden = {y};
    out.push_back(finish(plan, std::move(c)));
  }
}

}  // namespace

std::vector<size_t> FusedChain::steps() const {
  std::vector<size_t> s{head};
  if (add >= 0) s.push_back(static_cast<size_t>(add));
  if (act >= 0) s.push_back(static_cast<size_t>(act));
  return s;
}

std::vector<FusedChain> find_chains(const Plan& plan, const ir::Graph& graph,
                                    std::span<const std::unique_ptr<Kernel>> kernels) {
  const std::vector<std::vector<Use>> uses = uses_of(plan);
  std::vector<FusedChain> chains;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ir::Node& node = graph.nodes[plan.steps[s].node];
    if (is_op(node, "Conv") || is_op(node, "Gemm"))
      chains_from(plan, graph, uses, s, *kernels[s], chains);
  }
  return chains;
}

std::vector<int32_t> pick_chains(const Plan& plan, const std::vector<FusedChain>& chains,
                                 const std::vector<bool>& wanted, std::vector<bool> taken) {
  std::vector<int32_t> active;
  // Two chains can claim one Add (both its inputs come from a Conv): the first head keeps it.
  taken.resize(plan.steps.size(), false);
  for (size_t i = 0; i < chains.size(); ++i) {
    const FusedChain& c = chains[i];
    const std::vector<size_t> steps = c.steps();
    const bool seen =
        std::any_of(c.hidden.begin(), c.hidden.end(), [&](int32_t id) { return wanted[id]; });
    const bool clash = std::any_of(steps.begin(), steps.end(), [&](size_t s) { return taken[s]; });
    if (seen || clash) continue;
    for (size_t s : steps) taken[s] = true;
    active.push_back(static_cast<int32_t>(i));
  }
  return active;
}

namespace {

// A chain or rewrite waiting for its turn: the first plan step it replaces, what it reads and
// writes.
struct Group {
  ScheduleItem item;
  size_t first = 0;
  const PlanStep* io = nullptr;
};

std::vector<Group> groups_of(const std::vector<FusedChain>& chains,
                             const std::vector<int32_t>& active,
                             const std::vector<Rewrite>& rewrites,
                             const std::vector<int32_t>& used) {
  std::vector<Group> groups;
  for (int32_t c : active) {
    groups.push_back(Group{ScheduleItem{-1, c, -1, {}}, chains[c].head, &chains[c].io});
  }
  for (int32_t r : used) {
    const Rewrite& rw = rewrites[r];
    groups.push_back(Group{ScheduleItem{-1, -1, r, {}}, rw.steps.front(), &rw.io});
  }
  return groups;
}

// Items in plan order, each chain or rewrite once its first step's place has gone by and
// everything it reads exists. A chain's or rewrite's inner values have no reader outside it
// and its one output is made last, so running it as one node keeps the graph acyclic and
// every reader of its output still comes after it.
std::vector<ScheduleItem> order_items(const Plan& plan, const std::vector<FusedChain>& chains,
                                      const std::vector<int32_t>& active,
                                      const std::vector<Rewrite>& rewrites,
                                      const std::vector<int32_t>& used) {
  std::vector<bool> grouped(plan.steps.size(), false);
  for (int32_t c : active) {
    for (size_t s : chains[c].steps()) grouped[s] = true;
  }
  for (int32_t r : used) {
    for (size_t s : rewrites[r].steps) grouped[s] = true;
  }
  std::vector<bool> made(plan.values.size(), false);
  for (size_t id = 0; id < plan.values.size(); ++id) {
    made[id] = plan.values[id].kind != ValueKind::kActivation;
  }
  std::vector<Group> waiting = groups_of(chains, active, rewrites, used);
  std::vector<ScheduleItem> items;
  auto emit = [&](ScheduleItem item, const PlanStep& io) {
    for (int32_t id : io.outputs) {
      if (id >= 0) made[id] = true;
    }
    items.push_back(std::move(item));
  };
  size_t passed = 0;  // plan steps gone by: a group never runs before its first step's place
  auto flush = [&] {
    for (bool progress = true; progress;) {
      progress = false;
      for (auto it = waiting.begin(); it != waiting.end();) {
        const PlanStep& io = *it->io;
        auto ready = [&](int32_t id) { return id < 0 || made[id]; };
        if (it->first < passed && std::all_of(io.inputs.begin(), io.inputs.end(), ready)) {
          emit(std::move(it->item), io);
          it = waiting.erase(it);
          progress = true;
        } else {
          ++it;
        }
      }
    }
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (!grouped[s]) emit(ScheduleItem{static_cast<int64_t>(s), -1, -1, {}}, plan.steps[s]);
    passed = s + 1;
    flush();
  }
  return items;
}

}  // namespace

std::vector<ScheduleItem> make_schedule(const Plan& plan, const std::vector<FusedChain>& chains,
                                        const std::vector<int32_t>& active,
                                        const std::vector<Rewrite>& rewrites,
                                        const std::vector<int32_t>& used) {
  std::vector<ScheduleItem> items = order_items(plan, chains, active, rewrites, used);
  auto io = [&](const ScheduleItem& it) -> const PlanStep& {
    if (it.chain >= 0) return chains[it.chain].io;
    if (it.rewrite >= 0) return rewrites[it.rewrite].io;
    return plan.steps[it.step];
  };
  // A value dies after its last reader, or where it is made when nothing reads it.
  std::vector<int64_t> last(plan.values.size(), -1);
  for (size_t i = 0; i < items.size(); ++i) {
    for (int32_t id : io(items[i]).outputs) {
      if (id >= 0) last[id] = static_cast<int64_t>(i);
    }
  }
  for (size_t i = 0; i < items.size(); ++i) {
    for (int32_t id : io(items[i]).inputs) {
      if (id >= 0 && last[id] >= 0) last[id] = std::max(last[id], static_cast<int64_t>(i));
    }
  }
  for (size_t id = 0; id < plan.values.size(); ++id) {
    const PlanValue& v = plan.values[id];
    if (v.kind != ValueKind::kActivation || v.graph_output || last[id] < 0) continue;
    items[static_cast<size_t>(last[id])].release.push_back(static_cast<int32_t>(id));
  }
  return items;
}

std::optional<std::pair<float, float>> clip_bounds(const ir::Node& clip, int64_t opset,
                                                   const ir::Tensor* lo, const ir::Tensor* hi) {
  if (opset < 11) {
    return std::make_pair(clip.attr_float("min", std::numeric_limits<float>::lowest()),
                          clip.attr_float("max", std::numeric_limits<float>::max()));
  }
  std::pair<float, float> b{std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::max()};
  for (const ir::Tensor* t : {lo, hi}) {
    if (t != nullptr && (t->dtype() != ir::DType::kFloat32 || t->size() != 1)) return std::nullopt;
  }
  if (lo != nullptr) b.first = lo->data<float>()[0];
  if (hi != nullptr) b.second = hi->data<float>()[0];
  return b;
}

}  // namespace ptq::runtime
