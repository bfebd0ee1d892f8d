// BatchNormalization folding on the model (as TensorRT does before INT8): the conv's weights
// and bias absorb the BN's affine transform, so quantization sees the weights that run.
#include <algorithm>

#include <fmt/format.h>

#include "ptq/ir/op_traits.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/ir/subgraph.h"
#include "rewrite.h"

namespace ptq::planner {

namespace {

template <typename Fn>
void for_each_name(const ir::Graph& graph, Fn fn) {
  for (const auto* list : {&graph.inputs, &graph.outputs, &graph.value_info, &graph.inferred}) {
    for (const ir::ValueInfo& v : *list) fn(v.name);
  }
  for (const ir::Initializer& i : graph.initializers()) fn(i.name);
  for (const ir::Node& n : graph.nodes) {
    fn(n.name);
    for (const std::string& s : n.inputs) fn(s);
    for (const std::string& s : n.outputs) fn(s);
  }
}

}  // namespace

std::unordered_set<std::string> graph_names(const ir::Graph& graph) {
  std::unordered_set<std::string> names;
  for_each_name(graph, [&](const std::string& s) { names.insert(s); });
  return names;
}

NameSet::NameSet(const ir::Graph& graph, const std::unordered_set<std::string>* known)
    : known_(known) {
  for_each_name(graph, [&](const std::string& s) {
    if (known_ == nullptr || !known_->contains(s)) used_.insert(s);
  });
}

std::string NameSet::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = fmt::format("{}_{}", base, i);
  used_.insert(name);
  return name;
}

const ir::Tensor* find_constant(const ir::Graph& graph, std::string_view name) {
  if (const ir::Tensor* t = graph.initializer(name)) return t;
  for (const ir::Node& n : graph.nodes) {
    if (n.op_type != "Constant" || n.outputs.empty() || n.outputs[0] != name) continue;
    const ir::Attribute* a = n.attr("value");
    return a && a->type == ir::AttrType::kTensor ? &a->t : nullptr;
  }
  return nullptr;
}

size_t count_uses(const ir::Graph& graph, std::string_view name, const std::vector<bool>& dead) {
  size_t count = graph.is_graph_output(name) ? 1 : 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (n < dead.size() && dead[n]) continue;
    for (const std::string& in : graph.nodes[n].inputs) count += in == name ? 1 : 0;
    // A subgraph (If, Loop, Scan) reading it from here is a use too.
    for (const std::string& in : ir::outer_scope_values(graph.nodes[n])) {
      count += in == name ? 1 : 0;
    }
  }
  return count;
}

namespace {

// Stores `value` as `name` in place when the conv is its only reader and it is an initializer;
// otherwise under a fresh name. Returns the name the conv must read.
std::string store(ir::Graph& graph, const std::string& name, const std::string& fresh_base,
                  ir::Tensor value, NameSet& names, const std::vector<bool>& dead,
                  std::set<std::string>& replaced) {
  if (!name.empty() && graph.initializer(name) && count_uses(graph, name, dead) == 1) {
    graph.set_initializer(name, std::move(value));
    return name;
  }
  if (!name.empty()) replaced.insert(name);
  std::string fresh = names.fresh(fresh_base);
  graph.add_initializer(fresh, std::move(value));
  return fresh;
}

}  // namespace

Status fold_batchnorms(ir::Graph& graph, const Plan& plan, NameSet& names, std::vector<bool>& dead,
                       std::set<std::string>& replaced, std::vector<std::string>& gone_values) {
  for (const BnFold& f : plan.folds) {
    ir::Node& conv = graph.nodes[f.conv];
    const ir::Node& bn = graph.nodes[f.bn];
    const ir::WeightedOp* op = ir::weighted_op(conv);
    if (!ir::is_convolution(conv) || op->bias_slot < 0) {
      return invalid_input("cannot fold {} into {}: not a convolution", bn.label(), conv.label());
    }
    const size_t wslot = op->weight_slot;
    const size_t bslot = static_cast<size_t>(op->bias_slot);
    const std::string wname = conv.input(wslot);
    const std::string bname = conv.input(bslot);
    const ir::Tensor* w = find_constant(graph, wname);
    const ir::Tensor* b = bname.empty() ? nullptr : find_constant(graph, bname);
    std::vector<const ir::Tensor*> params;
    for (size_t i = 1; i < 5; ++i) params.push_back(find_constant(graph, bn.input(i)));
    if (!w || (!bname.empty() && !b) ||
        std::find(params.begin(), params.end(), nullptr) != params.end()) {
      return invalid_input("cannot fold {} into {}: a parameter is not constant", bn.label(),
                           conv.label());
    }
    ir::Tensor weight = ir::owned_copy(*w);
    ir::Tensor bias = b ? ir::owned_copy(*b) : ir::Tensor();
    PTQ_RETURN_IF_ERROR(fold_batchnorm_into(weight, bias, *params[0], *params[1], *params[2],
                                            *params[3], bn.attr_float("epsilon", 1e-5f),
                                            op->layout == ir::WeightLayout::kConvTransposed,
                                            conv.attr_int("group", 1)));
    const std::string new_w =
        store(graph, wname, wname + "_folded", std::move(weight), names, dead, replaced);
    const std::string new_b = store(graph, bname, (bname.empty() ? wname : bname) + "_folded",
                                    std::move(bias), names, dead, replaced);
    conv.inputs.resize(std::max(conv.inputs.size(), bslot + 1));
    conv.inputs[wslot] = new_w;
    conv.inputs[bslot] = new_b;
    gone_values.push_back(conv.outputs[0]);
    conv.outputs[0] = bn.outputs[0];
    dead[f.bn] = true;
    for (size_t i = 1; i < 5; ++i) replaced.insert(bn.input(i));
  }
  return Status::ok();
}

}  // namespace ptq::planner
