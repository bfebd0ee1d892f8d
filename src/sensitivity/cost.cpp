#include "cost.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "ptq/ir/op_traits.h"

namespace ptq::sensitivity {

namespace {

using Dims = std::vector<int64_t>;

// What a part's values look like: initializers, shapes seen in a run, declarations, and the
// shapes of node outputs derived so far from their first inputs.
struct Shapes {
  const ir::Graph& g;
  const ir::Graph& types;
  const SeenShapes& seen;
  std::unordered_map<std::string, Dims> derived;

  // Known dims of a value (unknown ones as 1); nullopt when its rank is unknown.
  std::optional<Dims> of(const std::string& name) const {
    if (const ir::Tensor* t = g.initializer(name)) return t->shape();
    if (auto it = seen.find(name); it != seen.end()) return it->second;
    if (auto it = derived.find(name); it != derived.end()) return it->second;
    const ir::ValueInfo* vi = g.find_value_info(name);
    if (vi == nullptr || !vi->type.has_shape()) vi = types.find_value_info(name);
    if (vi == nullptr || !vi->type.has_shape()) return std::nullopt;
    Dims d;
    for (const ir::Dim& x : *vi->type.dims) {
      d.push_back(x.known() ? std::max<int64_t>(x.value, 1) : 1);
    }
    return d;
  }

  // The dims of a node's first output, or (unknown) those of its first input, remembered.
  std::optional<Dims> output_of(const ir::Node& n) {
    std::optional<Dims> d = of(n.outputs.front());
    if (!d && !n.inputs.empty() && !n.inputs.front().empty()) d = of(n.inputs.front());
    if (d) derived[n.outputs.front()] = *d;
    return d;
  }
};

double product(const std::optional<Dims>& d) {
  double n = 1.0;
  if (!d) return n;
  for (int64_t x : *d) n *= static_cast<double>(x);
  return n;
}

// Multiply-adds per output element of a weighted node (ir::op_traits); 1 for any other, or
// when the shapes the count needs are unknown.
double per_output(const ir::Node& n, const Shapes& shapes) {
  auto in = [&](size_t i) { return i < n.inputs.size() ? shapes.of(n.inputs[i]) : std::nullopt; };
  const std::optional<Dims> a = in(0);
  const std::optional<Dims> w = in(1);
  return ir::multiply_adds_per_output(n, a ? &*a : nullptr, w ? &*w : nullptr).value_or(1.0);
}

}  // namespace

std::vector<std::string> ShapeRecorder::wanted(const ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::Node& n : graph.nodes) {
    for (const std::string& out : n.outputs) {
      if (!out.empty()) names.push_back(out);
    }
  }
  return names;
}

Status ShapeRecorder::observe(const runtime::ObservedTensor& tensor) {
  seen_[tensor.name] = tensor.shape;
  return Status::ok();
}

double estimated_cost(const ir::Model& part, const ir::Graph& types, const SeenShapes& seen) {
  Shapes shapes{part.graph, types, seen, {}};
  double total = 0.0;
  for (const ir::Node& n : part.graph.nodes) {
    if (n.outputs.empty() || n.outputs.front().empty()) continue;
    total += product(shapes.output_of(n)) * per_output(n, shapes);
  }
  return total;
}

}  // namespace ptq::sensitivity
