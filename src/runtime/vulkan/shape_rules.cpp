// The rules follow the ONNX operator definitions (and the CPU kernels, which the declared-shape
// tests check them against on the test models). Ops without a rule here run on stand-ins.
#include "shape_rules.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "ptq/runtime/op_attrs.h"

namespace ptq::vulkan {

namespace {

enum class Rule {
  kSame,        // output 0 has input 0's type (unary, normalizations, Softmax, PRelu, Clip)
  kSameBool,    // input 0's shape, bool (Not, IsNaN, IsInf)
  kBroadcast,   // every input broadcast, input 0's dtype
  kCompare,     // every input broadcast, bool
  kWhere,       // every input broadcast, input 1's dtype
  kMatMul,
  kGemm,
  kConv,
  kGlobalPool,  // every spatial dim 1
  kReduce,
  kFlatten,
  kReshape,
  kSlice,
  kConcat,
  kGather,
  kPad,
  kTranspose,
  kCast,
};

const std::unordered_map<std::string_view, Rule>& rules() {
  static const std::unordered_map<std::string_view, Rule> kRules = {
      {"Relu", Rule::kSame}, {"LeakyRelu", Rule::kSame}, {"Sigmoid", Rule::kSame},
      {"Tanh", Rule::kSame}, {"Erf", Rule::kSame}, {"Exp", Rule::kSame}, {"Log", Rule::kSame},
      {"Sqrt", Rule::kSame}, {"Neg", Rule::kSame}, {"Abs", Rule::kSame},
      {"Reciprocal", Rule::kSame}, {"Floor", Rule::kSame}, {"Ceil", Rule::kSame},
      {"Round", Rule::kSame}, {"Sign", Rule::kSame}, {"Softplus", Rule::kSame},
      {"Softsign", Rule::kSame}, {"Elu", Rule::kSame}, {"Selu", Rule::kSame},
      {"Celu", Rule::kSame}, {"HardSigmoid", Rule::kSame}, {"HardSwish", Rule::kSame},
      {"Gelu", Rule::kSame}, {"Mish", Rule::kSame}, {"Sin", Rule::kSame}, {"Cos", Rule::kSame},
      {"Softmax", Rule::kSame}, {"LogSoftmax", Rule::kSame}, {"Hardmax", Rule::kSame},
      {"LayerNormalization", Rule::kSame}, {"InstanceNormalization", Rule::kSame},
      {"LpNormalization", Rule::kSame}, {"BatchNormalization", Rule::kSame},
      {"Clip", Rule::kSame}, {"PRelu", Rule::kSame}, {"Identity", Rule::kSame},
      {"Not", Rule::kSameBool}, {"IsNaN", Rule::kSameBool}, {"IsInf", Rule::kSameBool},
      {"Add", Rule::kBroadcast}, {"Sub", Rule::kBroadcast}, {"Mul", Rule::kBroadcast},
      {"Div", Rule::kBroadcast}, {"Pow", Rule::kBroadcast}, {"Mod", Rule::kBroadcast},
      {"Max", Rule::kBroadcast}, {"Min", Rule::kBroadcast}, {"Sum", Rule::kBroadcast},
      {"Mean", Rule::kBroadcast}, {"Equal", Rule::kCompare}, {"Less", Rule::kCompare},
      {"Greater", Rule::kCompare}, {"LessOrEqual", Rule::kCompare},
      {"GreaterOrEqual", Rule::kCompare}, {"And", Rule::kCompare}, {"Or", Rule::kCompare},
      {"Xor", Rule::kCompare}, {"Where", Rule::kWhere}, {"MatMul", Rule::kMatMul},
      {"Transpose", Rule::kTranspose}, {"Cast", Rule::kCast}, {"Gemm", Rule::kGemm},
      {"Conv", Rule::kConv}, {"GlobalAveragePool", Rule::kGlobalPool},
      {"GlobalMaxPool", Rule::kGlobalPool}, {"ReduceSum", Rule::kReduce},
      {"ReduceMean", Rule::kReduce}, {"ReduceMax", Rule::kReduce}, {"ReduceMin", Rule::kReduce},
      {"ReduceProd", Rule::kReduce}, {"ReduceL1", Rule::kReduce}, {"ReduceL2", Rule::kReduce},
      {"ReduceLogSum", Rule::kReduce}, {"ReduceLogSumExp", Rule::kReduce},
      {"ReduceSumSquare", Rule::kReduce}, {"Flatten", Rule::kFlatten},
      {"Reshape", Rule::kReshape}, {"Slice", Rule::kSlice}, {"Dropout", Rule::kSame},
      {"Concat", Rule::kConcat}, {"Gather", Rule::kGather}, {"Pad", Rule::kPad},
  };
  return kRules;
}

// Multidirectional (numpy) broadcasting of `b` into `a`; false when a pair of dims differs and
// neither is 1.
bool broadcast_into(ir::Shape& a, const ir::Shape& b) {
  if (b.size() > a.size()) a.insert(a.begin(), b.size() - a.size(), 1);
  const size_t off = a.size() - b.size();
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t& d = a[off + i];
    if (d == b[i] || b[i] == 1) continue;
    if (d != 1) return false;
    d = b[i];
  }
  return true;
}

std::optional<ir::Shape> broadcast_all(std::span<const InputType> inputs) {
  ir::Shape out;
  for (const InputType& in : inputs) {
    if (in.fact == nullptr || !broadcast_into(out, in.fact->shape)) return std::nullopt;
  }
  return out;
}

std::optional<ir::Shape> matmul_shape(ir::Shape a, ir::Shape b) {
  if (a.empty() || b.empty()) return std::nullopt;
  const bool vec_a = a.size() == 1, vec_b = b.size() == 1;
  if (vec_a) a.insert(a.begin(), 1);
  if (vec_b) b.push_back(1);
  if (a.back() != b[b.size() - 2]) return std::nullopt;
  ir::Shape batch(a.begin(), a.end() - 2);
  if (!broadcast_into(batch, ir::Shape(b.begin(), b.end() - 2))) return std::nullopt;
  if (!vec_a) batch.push_back(a[a.size() - 2]);
  if (!vec_b) batch.push_back(b.back());
  return batch;
}

std::optional<ir::Shape> transpose_shape(const ir::Node& node, const ir::Shape& in) {
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = node.attr_ints("perm", {});
  if (!node.has_attr("perm")) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return std::nullopt;
  std::vector<bool> used(in.size(), false);
  ir::Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || used[static_cast<size_t>(p)]) return std::nullopt;
    used[static_cast<size_t>(p)] = true;
    out.push_back(in[static_cast<size_t>(p)]);
  }
  return out;
}

// A static integer input (axes, shape, starts, …), or nullopt when it is not static.
std::optional<std::vector<int64_t>> static_ints(std::span<const InputType> inputs, size_t i) {
  if (i >= inputs.size() || inputs[i].value == nullptr) return std::nullopt;
  if (ir::is_float(inputs[i].value->dtype())) return std::nullopt;
  return runtime::to_int64s(*inputs[i].value);
}

std::optional<int64_t> axis_in(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return axis < 0 ? axis + r : axis;
}

std::optional<ir::Shape> gemm_shape(const ir::Node& node, std::span<const InputType> inputs) {
  if (inputs.size() < 2 || inputs[1].fact == nullptr) return std::nullopt;
  const ir::Shape& a = inputs[0].fact->shape;
  const ir::Shape& b = inputs[1].fact->shape;
  if (a.size() != 2 || b.size() != 2) return std::nullopt;
  const bool ta = node.attr_int("transA", 0) != 0, tb = node.attr_int("transB", 0) != 0;
  const int64_t k = ta ? a[0] : a[1];
  if (k != (tb ? b[1] : b[0])) return std::nullopt;
  return ir::Shape{ta ? a[1] : a[0], tb ? b[0] : b[1]};
}

std::optional<ir::Shape> conv_shape(const ir::Node& node, std::span<const InputType> inputs) {
  if (inputs.size() < 2 || inputs[1].fact == nullptr) return std::nullopt;
  const ir::Shape& x = inputs[0].fact->shape;
  const ir::Shape& w = inputs[1].fact->shape;
  if (x.size() < 3 || w.size() != x.size()) return std::nullopt;
  const int64_t group = node.attr_int("group", 1);
  if (group <= 0 || x[1] != w[1] * group || w[0] % group != 0) return std::nullopt;
  Expected<runtime::Window> win = runtime::read_window(node, {w.begin() + 2, w.end()});
  if (!win) return std::nullopt;
  Expected<std::vector<int64_t>> dims =
      runtime::forward_output_dims(node, *win, {x.begin() + 2, x.end()});
  if (!dims) return std::nullopt;
  ir::Shape out{x[0], w[0]};
  out.insert(out.end(), dims->begin(), dims->end());
  return out;
}

// ReduceSum takes its axes as an input from opset 13, the other reductions from opset 18.
std::optional<ir::Shape> reduce_shape(const ir::Node& node, int64_t opset,
                                      std::span<const InputType> inputs) {
  const ir::Shape& x = inputs[0].fact->shape;
  const bool from_input = opset >= (node.op_type == "ReduceSum" ? 13 : 18);
  std::vector<int64_t> axes;
  if (!from_input) {
    axes = node.attr_ints("axes", {});
  } else if (inputs.size() > 1 && inputs[1].fact != nullptr) {
    std::optional<std::vector<int64_t>> given = static_ints(inputs, 1);
    if (!given) return std::nullopt;
    axes = std::move(*given);
  }
  if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0) return x;
  std::vector<bool> reduce(x.size(), axes.empty());
  for (int64_t a : axes) {
    std::optional<int64_t> d = axis_in(a, x.size());
    if (!d) return std::nullopt;
    reduce[static_cast<size_t>(*d)] = true;
  }
  const bool keep = node.attr_int("keepdims", 1) != 0;
  ir::Shape out;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!reduce[d]) out.push_back(x[d]);
    else if (keep) out.push_back(1);
  }
  return out;
}

std::optional<ir::Shape> flatten_shape(const ir::Node& node, const ir::Shape& x) {
  const auto rank = static_cast<int64_t>(x.size());
  int64_t axis = node.attr_int("axis", 1);
  if (axis < -rank || axis > rank) return std::nullopt;
  if (axis < 0) axis += rank;
  const auto at = static_cast<size_t>(axis);
  return ir::Shape{runtime::dims_product(x, 0, at), runtime::dims_product(x, at, x.size())};
}

std::optional<ir::Shape> reshape_shape(const ir::Node& node, std::span<const InputType> inputs) {
  std::optional<std::vector<int64_t>> spec = static_ints(inputs, 1);
  if (!spec) return std::nullopt;
  const ir::Shape& x = inputs[0].fact->shape;
  const bool allow_zero = node.attr_int("allowzero", 0) != 0;
  ir::Shape out(spec->size());
  int64_t infer_at = -1, known = 1;
  for (size_t i = 0; i < spec->size(); ++i) {
    int64_t d = (*spec)[i];
    if (d == 0 && !allow_zero) {
      if (i >= x.size()) return std::nullopt;
      d = x[i];
    }
    if (d == -1 && infer_at < 0) {
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) return std::nullopt;
    out[i] = d;
    known *= d;
  }
  const int64_t total = ir::num_elements(x);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) return std::nullopt;
    out[static_cast<size_t>(infer_at)] = total / known;
  }
  if (ir::num_elements(out) != total) return std::nullopt;
  return out;
}

// Elements one axis keeps under ONNX's clamping rules (as the CPU kernel clamps).
int64_t slice_count(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim == 0) return 0;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp(start, int64_t{0}, dim);
    end = std::clamp(end, int64_t{0}, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp(start, int64_t{0}, dim - 1);
  end = std::clamp(end, int64_t{-1}, dim - 1);
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

// Slice in its input form (opset 10 on), every parameter static.
std::optional<ir::Shape> slice_shape(int64_t opset, std::span<const InputType> inputs) {
  if (opset < 10) return std::nullopt;
  std::optional<std::vector<int64_t>> starts = static_ints(inputs, 1);
  std::optional<std::vector<int64_t>> ends = static_ints(inputs, 2);
  if (!starts || !ends || ends->size() != starts->size()) return std::nullopt;
  std::vector<int64_t> axes, steps(starts->size(), 1);
  for (size_t i = 0; i < starts->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  for (size_t slot : {size_t{3}, size_t{4}}) {
    if (slot >= inputs.size() || inputs[slot].fact == nullptr) continue;
    std::optional<std::vector<int64_t>> given = static_ints(inputs, slot);
    if (!given || given->size() != starts->size()) return std::nullopt;
    (slot == 3 ? axes : steps) = std::move(*given);
  }
  ir::Shape out = inputs[0].fact->shape;
  std::vector<bool> seen(out.size(), false);
  for (size_t i = 0; i < starts->size(); ++i) {
    std::optional<int64_t> a = axis_in(axes[i], out.size());
    if (!a || seen[static_cast<size_t>(*a)] || steps[i] == 0) return std::nullopt;
    seen[static_cast<size_t>(*a)] = true;
    int64_t& d = out[static_cast<size_t>(*a)];
    d = slice_count(d, (*starts)[i], (*ends)[i], steps[i]);
  }
  return out;
}

std::optional<ir::Shape> concat_shape(const ir::Node& node, std::span<const InputType> inputs) {
  ir::Shape out = inputs[0].fact->shape;
  std::optional<int64_t> axis = axis_in(node.attr_int("axis", 0), out.size());
  if (!axis || !node.has_attr("axis")) return std::nullopt;
  const auto a = static_cast<size_t>(*axis);
  out[a] = 0;
  for (const InputType& in : inputs) {
    if (in.fact == nullptr || in.fact->shape.size() != out.size()) return std::nullopt;
    for (size_t d = 0; d < out.size(); ++d) {
      if (d != a && in.fact->shape[d] != out[d]) return std::nullopt;
    }
    out[a] += in.fact->shape[a];
  }
  return out;
}

std::optional<ir::Shape> gather_shape(const ir::Node& node, std::span<const InputType> inputs) {
  if (inputs.size() != 2 || inputs[1].fact == nullptr) return std::nullopt;
  const ir::Shape& data = inputs[0].fact->shape;
  std::optional<int64_t> axis = axis_in(node.attr_int("axis", 0), data.size());
  if (!axis) return std::nullopt;
  const auto a = static_cast<size_t>(*axis);
  ir::Shape out(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), inputs[1].fact->shape.begin(), inputs[1].fact->shape.end());
  out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(a) + 1, data.end());
  return out;
}

// Pad with its pads as an input (opset 11 on, every axis: no `axes` input) or an attribute.
std::optional<ir::Shape> pad_shape(const ir::Node& node, int64_t opset,
                                   std::span<const InputType> inputs) {
  if (inputs.size() > 3 && inputs[3].fact != nullptr) return std::nullopt;
  std::optional<std::vector<int64_t>> pads =
      opset >= 11 ? static_ints(inputs, 1)
                  : std::optional<std::vector<int64_t>>(node.attr_ints("pads", {}));
  ir::Shape out = inputs[0].fact->shape;
  if (!pads || pads->size() != 2 * out.size()) return std::nullopt;
  for (size_t d = 0; d < out.size(); ++d) {
    out[d] += (*pads)[d] + (*pads)[d + out.size()];
    if (out[d] < 0) return std::nullopt;
  }
  return out;
}

// The output shape and dtype of output 0 by `rule`.
std::optional<ValueFacts> first_output(Rule rule, const ir::Node& node, int64_t opset,
                                       std::span<const InputType> inputs) {
  const ValueFacts& x = *inputs[0].fact;
  auto same_dtype = [&](std::optional<ir::Shape> s) -> std::optional<ValueFacts> {
    if (!s) return std::nullopt;
    return ValueFacts{x.dtype, std::move(*s), true};
  };
  switch (rule) {
    case Rule::kSame: return ValueFacts{x.dtype, x.shape, true};
    case Rule::kSameBool: return ValueFacts{ir::DType::kBool, x.shape, true};
    case Rule::kBroadcast:
    case Rule::kCompare:
    case Rule::kWhere: {
      std::optional<ir::Shape> s = broadcast_all(inputs);
      if (!s || (rule == Rule::kWhere && inputs.size() != 3)) return std::nullopt;
      const ir::DType t = rule == Rule::kCompare ? ir::DType::kBool
                          : rule == Rule::kWhere ? inputs[1].fact->dtype
                                                 : x.dtype;
      return ValueFacts{t, std::move(*s), true};
    }
    case Rule::kMatMul:
      if (inputs.size() != 2 || inputs[1].fact == nullptr) return std::nullopt;
      return same_dtype(matmul_shape(x.shape, inputs[1].fact->shape));
    case Rule::kGemm: return same_dtype(gemm_shape(node, inputs));
    case Rule::kConv: return same_dtype(conv_shape(node, inputs));
    case Rule::kGlobalPool: {
      if (x.shape.size() < 2) return std::nullopt;
      ir::Shape s = x.shape;
      std::fill(s.begin() + 2, s.end(), 1);
      return ValueFacts{x.dtype, std::move(s), true};
    }
    case Rule::kReduce: return same_dtype(reduce_shape(node, opset, inputs));
    case Rule::kFlatten: return same_dtype(flatten_shape(node, x.shape));
    case Rule::kReshape: return same_dtype(reshape_shape(node, inputs));
    case Rule::kSlice: return same_dtype(slice_shape(opset, inputs));
    case Rule::kConcat: return same_dtype(concat_shape(node, inputs));
    case Rule::kGather: return same_dtype(gather_shape(node, inputs));
    case Rule::kPad: return same_dtype(pad_shape(node, opset, inputs));
    case Rule::kTranspose: return same_dtype(transpose_shape(node, x.shape));
    case Rule::kCast: {
      const int64_t to = node.attr_int("to", 0);
      if (!node.has_attr("to") || !ir::dtype_known(static_cast<int32_t>(to))) return std::nullopt;
      return ValueFacts{static_cast<ir::DType>(to), x.shape, true};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<ValueFacts>> rule_output_types(const ir::Node& node, int64_t opset,
                                                         std::span<const InputType> inputs) {
  if (!node.in_default_domain() || node.outputs.empty() || node.outputs[0].empty() ||
      inputs.empty() || inputs[0].fact == nullptr) {
    return std::nullopt;
  }
  auto rule = rules().find(node.op_type);
  if (rule == rules().end()) return std::nullopt;
  // Later outputs (LayerNormalization's mean, BatchNormalization's training statistics) have
  // rules of their own: none here but Dropout's mask.
  const bool dropout = node.op_type == "Dropout";
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty() && !(dropout && i == 1)) return std::nullopt;
  }
  std::optional<ValueFacts> first = first_output(rule->second, node, opset, inputs);
  if (!first) return std::nullopt;
  std::vector<ValueFacts> out(node.outputs.size());
  if (dropout && out.size() > 1) {  // a bool mask from opset 10, of the input's type before
    out[1] = ValueFacts{opset >= 10 ? ir::DType::kBool : first->dtype, first->shape, true};
  }
  out[0] = std::move(*first);
  return out;
}

}  // namespace ptq::vulkan
