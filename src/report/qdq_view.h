// Read-only questions that lint, the precision summary and the graph drawing ask about a Q/DQ
// model: constants (initializers and Constant nodes), producers and consumers, which values come
// out of a DequantizeLinear and what stands behind them, declared shapes, per-node precision.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptq/ir.h"
#include "ptq/ir/op_traits.h"
#include "ptq/report.h"

namespace ptq::report {

// Weighted ops, data movement, pools and fusable activations: ptq/ir/op_traits.h.
bool op_is(const ir::Node& node, std::string_view op);
bool is_q(const ir::Node& node);
// The fill colour of a precision in drawings and charts (CSS hex).
std::string_view precision_colour(Precision p);
bool is_dq(const ir::Node& node);

// The roles of a weighted op's input slots.
struct WeightedSlots {
  std::vector<size_t> activations;  // slots reading activations
  int64_t weight = -1;              // slot of the constant weight, -1 when none
  int64_t bias = -1;                // slot of the bias (Conv, ConvTranspose, Gemm input 2)
};

class QdqView {
 public:
  explicit QdqView(const ir::Model& model);

  const ir::Model& model() const { return model_; }
  const ir::Graph& graph() const { return model_.graph; }
  const ir::Node& node(size_t n) const { return model_.graph.nodes[n]; }
  size_t size() const { return model_.graph.nodes.size(); }
  // "conv1", or "Conv_3" when the node has no name.
  std::string node_name(size_t n) const;

  int64_t producer(std::string_view value) const { return index_.producer(value); }
  const std::vector<size_t>& consumers(std::string_view value) const {
    return index_.consumers(value);
  }
  // Initializer or Constant node value; null when `value` is not constant.
  const ir::Tensor* constant(std::string_view value) const;
  bool is_constant(std::string_view value) const { return constant(value) != nullptr; }

  // The DequantizeLinear producing `value`, or -1.
  int64_t dq_producing(std::string_view value) const;
  bool is_dequantized(std::string_view value) const { return dq_producing(value) >= 0; }
  // A constant, or a DQ (or Q -> DQ) of a constant: a weight or bias, however stored.
  bool is_weight_like(std::string_view value) const;
  // The tensor a dequantized value stands for: the Q's input for Q -> DQ, else the DQ's input
  // (an int8 initializer for stored weights). `value` itself when it is not dequantized.
  std::string dequantized_source(std::string_view value) const;
  // The constant data behind a value (looking through DQ and Q -> DQ), or null.
  const ir::Tensor* weight_data(std::string_view value) const;

  // Constant scale / zero point inputs of a Q or DQ node (null when absent or not constant).
  const ir::Tensor* scale_of(size_t qdq) const { return constant(node(qdq).input(1)); }
  const ir::Tensor* zero_point_of(size_t qdq) const { return constant(node(qdq).input(2)); }

  // Declared or inferred type; a constant's shape and dtype. Unknown: dtype kUndefined.
  ir::TypeInfo type(std::string_view value) const;
  // "[1, 64, 56, 56] float32", "float32" without a shape, "" when nothing is known.
  std::string type_str(std::string_view value) const;

  WeightedSlots weighted_slots(size_t n) const;
  Precision precision(size_t n) const { return precision_[n]; }
  // For INT8/mixed nodes: is input slot `slot` read through a DQ?
  bool reads_dequantized(size_t n, size_t slot) const;

 private:
  Precision compute_precision(size_t n) const;
  bool has_float_data(size_t n) const;

  const ir::Model& model_;
  ir::GraphIndex index_;
  std::unordered_map<std::string, const ir::Tensor*> constants_;
  std::deque<ir::Tensor> owned_;  // Constant nodes' value_float(s) / value_int(s)
  std::vector<Precision> precision_;
};

}  // namespace ptq::report
