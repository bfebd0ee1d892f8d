// Read-only questions the placement rules ask about a graph: constants (initializers and
// Constant nodes alike), producers and consumers, dtypes, declared shapes, node depth.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptq/ir.h"
#include "ptq/ir/op_traits.h"

namespace ptq::planner {

class GraphView {
 public:
  // `value_dims` (borrowed, may be null) override the graph's declared and inferred dims.
  explicit GraphView(const ir::Graph& graph,
                     const std::map<std::string, std::vector<ir::Dim>>* value_dims = nullptr);

  const ir::Graph& graph() const { return graph_; }
  const ir::Node& node(size_t n) const { return graph_.nodes[n]; }
  size_t size() const { return graph_.nodes.size(); }

  // The value of an initializer or of a Constant node's output; null when not constant.
  const ir::Tensor* constant(std::string_view name) const;
  bool is_constant(std::string_view name) const { return constant(name) != nullptr; }
  // Index of the Constant node producing `name`, or -1.
  int64_t constant_node(std::string_view name) const;

  int64_t producer(std::string_view name) const { return index_.producer(name); }
  const std::vector<size_t>& consumers(std::string_view name) const {
    return index_.consumers(name);
  }
  // Number of (node, slot) reads of `name` plus one if it is a graph output.
  size_t use_count(std::string_view name) const;

  ir::DType dtype(std::string_view name) const;
  // A non-constant value whose dtype is float32, or unknown (assumed float).
  bool is_float_activation(std::string_view name) const;
  // Dims from value_dims, else declared or inferred (nullopt when the rank is unknown).
  std::optional<std::vector<ir::Dim>> dims(std::string_view name) const;

  // Longest path from a graph input, in nodes (0 for nodes reading only inputs/constants).
  int64_t depth(size_t n) const { return depth_[n]; }
  // Nodes in topological order (file order when the file is sorted).
  const std::vector<size_t>& order() const { return order_; }
  bool sorted_ok() const { return sorted_ok_; }

 private:
  const ir::Graph& graph_;
  const std::map<std::string, std::vector<ir::Dim>>* value_dims_;
  ir::GraphIndex index_;
  std::unordered_map<std::string, const ir::Tensor*> constants_;
  std::unordered_map<std::string, size_t> constant_nodes_;
  std::deque<ir::Tensor> owned_;  // Constant nodes' value_float(s) / value_int(s) as tensors
  std::vector<int64_t> depth_;
  std::vector<size_t> order_;
  bool sorted_ok_ = true;
};

// Weighted ops, data movement, pools and fusable activations: ptq/ir/op_traits.h.
// Float ops that reconstruct poorly from INT8 (Softmax, LayerNorm, Exp, …).
bool is_float_sensitive(const ir::Node& node);
// Ops whose presence means the model is already quantized.
bool is_quantization_op(const ir::Node& node);

}  // namespace ptq::planner
