// Internal to ptq_sensitivity: what running a part costs, estimated from its shapes, so that
// the sweep's workers get groups of equal work. Counting nodes (as before) gave a ResNet-18
// sweep's two workers 14.4 and 15.6 s: its last stage runs few nodes, each dense and slow.
#pragma once

#include "ptq/ir.h"

namespace ptq::sensitivity {

// Multiply-adds of the part's Conv, ConvTranspose, Gemm and MatMul nodes plus one per output
// element of every other node, for one sample: symbolic and unknown dims count 1. A value's
// shape comes from the part's declarations, else from `types` (a cut's variant, whose
// inferred shapes the cut does not carry); a value of unknown shape counts one element.
double estimated_cost(const ir::Model& part, const ir::Graph& types);

}  // namespace ptq::sensitivity
