// Facts about ONNX op types that the planner, the report (Q/DQ view and lint) and the
// sensitivity sweep's cost model share: which ops carry weights and in which input slots, their
// per-channel weight axis, channel counts and multiply-adds, and how data-movement ops relate
// their output elements to their inputs'. Only default-domain nodes have traits. Adding a
// quantizable weighted op is one entry in op_traits.cpp's table (docs/ADDING_AN_OP.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ptq/ir/graph.h"
#include "ptq/ir/tensor.h"

namespace ptq::ir {

// How a weighted op's weight is laid out.
enum class WeightLayout {
  kMatrix,          // an operand of a matrix product (Gemm, MatMul): either may be the constant
  kConv,            // [out, in / group, k…]
  kConvTransposed,  // [in, out / group, k…]
};

// The fixed facts of a weighted op type (Conv, ConvTranspose, Gemm, MatMul).
struct WeightedOp {
  std::string_view op_type;
  size_t weight_slot = 1;  // the constant operand whose channels are quantized per channel
  int64_t bias_slot = -1;  // -1 when the op has no bias input
  // kConv and kConvTransposed: only the weight slot holds a weight, and the small-convolution
  // and BatchNormalization-folding rules apply.
  WeightLayout layout = WeightLayout::kMatrix;
};

// The traits of a weighted op; null for any other node.
const WeightedOp* weighted_op(const Node& node);
bool is_weighted_op(const Node& node);
// A weighted op whose weight has a convolution layout (Conv, ConvTranspose).
bool is_convolution(const Node& node);

// The per-channel axis of a weight of rank `weight_rank` in the weight slot: Conv 0,
// ConvTranspose 1, Gemm transB ? 0 : 1, MatMul the last axis. -1 (per-tensor) for a MatMul
// weight of rank < 2 and for nodes that are not weighted ops.
int64_t weight_channel_axis(const Node& node, int64_t weight_rank);
// The op's input channels (Conv w[1]·group, ConvTranspose w[0]; Gemm and MatMul the reduced
// dim K), from the weight's shape. -1 when the rank is too small
// (a convolution's weight below rank 3, a matrix below rank 2) or the node is not weighted.
int64_t input_channels(const Node& node, const Shape& weight);
// Output channels, the length of a per-channel bias (Conv w[0], ConvTranspose w[1]·group, Gemm
// transB ? w[0] : w[1], MatMul the last dim); -1 as for input_channels.
int64_t output_channels(const Node& node, const Shape& weight);
// Multiply-adds per output element of a weighted op from its first operand's and its weight's
// shapes (null when unknown): a convolution's input channels per group times its kernel
// elements (ConvTranspose at stride 1), a matrix product's K (from the weight, else A's last
// dim). nullopt when the shapes it needs are unknown or the node is not weighted.
std::optional<double> multiply_adds_per_output(const Node& node, const Shape* a,
                                               const Shape* weight);
// The same times the output's element count.
std::optional<double> multiply_adds(const Node& node, const Shape& output, const Shape* a,
                                    const Shape* weight);

// How a data-movement op's output elements come from its inputs' (every output element is an
// input element, so input and output can share one quantization scale).
enum class DataMovement {
  kNone,       // it computes new values
  kView,       // the same elements in the same order: Reshape, Flatten, Squeeze, Unsqueeze,
               // Identity
  kReorder,    // the same elements in another order: Transpose, DepthToSpace, SpaceToDepth
  kSelect,     // some of the elements: Slice, Gather
  kSplit,      // the elements dealt to several outputs: Split
  kRepeat,     // elements repeated: Expand, Tile, Resize and Upsample in nearest mode
  kJoin,       // the elements of several inputs: Concat
  kWindowMax,  // the largest element of each window: MaxPool
};

DataMovement data_movement(const Node& node);
// Any data movement: the planner's scale groups and its looks past such ops.
bool is_data_movement(const Node& node);
// Data movement of one input that is no unit of its own (kView to kRepeat): what lint's walks
// between INT8 layers pass through. A Concat joins several inputs and has a rule of its own
// (concat-scales); a MaxPool is a pool, judged by the float-pool rule itself.
bool moves_one_input(const Node& node);
// The input slots of a data-movement op that carry data (not shapes, indices or axes).
std::vector<size_t> data_inputs(const Node& node);

// Why a node stays float whatever the target and options, or nullopt: the planner puts no Q/DQ
// on its inputs or weights (LSTM, GRU, RNN: TensorRT's explicit quantization keeps recurrent
// layers float; NonMaxSuppression, RoiAlign: box and index arithmetic; GridSample: TensorRT
// samples in float). docs/QUANTIZED_OPS.md lists each op's decision.
std::optional<std::string_view> float_reason(const Node& node);

bool is_pool(const Node& node);  // MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool
// Element-wise activations TensorRT fuses into the op before them (Relu, Clip, …).
bool is_fusable_activation(const Node& node);
// Control flow: If, Loop, Scan, or any node holding a graph attribute. The planner leaves such
// a node and its subgraphs float (docs/QUANTIZED_OPS.md says why).
bool is_control_flow(const Node& node);

}  // namespace ptq::ir
