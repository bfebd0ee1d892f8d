// The optimizer's rewrites (optimizer.h): patterns' candidates checked, their substitutes made,
// and the choice per run.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "optimizer.h"
#include "rewrite_match.h"

namespace ptq::runtime {

Matcher::Matcher(const Plan& plan, const ir::Graph& graph)
    : plan_(plan), graph_(graph), readers_(plan.values.size()) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    for (int32_t id : plan.steps[s].inputs) {
      if (id >= 0 && (readers_[id].empty() || readers_[id].back() != s)) readers_[id].push_back(s);
    }
  }
}

bool Matcher::is(size_t step, std::string_view op) const {
  const ir::Node& n = node(step);
  return n.op_type == op && n.in_default_domain();
}

int32_t Matcher::in(size_t step, size_t i) const {
  const std::vector<int32_t>& ins = plan_.steps[step].inputs;
  return i < ins.size() ? ins[i] : -1;
}

int32_t Matcher::out(size_t step) const {
  const std::vector<int32_t>& outs = plan_.steps[step].outputs;
  return outs.size() == 1 ? outs[0] : -1;
}

std::optional<size_t> Matcher::made_by(int32_t value, std::string_view op) const {
  if (value < 0 || plan_.values[value].producer_step < 0) return std::nullopt;
  const auto step = static_cast<size_t>(plan_.values[value].producer_step);
  if (!is(step, op) || out(step) != value) return std::nullopt;
  return step;
}

std::optional<size_t> Matcher::only_reader(int32_t value, std::string_view op) const {
  if (value < 0 || plan_.values[value].graph_output || readers_[value].size() != 1)
    return std::nullopt;
  const size_t step = readers_[value][0];
  if (!is(step, op) || out(step) < 0) return std::nullopt;
  return step;
}

int32_t Matcher::other(size_t step, int32_t value) const {
  const std::vector<int32_t>& ins = plan_.steps[step].inputs;
  if (ins.size() != 2 || value < 0 || ins[0] == ins[1]) return -1;
  if (ins[0] == value) return ins[1];
  if (ins[1] == value) return ins[0];
  return -1;
}

const ir::Tensor* Matcher::constant(int32_t value) const {
  if (value < 0 || plan_.values[value].kind != ValueKind::kConstant) return nullptr;
  return plan_.values[value].constant;
}

std::optional<double> Matcher::scalar(int32_t value) const {
  const ir::Tensor* t = constant(value);
  if (t == nullptr || t->dtype() != ir::DType::kFloat32 || t->size() != 1 || t->rank() > 1) {
    return std::nullopt;
  }
  return static_cast<double>(t->data<float>()[0]);
}

std::optional<size_t> Matcher::with_constant(int32_t value, std::string_view op,
                                             double want) const {
  const std::optional<size_t> s = only_reader(value, op);
  if (!s) return std::nullopt;
  // Sub and Div are not commutative: the value must come first.
  if ((op == "Sub" || op == "Div") && in(*s, 0) != value) return std::nullopt;
  const std::optional<double> c = scalar(other(*s, value));
  if (!c || std::abs(*c - want) > 1e-6 * std::max(1.0, std::abs(want))) return std::nullopt;
  return s;
}

std::optional<size_t> Matcher::scaled(int32_t value, double factor) const {
  if (std::optional<size_t> s = with_constant(value, "Mul", factor)) return s;
  return with_constant(value, "Div", 1.0 / factor);
}

namespace {

// Whether a candidate stands alone: every value its steps make but the output is read only
// by its steps and is no graph output, and the output is made by one of them.
bool self_contained(const Plan& plan, const Candidate& c, std::vector<int32_t>& hidden) {
  std::vector<bool> inside(plan.steps.size(), false);
  for (size_t s : c.steps) inside[s] = true;
  bool made = false;
  for (size_t s : c.steps) {
    for (int32_t id : plan.steps[s].outputs) {
      if (id == c.output) {
        made = true;
        continue;
      }
      if (id < 0) continue;
      if (plan.values[id].graph_output) return false;
      hidden.push_back(id);
    }
  }
  for (size_t s = 0; s < plan.steps.size() && made; ++s) {
    if (inside[s]) continue;
    for (int32_t id : plan.steps[s].inputs) {
      if (std::find(hidden.begin(), hidden.end(), id) != hidden.end()) return false;
    }
  }
  return made;
}

// The value id of a constant a candidate brings, added to the plan.
int32_t add_constant(Plan& plan, std::string name, ir::Tensor value) {
  const auto id = static_cast<int32_t>(plan.values.size());
  plan.node_constants.push_back(std::make_unique<ir::Tensor>(std::move(value)));
  PlanValue v;
  v.name = name;
  v.kind = ValueKind::kConstant;
  v.constant = plan.node_constants.back().get();
  plan.values.push_back(std::move(v));
  plan.ids.emplace(std::move(name), id);
  plan.constants.push_back(id);
  return id;
}

// The rewrite of a candidate, or nullopt where its inner values leak or the backend has no
// kernel for the substitute.
std::optional<Rewrite> make_rewrite(Plan& plan, const ir::Graph& graph, Candidate c,
                                    Backend& backend, int64_t opset, int threads) {
  std::sort(c.steps.begin(), c.steps.end());
  c.steps.erase(std::unique(c.steps.begin(), c.steps.end()), c.steps.end());
  Rewrite r;
  if (!self_contained(plan, c, r.hidden)) return std::nullopt;
  const ir::Node& last = graph.nodes[plan.steps[c.steps.back()].node];
  c.node.name = fmt::format("{} (rewritten from {} nodes)", last.name, c.steps.size());
  c.node.outputs = {plan.values[c.output].name};
  if (!backend.supports(c.node, opset)) return std::nullopt;
  for (auto& [name, value] : c.constants) {
    if (plan.id(name) < 0) add_constant(plan, name, std::move(value));
  }
  for (const std::string& in : c.node.inputs) r.io.inputs.push_back(in.empty() ? -1 : plan.id(in));
  r.io.outputs = {c.output};
  r.io.node = plan.steps[c.steps.back()].node;
  r.steps = std::move(c.steps);
  r.reduced = std::move(c.reduced);
  r.reduced_axis = c.reduced_axis;
  r.exact = c.exact;
  r.node = std::make_unique<ir::Node>(std::move(c.node));
  // No graph: a substitute packs no constant (see ExecGraph on why kernels see no folded one).
  KernelContext ctx{*r.node, opset, threads, nullptr};
  Expected<std::unique_ptr<Kernel>> kernel = backend.create_kernel(ctx);
  if (!kernel) return std::nullopt;
  r.kernel = std::move(*kernel);
  return r;
}

}  // namespace

std::vector<Rewrite> find_rewrites(Plan& plan, const ir::Graph& graph, Backend& backend,
                                   int64_t opset, int threads) {
  std::vector<Candidate> candidates;
  find_candidates(Matcher(plan, graph), opset, candidates);
  std::vector<Rewrite> rewrites;
  for (Candidate& c : candidates) {
    std::optional<Rewrite> r = make_rewrite(plan, graph, std::move(c), backend, opset, threads);
    if (r) rewrites.push_back(std::move(*r));
  }
  return rewrites;
}

namespace {

// The values a wanted value is computed from (and the wanted ones): a value rounded otherwise
// would reach an observer through them.
std::vector<bool> feeding(const Plan& plan, const std::vector<bool>& wanted) {
  std::vector<bool> feeds = wanted;
  for (size_t s = plan.steps.size(); s-- > 0;) {
    const PlanStep& step = plan.steps[s];
    if (std::none_of(step.outputs.begin(), step.outputs.end(),
                     [&](int32_t id) { return id >= 0 && feeds[id]; })) {
      continue;
    }
    for (int32_t id : step.inputs) {
      if (id >= 0) feeds[id] = true;
    }
  }
  return feeds;
}

}  // namespace

std::vector<int32_t> pick_rewrites(const Plan& plan, const std::vector<Rewrite>& rewrites,
                                   const std::vector<bool>& wanted, std::vector<bool>& taken) {
  std::vector<int32_t> used;
  const bool any = std::find(wanted.begin(), wanted.end(), true) != wanted.end();
  const std::vector<bool> feeds = any ? feeding(plan, wanted) : wanted;
  for (size_t i = 0; i < rewrites.size(); ++i) {
    const Rewrite& r = rewrites[i];
    if (std::any_of(r.steps.begin(), r.steps.end(), [&](size_t s) { return taken[s]; }) ||
        std::any_of(r.hidden.begin(), r.hidden.end(), [&](int32_t id) { return wanted[id]; }) ||
        (!r.exact && feeds[r.io.outputs[0]])) {
      continue;
    }
    for (size_t s : r.steps) taken[s] = true;
    used.push_back(static_cast<int32_t>(i));
  }
  return used;
}

bool substitute_takes(std::span<const ir::Tensor* const> inputs) {
  return !inputs.empty() && inputs[0] != nullptr && inputs[0]->dtype() == ir::DType::kFloat32 &&
         inputs[0]->rank() >= 1;
}

}  // namespace ptq::runtime
