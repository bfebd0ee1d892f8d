// plan(): runs the placement rules over the graph, joins scale groups, checks calibrated ranges
// and the unit selection, and gathers the result into a Plan.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "marking.h"
#include "options_match.h"

namespace ptq::planner {

namespace {

// Tensors joined through data-movement ops share one scale: union-find by name.
class UnionFind {
 public:
  const std::string& find(const std::string& x) {
    auto it = parent_.find(x);
    if (it == parent_.end()) it = parent_.emplace(x, x).first;
    if (it->second == x) return it->first;
    const std::string root = find(it->second);
    parent_[x] = root;
    return parent_.find(x)->second;
  }
  void unite(const std::string& a, const std::string& b) {
    const std::string ra = find(a);
    const std::string rb = find(b);
    if (ra != rb) parent_[ra] = rb;
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : parent_) out.push_back(k);
    return out;
  }

 private:
  std::unordered_map<std::string, std::string> parent_;
};

struct Analysis {
  Analysis(const ir::Graph& g, const PlanOptions& o) : view(g, &o.value_dims), marking(view, o) {}
  GraphView view;
  Marking marking;
  std::unordered_map<std::string, std::string> group_of;      // tensor -> group name
  std::map<std::string, std::vector<std::string>> members;    // group name -> tensors
};

void run_rules(Marking& m) {
  const std::vector<size_t>& order = m.view.order();
  for (size_t n : order) rule_weighted(m, n);
  for (size_t n : order) rule_add(m, n);
  // Pools, Concats and ORT propagation depend on each other's marks: repeat to a fixed point.
  for (size_t round = 0; round <= m.view.size(); ++round) {
    bool changed = false;
    for (size_t n : order) changed |= rule_pool(m, n);
    for (auto it = order.rbegin(); it != order.rend(); ++it) changed |= rule_concat(m, *it);
    if (m.is_target_ort()) {
      for (size_t n : order) {
        changed |= rule_ort_outputs(m, n);
        changed |= rule_ort_propagate(m, n);
      }
    }
    if (!changed) break;
  }
}

void build_groups(Analysis& a) {
  const GraphView& view = a.view;
  UnionFind uf;
  for (size_t n = 0; n < view.size(); ++n) {
    const ir::Node& node = view.node(n);
    if (!ir::is_data_movement(node) || a.marking.excluded[n] || node.outputs.empty()) continue;
    const bool split = ir::data_movement(node) == ir::DataMovement::kSplit;
    for (size_t slot : ir::data_inputs(node)) {
      const std::string& in = node.input(slot);
      if (!view.is_float_activation(in)) continue;
      if (split) {
        for (const std::string& out : node.outputs) {
          if (!out.empty()) uf.unite(in, out);
        }
      } else {
        uf.unite(in, node.outputs[0]);
      }
    }
  }
  for (const QuantEdge& e : a.marking.edges) {
    if (e.role == Role::kActivation) uf.find(e.tensor);
  }
  // A group is named after its earliest member (graph inputs, then outputs in node order).
  std::unordered_map<std::string, size_t> position;
  for (const ir::ValueInfo& v : view.graph().inputs) position.emplace(v.name, position.size());
  for (size_t n : view.order()) {
    for (const std::string& out : view.node(n).outputs) position.emplace(out, position.size());
  }
  auto pos = [&](const std::string& t) {
    auto it = position.find(t);
    return it == position.end() ? position.size() : it->second;
  };
  std::map<std::string, std::vector<std::string>> by_root;
  for (const std::string& t : uf.keys()) by_root[uf.find(t)].push_back(t);
  for (auto& [root, list] : by_root) {
    std::sort(list.begin(), list.end(), [&](const std::string& x, const std::string& y) {
      return std::make_pair(pos(x), x) < std::make_pair(pos(y), y);
    });
    for (const std::string& t : list) a.group_of[t] = list.front();
    a.members[list.front()] = list;
  }
}

Status check_model(const ir::Model& model, const PlanOptions& options) {
  PTQ_RETURN_IF_ERROR(options.validate());
  for (const ir::Node& node : model.graph.nodes) {
    if (!is_quantization_op(node)) continue;
    if (!options.requantize) {
      return invalid_input("model is already quantized ({}); set requantize to quantize it again",
                           node.label());
    }
    return invalid_input("model is already quantized ({}); strip_qdq() it before plan() "
                         "(quantize() does so with requantize)", node.label());
  }
  if (model.opset() < 13) PTQ_RETURN_IF_ERROR(check_opset_upgradable(model));
  return Status::ok();
}

Expected<std::unique_ptr<Analysis>> analyze(const ir::Model& model, const PlanOptions& options) {
  PTQ_RETURN_IF_ERROR(check_model(model, options));
  auto a = std::make_unique<Analysis>(model.graph, options);
  if (!a->view.sorted_ok()) {
    auto order = ir::topological_order(model.graph);
    return std::move(order).take_status();
  }
  PTQ_RETURN_IF_ERROR(apply_exclusions(a->marking));
  find_bn_folds(a->marking);
  run_rules(a->marking);
  build_groups(*a);
  return a;
}

ScaleGroup group_range(const std::string& name, const std::vector<std::string>& members,
                       const calib::CalibrationTable& table) {
  ScaleGroup g;
  g.name = name;
  g.members = members;
  g.range.min = std::numeric_limits<double>::quiet_NaN();
  g.range.max = std::numeric_limits<double>::quiet_NaN();
  for (const std::string& t : members) {
    const calib::TensorRange* r = table.find(t);
    if (!r || !std::isfinite(r->amax) || r->amax < 0) continue;
    if (!g.has_range) g.range.amax = r->amax;
    g.range.amax = std::max(g.range.amax, r->amax);
    g.has_range = true;
    g.range.count += r->count;
    if (std::isfinite(r->min))
      g.range.min = std::isnan(g.range.min) ? r->min : std::min(g.range.min, r->min);
    if (std::isfinite(r->max))
      g.range.max = std::isnan(g.range.max) ? r->max : std::max(g.range.max, r->max);
  }
  return g;
}

// Weight edges of one tensor must agree on the axis; when they do not, use one scale.
void settle_weight_axes(std::vector<QuantEdge>& edges, std::vector<std::string>& warnings) {
  std::map<std::string, std::set<int64_t>> axes;
  for (const QuantEdge& e : edges) {
    if (e.role == Role::kWeight) axes[e.tensor].insert(e.axis);
  }
  for (auto& [tensor, set] : axes) {
    if (set.size() < 2) continue;
    warnings.push_back(fmt::format(
        "weight '{}' is read along different channel axes; quantized per-tensor", tensor));
    for (QuantEdge& e : edges) {
      if (e.tensor == tensor && e.role == Role::kWeight) e.axis = -1;
    }
  }
}

void summarize(const Analysis& a, Plan& p) {
  std::map<std::string, TensorPlan> tensors;
  std::set<std::string> used_groups;
  for (const QuantEdge& e : p.edges) {
    TensorPlan& t = tensors[e.tensor];
    t.name = e.tensor;
    t.role = e.role;
    t.axis = e.axis;
    if (e.role == Role::kActivation) {
      t.scale_group = a.group_of.at(e.tensor);
      used_groups.insert(t.scale_group);
    }
    t.uses.emplace_back(e.node, e.input);
  }
  for (auto& [name, t] : tensors) p.tensors.push_back(std::move(t));
  for (ScaleGroup& g : p.groups) {
    if (used_groups.count(g.name)) continue;
    g.name.clear();
  }
  std::erase_if(p.groups, [](const ScaleGroup& g) { return g.name.empty(); });
}

// Each scale group of the analysis with its range from the table.
std::map<std::string, ScaleGroup> group_ranges(const Analysis& a,
                                               const calib::CalibrationTable& table) {
  std::map<std::string, ScaleGroup> groups;
  for (const auto& [name, list] : a.members) groups.emplace(name, group_range(name, list, table));
  return groups;
}

// The second step of plan(): the units options.only_units / skip_units select, their ranges
// checked, gathered into a Plan. Reads the analysis without changing it.
Expected<Plan> select(const Analysis& a, const ir::Model& model,
                      const std::map<std::string, ScaleGroup>& groups, const PlanOptions& options) {
  const Marking& m = a.marking;
  PTQ_RETURN_IF_ERROR(check_unit_names(m.units, options));
  Plan p;
  p.options = options;
  p.node_count = model.graph.nodes.size();
  p.warnings = m.warnings;
  std::vector<NodePlan> nodes = m.nodes;
  std::vector<Unit> units = m.units;
  auto has_range = [&](const std::string& t) { return groups.at(a.group_of.at(t)).has_range; };

  std::set<std::string> dropped;
  std::set<std::string> float_tensors;
  const std::set<std::string> only(options.only_units.begin(), options.only_units.end());
  const std::set<std::string> skip(options.skip_units.begin(), options.skip_units.end());
  for (const Unit& u : units) {
    NodePlan& node = nodes[u.anchor];
    if ((!only.empty() && !only.count(u.name)) || skip.count(u.name)) {
      dropped.insert(u.name);
      node.reason = "unit not selected (only_units / skip_units)";
      continue;
    }
    const auto required = m.required.find(u.name);
    if (required == m.required.end()) continue;
    for (size_t e : required->second) {
      const std::string& t = m.edges[e].tensor;
      if (has_range(t)) continue;
      float_tensors.insert(t);
      if (dropped.insert(u.name).second) {
        node.reason = fmt::format("no calibrated range for input '{}' (left float)", t);
      }
    }
  }
  if (options.require_shapes) {
    // Only a node that stays quantized after unit selection and range checks needs its dims.
    for (const UnresolvedDim& d : m.unresolved) {
      if (!dropped.count(nodes[d.node].unit)) return unresolved_error(a.view, options, d);
    }
  }
  for (QuantEdge e : m.edges) {
    std::erase_if(e.units, [&](const std::string& u) { return dropped.count(u) > 0; });
    if (e.units.empty()) continue;
    if (e.role == Role::kActivation && !has_range(e.tensor)) {
      float_tensors.insert(e.tensor);
      continue;
    }
    for (const std::string& u : e.units) {
      const Unit* unit = nullptr;
      for (const Unit& cand : units) {
        if (cand.name == u) unit = &cand;
      }
      if (unit && unit->anchor == e.node) nodes[e.node].quantized = true;
    }
    p.edges.push_back(std::move(e));
  }
  settle_weight_axes(p.edges, p.warnings);
  for (Unit& u : units) {
    std::set<std::string> ts;
    for (const QuantEdge& e : m.edges) {
      if (std::find(e.units.begin(), e.units.end(), u.name) != e.units.end()) ts.insert(e.tensor);
    }
    u.tensors.assign(ts.begin(), ts.end());
  }
  for (size_t c = 0; c < m.bn_of_conv.size(); ++c) {
    if (m.bn_of_conv[c] < 0 || !nodes[c].quantized || !options.fold_batchnorm) continue;
    const size_t bn = static_cast<size_t>(m.bn_of_conv[c]);
    p.folds.push_back({c, bn});
    nodes[bn].reason = fmt::format("folded into {}", model.graph.nodes[c].label());
  }
  for (const auto& [name, g] : groups) p.groups.push_back(g);
  p.nodes = std::move(nodes);
  p.units = std::move(units);
  p.float_tensors.assign(float_tensors.begin(), float_tensors.end());
  summarize(a, p);
  return p;
}

}  // namespace

Expected<Plan> plan(const ir::Model& model, const calib::CalibrationTable& table,
                    const PlanOptions& options) {
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Analysis> a, analyze(model, options));
  return select(*a, model, group_ranges(*a, table), options);
}

struct Planner::Impl {
  Impl(const ir::Model& m, PlanOptions o) : model(m), options(std::move(o)) {}
  const ir::Model& model;
  PlanOptions options;  // the analysis refers to these
  std::unique_ptr<Analysis> analysis;
  std::map<std::string, ScaleGroup> groups;
};

Planner::Planner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Planner::Planner(Planner&&) noexcept = default;
Planner& Planner::operator=(Planner&&) noexcept = default;
Planner::~Planner() = default;

Expected<Planner> Planner::create(const ir::Model& model, const calib::CalibrationTable& table,
                                  const PlanOptions& options) {
  auto impl = std::make_unique<Impl>(model, options);
  PTQ_ASSIGN_OR_RETURN(impl->analysis, analyze(model, impl->options));
  impl->groups = group_ranges(*impl->analysis, table);
  return Planner(std::move(impl));
}

Expected<Plan> Planner::plan(const std::vector<std::string>& only_units,
                             const std::vector<std::string>& skip_units) const {
  PlanOptions o = impl_->options;
  o.only_units = only_units;
  o.skip_units = skip_units;
  PTQ_RETURN_IF_ERROR(o.validate());
  return select(*impl_->analysis, impl_->model, impl_->groups, o);
}

Expected<std::vector<std::string>> quantizable_activations(const ir::Model& model,
                                                           const PlanOptions& options) {
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Analysis> a, analyze(model, options));
  std::set<std::string> out;
  for (const ir::ValueInfo* v : model.graph.real_inputs()) {
    if (a->view.is_float_activation(v->name)) out.insert(v->name);
  }
  for (const QuantEdge& e : a->marking.edges) {
    if (e.role != Role::kActivation) continue;
    for (const std::string& t : a->members.at(a->group_of.at(e.tensor))) out.insert(t);
  }
  return std::vector<std::string>(out.begin(), out.end());
}

Expected<std::vector<UnresolvedDim>> unresolved_dims(const ir::Model& model,
                                                     const PlanOptions& options) {
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<Analysis> a, analyze(model, options));
  return a->marking.unresolved;
}

bool has_quantization(const ir::Model& model) {
  return std::any_of(model.graph.nodes.begin(), model.graph.nodes.end(), is_quantization_op);
}

const TensorPlan* Plan::tensor(std::string_view name) const {
  for (const TensorPlan& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const NodePlan* Plan::node(std::string_view name) const {
  for (const NodePlan& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const ScaleGroup* Plan::group_of(std::string_view tensor) const {
  for (const ScaleGroup& g : groups) {
    if (std::find(g.members.begin(), g.members.end(), tensor) != g.members.end()) return &g;
  }
  return nullptr;
}

const Unit* Plan::unit(std::string_view name) const {
  for (const Unit& u : units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

}  // namespace ptq::planner
