// Which value of the test model stands for each tensor of the reference model
// (include/ptq/compare.h, match_tensors).
//
// Matched by structure as well as by name: a Q/DQ writer keeps the float tensor's name on the
// tensor its QuantizeLinear reads and gives the DequantizeLinear's output a new one (ptqkit and
// ONNX Runtime both write `<tensor>_DequantizeLinear_Output`), so the DQ output reading
// Q(<tensor>) is what the quantized consumers see of <tensor>, whatever it is called.
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "ptq/compare.h"

namespace ptq::compare {

namespace {

bool is_op(const ir::Node& n, std::string_view op) {
  return n.op_type == op && n.in_default_domain();
}

// Initializers, Constant outputs and values computed from those alone.
std::unordered_set<std::string> constant_values(const ir::Graph& g,
                                                const std::vector<size_t>& order) {
  std::unordered_set<std::string> out;
  for (const ir::Initializer& i : g.initializers()) out.insert(i.name);
  for (size_t n : order) {
    const ir::Node& node = g.nodes[n];
    bool constant = is_op(node, "Constant");
    if (!constant && !node.inputs.empty()) {
      constant = true;
      for (const std::string& in : node.inputs)
        constant = constant && (in.empty() || out.count(in));
    }
    if (!constant) continue;
    for (const std::string& o : node.outputs) out.insert(o);
  }
  return out;
}

// For each non-constant tensor the test model quantizes: the first DequantizeLinear output
// reading a QuantizeLinear of it.
std::map<std::string, std::string> dequantized_values(const ir::Graph& g) {
  std::map<std::string, const ir::Node*> q_of_output;
  for (const ir::Node& n : g.nodes) {
    if (is_op(n, "QuantizeLinear") && !n.outputs.empty()) q_of_output[n.outputs[0]] = &n;
  }
  std::map<std::string, std::string> out;
  for (const ir::Node& n : g.nodes) {
    if (!is_op(n, "DequantizeLinear") || n.inputs.empty() || n.outputs.empty()) continue;
    auto q = q_of_output.find(n.inputs[0]);
    if (q == q_of_output.end() || q->second->inputs.empty()) continue;
    const std::string& tensor = q->second->inputs[0];
    if (g.initializer(tensor) != nullptr) continue;  // a weight
    out.emplace(tensor, n.outputs[0]);
  }
  return out;
}

std::unordered_set<std::string> computed_values(const ir::Graph& g) {
  std::unordered_set<std::string> out;
  for (const ir::ValueInfo* v : g.real_inputs()) out.insert(v->name);
  for (const ir::Node& n : g.nodes) {
    for (const std::string& o : n.outputs) {
      if (!o.empty()) out.insert(o);
    }
  }
  return out;
}

}  // namespace

Expected<std::vector<TensorPair>> match_tensors(const ir::Graph& reference, const ir::Graph& test) {
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::topological_order(reference));
  const std::unordered_set<std::string> constants = constant_values(reference, order);
  const std::map<std::string, std::string> dq = dequantized_values(test);
  const std::unordered_set<std::string> in_test = computed_values(test);
  std::vector<TensorPair> pairs;
  auto add = [&](const std::string& name, bool inputs_only) {
    if (name.empty() || constants.count(name)) return;
    if (auto it = dq.find(name); it != dq.end()) {
      pairs.push_back({name, it->second, true});
    } else if (!inputs_only && in_test.count(name)) {
      pairs.push_back({name, name, false});
    }
  };
  // A graph input is fed the same to both: only its dequantized value differs.
  for (const ir::ValueInfo* v : reference.real_inputs()) add(v->name, true);
  for (size_t n : order) {
    for (const std::string& o : reference.nodes[n].outputs) add(o, false);
  }
  if (pairs.empty()) {
    return invalid_input(
        "the models compute no tensor of the same name (nor a dequantized one standing for a "
        "tensor of the reference)");
  }
  return pairs;
}

}  // namespace ptq::compare
