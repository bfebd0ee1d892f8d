// The state the placement rules share while marking a graph: edges (node input slots) wanted
// quantized, the units that want them, per-node decisions, and BatchNormalizations to fold.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph_view.h"
#include "ptq/planner.h"

namespace ptq::planner {

// NodePlan::reason of a node no placement rule looked at.
inline constexpr std::string_view kNoRuleReason = "no quantization rule for this op type (float)";
inline constexpr std::string_view kControlFlowReason =
    "control flow: the node and its subgraphs stay float (docs/QUANTIZED_OPS.md)";

class Marking {
 public:
  Marking(const GraphView& view, const PlanOptions& options);

  const GraphView& view;
  const PlanOptions& options;

  std::vector<QuantEdge> edges;
  std::vector<NodePlan> nodes;         // parallel to graph nodes
  std::vector<Unit> units;
  std::vector<std::string> warnings;
  // By name pattern, op type or ir::float_reason (reason in nodes[n]).
  std::vector<bool> excluded;
  std::vector<bool> weighted_ok;       // weighted op structurally quantizable
  std::vector<int64_t> bn_of_conv;     // conv -> BatchNormalization that can fold into it, or -1
  std::vector<int64_t> conv_of_bn;     // the reverse, or -1
  // Dims the rules needed but found symbolic or unknown, for nodes they would quantize.
  std::vector<UnresolvedDim> unresolved;
  // unit name -> edge indices the unit cannot go without (its activation inputs)
  std::map<std::string, std::set<size_t>> required;

  bool is_target_ort() const { return options.target == Target::kOrt; }
  // Creates the unit anchored at node n and returns its (unique) name.
  std::string open_unit(size_t n, std::string kind);
  // The unit anchored at node n, or "" (e.g. propagation edges take their source's units).
  const std::string& unit_at(size_t n) const { return nodes[n].unit; }
  // Marks (node, slot) quantized for `unit`; returns true when the edge or owner is new.
  bool mark(size_t node, size_t slot, Role role, int64_t axis, const std::string& unit,
            bool required_by_unit);
  // Adds every owner of `from` to the edge (node, slot); returns true when something changed.
  bool mark_like(size_t node, size_t slot, const QuantEdge& from);
  // Edge index for (node, slot), or -1.
  int64_t find_edge(size_t node, size_t slot) const;
  // Edges reading `tensor` (any node).
  std::vector<size_t> edges_of(const std::string& tensor) const;

  // The output a node's consumers see: a Conv whose BatchNormalization folds answers the BN's.
  const std::string& effective_output(size_t n) const;
  // The node that really computes `tensor`: looks back through a folding BatchNormalization
  // and a bias Add (one constant input). -1 for graph inputs and constants.
  int64_t source(const std::string& tensor) const;

 private:
  std::map<std::pair<size_t, size_t>, size_t> edge_index_;
  std::set<std::string> unit_names_;
};

// Rules, one per op family (rules_*.cpp). Each looks at one node.
void rule_weighted(Marking& m, size_t n);  // Conv, ConvTranspose, Gemm, MatMul
void rule_add(Marking& m, size_t n);       // residual Add (TensorRT) / two-input Add (ORT)
bool rule_pool(Marking& m, size_t n);      // pooling next to quantized neighbours
bool rule_concat(Marking& m, size_t n);    // Concat inputs when it is quantized
// kOrt: Q/DQ on the outputs of quantized units; data-movement ops and activations pass
// their input's quantization to their output (same scale).
bool rule_ort_outputs(Marking& m, size_t n);
bool rule_ort_propagate(Marking& m, size_t n);
// Finds BatchNormalizations that fold into the Conv before them.
void find_bn_folds(Marking& m);

// The error for an unresolved dim: node, tensor, dim, and the graph inputs to bind
// (unresolved.cpp).
Status unresolved_error(const GraphView& view, const PlanOptions& options, const UnresolvedDim& d);

}  // namespace ptq::planner
