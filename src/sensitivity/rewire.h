// Internal to ptq_sensitivity: variants made from models the sweep has made already instead
// of quantizing the float model again for each unit.
// - all-but: leaving unit k in float removes the Q/DQ of k's edges and nothing else, when the
//   plans say so: every edge the variant's plan keeps is the base plan's (same node, slot,
//   tensor, role, axis and scale) and no BatchNormalization is folded. The variant is then the
//   base (fully quantized, folded) with each dropped edge's node reading the edge's float
//   tensor again.
// - only: quantizing unit k alone adds the Q/DQ of k's edges, each as the fully quantized
//   model has it, when every edge of the variant's plan is that model's plan's (as above) and
//   no weight or bias among them is read by another unit's edge there. The variant is then the
//   float base with k's nodes reading the fully quantized model's (folded) values: its
//   activations' Q -> DQ nodes and its dequantized weights and biases.
// Either is what apply() on the variant's plan, then folding, computes. Where the plans differ
// otherwise, the sweep quantizes the float model as for any variant.
// The change is described (Rewiring), not applied: CutMaker::cut() makes the variant's cut from
// it without copying the base, and rewired() makes the variant itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ptq/ir.h"
#include "ptq/planner.h"

namespace ptq::sensitivity {

// The edges of `base` that `variant` drops, when that is the only difference between the two
// plans (see above) and no dropped weight or bias is read by a kept edge; nullopt otherwise.
std::optional<std::vector<const planner::QuantEdge*>> dropped_edges(const planner::Plan& base,
                                                                    const planner::Plan& variant);

// What a variant changes in the model it is made from: inputs of that model's nodes that
// read other values, the initializers those and the nodes brought in read that the model lacks
// (borrowed), and the nodes brought in, each to run right before a node of the model (in the
// order of those nodes).
struct Rewiring {
  struct Read {
    size_t node = 0;  // index into the model's nodes
    size_t slot = 0;  // its input
    std::string value;
  };
  std::vector<Read> reads;
  std::vector<ir::Initializer> initializers;          // views
  std::vector<std::pair<size_t, ir::Node>> inserted;  // (the node it runs before, the node)
};

// The variant: a copy of `base` (its initializers borrowed, its declarations left out) with
// the rewiring applied.
ir::Model rewired(const ir::Model& base, const Rewiring& r);

// The all-but variant from `base` (the planned model `source`, quantized by the base plan and
// folded): its nodes read each dropped edge's float tensor again; a weight or bias the base no
// longer holds is borrowed from `source`. Nullopt when a node or value is not found where the
// plan says.
std::optional<Rewiring> rewiring_dropping(const ir::Model& base, const ir::GraphIndex& base_index,
                                          const ir::Model& source,
                                          const std::vector<const planner::QuantEdge*>& dropped);

// The edges of `quantized` (the fully quantized model's plan) that `variant` has, when every
// edge of `variant` is one of them (see above) and no weight or bias among them is read by an
// edge of `quantized` that `variant` lacks; nullopt otherwise.
std::optional<std::vector<const planner::QuantEdge*>> added_edges(const planner::Plan& quantized,
                                                                  const planner::Plan& variant);

// The only variant from `base` (the planned model `source`, folded): its nodes read, at each
// added edge, the value `quantized` (`source` quantized by the full plan, folded) reads there:
// a dequantized weight or bias (borrowed), or an activation's Q -> DQ output, whose two nodes
// (copied) run before their first reader, their scale initializers borrowed. Nullopt when a
// node or value is not found where the plan says.
std::optional<Rewiring> rewiring_adding(const ir::Model& base, const ir::GraphIndex& base_index,
                                        const ir::Model& quantized,
                                        const ir::GraphIndex& quantized_index,
                                        const ir::Model& source,
                                        const std::vector<const planner::QuantEdge*>& added);

}  // namespace ptq::sensitivity
