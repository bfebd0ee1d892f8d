// TensorRT placement rules (shared specs/quantization.md), each checked on its own.
#include "lint_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ptq::report {

void LintContext::add(size_t n, std::string tensor, std::string message, std::string fix) {
  Finding f;
  f.severity = rule_.severity;
  f.rule = std::string(rule_.id);
  f.node = view.node_name(n);
  f.op_type = view.node(n).op_type;
  f.tensor = std::move(tensor);
  f.message = std::move(message);
  f.fix = std::move(fix);
  out_.push_back(std::move(f));
}

namespace {

bool runs_int8(const QdqView& v, size_t n) { return v.precision(n) == Precision::kInt8; }
bool has_quantized_input(const QdqView& v, size_t n) {
  return v.precision(n) == Precision::kInt8 || v.precision(n) == Precision::kMixed;
}

// An Add of an activation and a constant (a bias split off its Conv/MatMul by the exporter).
bool is_bias_add(const QdqView& v, const ir::Node& node) {
  return op_is(node, "Add") && node.inputs.size() == 2 &&
         v.is_weight_like(node.inputs[0]) != v.is_weight_like(node.inputs[1]);
}

std::string activation_of_bias_add(const QdqView& v, const ir::Node& node) {
  return v.is_weight_like(node.inputs[0]) ? node.inputs[1] : node.inputs[0];
}

// The node computing `value`, looking back through a bias Add to the weighted op before it.
int64_t source_of(const QdqView& v, const std::string& value) {
  const int64_t p = v.producer(value);
  if (p < 0) return p;
  const ir::Node& node = v.node(static_cast<size_t>(p));
  if (!is_bias_add(v, node)) return p;
  const int64_t q = v.producer(activation_of_bias_add(v, node));
  return q >= 0 && ir::is_weighted_op(v.node(static_cast<size_t>(q))) ? q : p;
}

// True when the Add at `n` is the residual form TensorRT fuses into a weighted op: one input
// dequantized (the skip), the other `value` read in float.
bool is_fusing_add(const QdqView& v, size_t n, const std::string& value) {
  const ir::Node& node = v.node(n);
  if (!op_is(node, "Add") || node.inputs.size() != 2) return false;
  const std::string& other = node.inputs[0] == value ? node.inputs[1] : node.inputs[0];
  return !v.is_dequantized(value) && v.is_dequantized(other);
}

std::string join_names(const QdqView& v, const std::vector<size_t>& nodes) {
  std::vector<std::string> names;
  for (size_t n : nodes) names.push_back(fmt::format("'{}'", v.node_name(n)));
  return fmt::format("{}", fmt::join(names, ", "));
}

// Walks back from `value` through fusable activations, one-input data movement
// (ir::moves_one_input) and bias Adds; true when it reaches an INT8 node or a dequantized value.
bool int8_before(const QdqView& v, std::string value) {
  for (int hops = 0; hops < 16; ++hops) {
    if (v.is_dequantized(value)) return true;
    const int64_t p = v.producer(value);
    if (p < 0) return false;
    const size_t n = static_cast<size_t>(p);
    const ir::Node& node = v.node(n);
    if (runs_int8(v, n)) return true;
    if (ir::is_fusable_activation(node) || ir::moves_one_input(node)) {
      value = node.input(0);
    } else if (is_bias_add(v, node)) {
      value = activation_of_bias_add(v, node);
    } else {
      return false;
    }
  }
  return false;
}

// True when some reader of `value` (looking through one-input data movement) quantizes it or
// has quantized inputs.
bool int8_after(const QdqView& v, const std::string& value, int hops = 0) {
  for (size_t c : v.consumers(value)) {
    const ir::Node& node = v.node(c);
    if (is_q(node) || has_quantized_input(v, c)) return true;
    if (hops < 8 && ir::moves_one_input(node) && node.input(0) == value) {
      for (const std::string& out : node.outputs) {
        if (!out.empty() && int8_after(v, out, hops + 1)) return true;
      }
    }
  }
  return false;
}

std::string scale_str(const ir::Tensor* t) {
  if (!t) return "?";
  if (t->size() == 1) return fmt::format("{:.6g}", t->as_double(0));
  return fmt::format("[{} values]", t->size());
}

bool same_values(const ir::Tensor* a, const ir::Tensor* b) {
  if (a == b) return true;
  if (!a || !b || a->size() != b->size()) return false;
  for (int64_t i = 0; i < a->size(); ++i) {
    const double x = a->as_double(i);
    const double y = b->as_double(i);
    if (std::abs(x - y) > 1e-6 * std::max(std::abs(x), std::abs(y))) return false;
  }
  return true;
}

// The input dims of a MatMul operand counted from the end (1 = last), or -1.
int64_t dim_from_end(const QdqView& v, const std::string& value, size_t k) {
  const ir::TypeInfo t = v.type(value);
  if (!t.dims || t.dims->size() < k) return -1;
  const ir::Dim& d = (*t.dims)[t.dims->size() - k];
  return d.known() ? d.value : -1;
}

int64_t rank_of(const QdqView& v, const std::string& value) {
  const ir::TypeInfo t = v.type(value);
  return t.dims ? static_cast<int64_t>(t.dims->size()) : -1;
}

}  // namespace

void rule_unquantized_activation(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    if (!ir::is_weighted_op(v.node(n)) || v.precision(n) != Precision::kMixed) continue;
    for (size_t slot : v.weighted_slots(n).activations) {
      if (v.reads_dequantized(n, slot)) continue;
      const std::string& t = v.node(n).inputs[slot];
      c.add(n, t,
            fmt::format("{} '{}' has quantized inputs but reads activation '{}' in float, so "
                        "TensorRT cannot run it in INT8",
                        v.node(n).op_type, v.node_name(n), t),
            fmt::format("add a QuantizeLinear -> DequantizeLinear pair on '{}' (per-tensor, zero "
                        "point 0), or remove the node's other Q/DQ to leave it float",
                        t));
    }
  }
}

void rule_unquantized_weight(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    if (!ir::is_weighted_op(v.node(n)) || v.precision(n) != Precision::kMixed) continue;
    const WeightedSlots s = v.weighted_slots(n);
    if (s.weight < 0 || v.reads_dequantized(n, static_cast<size_t>(s.weight))) continue;
    const std::string& t = v.node(n).inputs[static_cast<size_t>(s.weight)];
    c.add(n, t,
          fmt::format("{} '{}' reads quantized activations but its weight '{}' in float",
                      v.node(n).op_type, v.node_name(n), t),
          fmt::format("store '{}' as int8 with a per-channel DequantizeLinear (axis written), "
                      "or remove the activation Q/DQ to leave the node float",
                      t));
  }
}

void rule_missing_output_q(LintContext& c) {
  const QdqView& v = c.view;
  const ir::Graph& g = v.graph();
  for (size_t n = 0; n < v.size(); ++n) {
    if (!ir::is_weighted_op(v.node(n)) || !runs_int8(v, n) || v.node(n).outputs.empty()) continue;
    // TensorRT fuses a bias Add and an activation into the op: the output is the chain's end.
    std::string out = v.node(n).outputs[0];
    for (int hops = 0; hops < 4 && !g.is_graph_output(out); ++hops) {
      const auto& readers = v.consumers(out);
      if (readers.size() != 1) break;
      const ir::Node& next = v.node(readers[0]);
      if (!ir::is_fusable_activation(next) && !is_bias_add(v, next)) break;
      out = next.outputs[0];
    }
    const auto& readers = v.consumers(out);
    if (g.is_graph_output(out) || readers.empty()) continue;
    bool all_int8 = true;
    for (size_t r : readers) {
      if (is_q(v.node(r)) || is_fusing_add(v, r, out) || !has_quantized_input(v, r)) {
        all_int8 = false;
        break;
      }
    }
    if (!all_int8) continue;
    c.add(n, out,
          fmt::format("output '{}' of INT8 {} '{}' stays float but every reader ({}) runs in "
                      "INT8: TensorRT inserts a reformat layer",
                      out, v.node(n).op_type, v.node_name(n), join_names(v, readers)),
          fmt::format("add a QuantizeLinear -> DequantizeLinear pair on '{}' so TensorRT fuses "
                      "the Q into '{}' and writes INT8",
                      out, v.node_name(n)));
  }
}

void rule_residual_skip_float(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!op_is(node, "Add") || node.inputs.size() != 2 || is_bias_add(v, node)) continue;
    if (v.precision(n) != Precision::kFloat) continue;  // a dequantized input: not this rule
    if (v.is_weight_like(node.inputs[0]) || v.is_weight_like(node.inputs[1])) continue;
    int64_t conv = -1;
    std::string skip;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t src = source_of(v, node.inputs[i]);
      if (src < 0 || !ir::is_weighted_op(v.node(static_cast<size_t>(src))) ||
          !runs_int8(v, static_cast<size_t>(src))) {
        continue;
      }
      if (conv < 0) {
        conv = src;
        skip = node.inputs[1 - i];
      }
    }
    if (conv < 0) continue;
    const std::string conv_name = v.node_name(static_cast<size_t>(conv));
    c.add(n, skip,
          fmt::format("residual Add '{}' after INT8 {} '{}' reads its skip input '{}' in float: "
                      "TensorRT cannot fuse the Add into the {} and runs it in float",
                      v.node_name(n), v.node(static_cast<size_t>(conv)).op_type, conv_name, skip,
                      v.node(static_cast<size_t>(conv)).op_type),
          fmt::format("add a QuantizeLinear -> DequantizeLinear pair on the skip input '{}' and "
                      "leave the branch from '{}' float",
                      skip, conv_name));
  }
}

void rule_float_pool(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!ir::is_pool(node) || v.precision(n) != Precision::kFloat || node.outputs.empty()) continue;
    const std::string& in = node.input(0);
    if (!int8_before(v, in) || !int8_after(v, node.outputs[0])) continue;
    c.add(n, in,
          fmt::format("{} '{}' runs in float between INT8 layers: TensorRT adds reformat layers "
                      "around it",
                      node.op_type, v.node_name(n)),
          fmt::format("add a QuantizeLinear -> DequantizeLinear pair on its input '{}' (the scale "
                      "of its INT8 neighbour) so the pool runs in INT8",
                      in));
  }
}

void rule_concat_scales(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!op_is(node, "Concat")) continue;
    std::vector<std::string> quantized, plain;
    for (const std::string& in : node.inputs) {
      if (in.empty() || v.is_constant(in)) continue;
      (v.is_dequantized(in) ? quantized : plain).push_back(in);
    }
    if (quantized.empty()) continue;
    const std::string fix =
        "calibrate the Concat's inputs as one group: one scale (the widest "
        "range) on every input";
    if (!plain.empty()) {
      c.add(n, plain[0],
            fmt::format("Concat '{}' mixes quantized inputs with float input '{}'", v.node_name(n),
                        plain[0]),
            fix);
      continue;
    }
    std::vector<std::string> scales;
    bool differ = false;
    const size_t first = static_cast<size_t>(v.dq_producing(quantized[0]));
    for (const std::string& in : quantized) {
      const size_t dq = static_cast<size_t>(v.dq_producing(in));
      scales.push_back(fmt::format("{}: {}", in, scale_str(v.scale_of(dq))));
      differ |= !same_values(v.scale_of(dq), v.scale_of(first)) ||
                !same_values(v.zero_point_of(dq), v.zero_point_of(first));
    }
    if (!differ) continue;
    c.add(n, quantized[0],
          fmt::format("Concat '{}' reads inputs of different scales ({}): TensorRT requantizes "
                      "them",
                      v.node_name(n), fmt::join(scales, ", ")),
          fix);
  }
}

void rule_missing_axis(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!is_q(node) && !is_dq(node)) continue;
    const ir::Tensor* scale = v.scale_of(n);
    if (!scale || scale->rank() != 1 || scale->size() <= 1 || node.has_attr("axis")) continue;
    c.add(n, node.input(0),
          fmt::format("per-channel {} '{}' ({} scales) has no axis attribute: TensorRT assumes "
                      "axis 0, ONNX defaults to 1",
                      node.op_type, v.node_name(n), scale->size()),
          "write the axis attribute (the output-channel axis of the consuming op: Conv 0, "
          "ConvTranspose 1, Gemm transB ? 0 : 1, MatMul 1)");
  }
}

void rule_zero_point(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!is_q(node) && !is_dq(node)) continue;
    // A DQ reading its Q's output with the same zero point is reported once, at the Q.
    if (is_dq(node)) {
      const int64_t q = v.producer(node.input(0));
      if (q >= 0 && is_q(v.node(static_cast<size_t>(q))) &&
          v.node(static_cast<size_t>(q)).input(2) == node.input(2)) {
        continue;
      }
    }
    const ir::Tensor* zp = v.zero_point_of(n);
    ir::DType type = zp ? zp->dtype() : ir::DType::kUndefined;
    if (!zp && node.input(2).empty()) {
      type = is_q(node) ? ir::DType::kUInt8 : v.type(node.input(0)).dtype;
    }
    if (type == ir::DType::kInt32) continue;  // a bias DQ: rule bias-qdq
    std::string problem;
    if (type == ir::DType::kUInt8) {
      problem =
          node.input(2).empty() ? "no zero point, so its type is uint8" : "a uint8 zero point";
    } else if (zp) {
      for (int64_t i = 0; i < zp->size(); ++i) {
        if (zp->as_double(i) != 0.0) {
          problem = fmt::format("a non-zero zero point ({})", zp->as_int64(i));
          break;
        }
      }
    }
    if (problem.empty()) continue;
    c.add(n, node.input(0),
          fmt::format("{} '{}' has {}: TensorRT accepts only int8 with zero point 0", node.op_type,
                      v.node_name(n), problem),
          "use a symmetric int8 zero point of 0 (scale = amax / 127); requantize with "
          "ptq quantize --target tensorrt");
  }
}

void rule_bias_qdq(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    if (!ir::is_weighted_op(v.node(n))) continue;
    const int64_t bias = v.weighted_slots(n).bias;
    if (bias < 0 || !v.reads_dequantized(n, static_cast<size_t>(bias))) continue;
    const std::string& t = v.node(n).inputs[static_cast<size_t>(bias)];
    c.add(n, t,
          fmt::format("the bias of {} '{}' is read through a DequantizeLinear ('{}'); TensorRT "
                      "rejects Q/DQ on a bias",
                      v.node(n).op_type, v.node_name(n), v.dequantized_source(t)),
          "keep the bias float (ptq quantize --target tensorrt writes it so)");
  }
}

void rule_output_qdq(LintContext& c) {
  const QdqView& v = c.view;
  for (const ir::ValueInfo& out : v.graph().outputs) {
    const int64_t p = v.producer(out.name);
    if (p < 0) continue;
    const ir::Node& node = v.node(static_cast<size_t>(p));
    if (!is_q(node) && !is_dq(node)) continue;
    c.add(static_cast<size_t>(p), out.name,
          fmt::format("graph output '{}' comes out of {} '{}'", out.name, node.op_type,
                      v.node_name(static_cast<size_t>(p))),
          fmt::format("remove the Q/DQ before output '{}': outputs stay float", out.name));
  }
}

void rule_small_conv(LintContext& c) {
  const QdqView& v = c.view;
  if (c.options.min_conv_channels <= 0) return;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!ir::is_convolution(node) || !has_quantized_input(v, n)) continue;
    const ir::Tensor* w = v.weight_data(node.input(ir::weighted_op(node)->weight_slot));
    if (!w || w->rank() < 3) continue;
    const int64_t channels = ir::input_channels(node, w->shape());
    if (channels >= c.options.min_conv_channels) continue;
    c.add(n, v.dequantized_source(node.input(0)),
          fmt::format("{} '{}' is quantized with {} input channels (< {}): no INT8 speed-up in "
                      "TensorRT, and a first layer's pixel spike makes its range poor",
                      node.op_type, v.node_name(n), channels, c.options.min_conv_channels),
          fmt::format("leave it float (ptq quantize --exclude {})", v.node_name(n)));
  }
}

void rule_matrix_vector(LintContext& c) {
  const QdqView& v = c.view;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!op_is(node, "MatMul") || !has_quantized_input(v, n) || node.inputs.size() < 2) continue;
    const int64_t rows = rank_of(v, node.inputs[0]) == 1 ? 1 : dim_from_end(v, node.inputs[0], 2);
    const int64_t cols = rank_of(v, node.inputs[1]) == 1 ? 1 : dim_from_end(v, node.inputs[1], 1);
    if (rows != 1 && cols != 1) continue;
    c.add(n, v.dequantized_source(rows == 1 ? node.inputs[0] : node.inputs[1]),
          fmt::format("MatMul '{}' is matrix-vector ({} = 1) and quantized: no INT8 speed-up in "
                      "TensorRT, only quantization error",
                      v.node_name(n), rows == 1 ? "M" : "N"),
          fmt::format("leave it float (ptq quantize --exclude {})", v.node_name(n)));
  }
}

}  // namespace ptq::report
