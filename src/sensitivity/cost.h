// Internal to ptq_sensitivity: what running a part costs, estimated from its shapes, so that
// the sweep's workers get groups of equal work. Counting nodes (as before) gave a ResNet-18
// sweep's two workers 14.4 and 15.6 s: its last stage runs few nodes, each dense and slow.
// Declared shapes alone were not enough either: a transformer's reshaped activations have no
// static shape, so every cut but the first cost a node count and one worker got 16 of 17 cuts
// (10.7 ms a batch against 1.8). The shapes a run of the base model showed fill those in.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ptq/ir.h"
#include "ptq/runtime.h"

namespace ptq::sensitivity {

// Shapes of the values one run showed, by name.
using SeenShapes = std::unordered_map<std::string, ir::Shape>;

// An observer that wants every value a node produces and records its shape.
class ShapeRecorder : public runtime::Observer {
 public:
  std::vector<std::string> wanted(const ir::Graph& graph) override;
  Status observe(const runtime::ObservedTensor& tensor) override;
  SeenShapes take() { return std::move(seen_); }

 private:
  SeenShapes seen_;
};

// Multiply-adds of the part's weighted nodes (ptq/ir/op_traits.h) plus one per output
// element of every other node. A value's shape is its initializer's, else the one `seen` in a
// run (batch included), else the part's declaration, else `types`' (a cut's variant, whose
// inferred shapes the cut does not carry; symbolic and unknown dims count 1); a node output
// known none of these ways takes its first input's shape (Q/DQ and other elementwise nodes a
// variant adds), and a value still unknown counts one element.
double estimated_cost(const ir::Model& part, const ir::Graph& types, const SeenShapes& seen = {});

}  // namespace ptq::sensitivity
