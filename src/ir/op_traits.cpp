#include "ptq/ir/op_traits.h"

#include <algorithm>
#include <array>
#include <utility>

#include "ptq/ir/subgraph.h"

namespace ptq::ir {

namespace {

// A weighted op type's fixed facts and the shape-dependent ones (axis, channels, multiply-adds).
struct Entry {
  WeightedOp op;
  int64_t (*channel_axis)(const Node& node, int64_t rank);
  int64_t (*input_channels)(const Node& node, const Shape& w);
  int64_t (*output_channels)(const Node& node, const Shape& w);
  std::optional<double> (*macs_per_output)(const Node& node, const Shape* a, const Shape* w);
};

int64_t group_of(const Node& node) { return node.attr_int("group", 1); }
bool trans_b(const Node& node) { return node.attr_int("transB", 0) != 0; }

double product(const Shape& s, size_t from) {
  double n = 1.0;
  for (size_t i = from; i < s.size(); ++i) n *= static_cast<double>(s[i]);
  return n;
}

// K of a matrix product: from a weight of rank >= 2, else A's last dim.
std::optional<double> matrix_macs(const Node& node, const Shape* a, const Shape* w) {
  if (w != nullptr && w->size() >= 2) return static_cast<double>(input_channels(node, *w));
  if (a != nullptr && !a->empty()) return static_cast<double>(a->back());
  return std::nullopt;
}

const Entry kConv = {
    {"Conv", 1, 2, WeightLayout::kConv},
    [](const Node&, int64_t) -> int64_t { return 0; },
    [](const Node& n, const Shape& w) { return w.size() < 3 ? -1 : w[1] * group_of(n); },
    [](const Node&, const Shape& w) { return w.size() < 3 ? -1 : w[0]; },
    // [M, C / group, k…]: C / group · k… per output.
    [](const Node&, const Shape*, const Shape* w) -> std::optional<double> {
      if (w == nullptr || w->empty()) return std::nullopt;
      return product(*w, 1);
    },
};

const Entry kConvTranspose = {
    {"ConvTranspose", 1, 2, WeightLayout::kConvTransposed},
    [](const Node&, int64_t) -> int64_t { return 1; },
    [](const Node&, const Shape& w) { return w.size() < 3 ? -1 : w[0]; },
    [](const Node& n, const Shape& w) { return w.size() < 3 ? -1 : w[1] * group_of(n); },
    // [C, M / group, k…]: C / group · k… per output at stride 1 (fewer at larger strides).
    [](const Node& n, const Shape*, const Shape* w) -> std::optional<double> {
      if (w == nullptr || w->size() <= 2) return std::nullopt;
      const double group = static_cast<double>(std::max<int64_t>(group_of(n), 1));
      return static_cast<double>((*w)[0]) / group * product(*w, 2);
    },
};

const Entry kGemm = {
    {"Gemm", 1, 2, WeightLayout::kMatrix},
    [](const Node& n, int64_t) -> int64_t { return trans_b(n) ? 0 : 1; },
    [](const Node& n, const Shape& w) {
      return w.size() < 2 ? -1 : w[w.size() - (trans_b(n) ? 1 : 2)];
    },
    [](const Node& n, const Shape& w) {
      return w.size() < 2 ? -1 : w[w.size() - (trans_b(n) ? 2 : 1)];
    },
    matrix_macs,
};

const Entry kMatMul = {
    {"MatMul", 1, -1, WeightLayout::kMatrix},
    [](const Node&, int64_t rank) -> int64_t { return rank < 2 ? -1 : rank - 1; },
    [](const Node&, const Shape& w) { return w.size() < 2 ? -1 : w[w.size() - 2]; },
    [](const Node&, const Shape& w) { return w.size() < 2 ? -1 : w.back(); },
    matrix_macs,
};

// An op in none of these tables stays float: docs/QUANTIZED_OPS.md says why for those one might
// expect in INT8 (Einsum: TensorRT runs it in float).
const std::array<const Entry*, 4> kWeighted = {&kConv, &kConvTranspose, &kGemm, &kMatMul};

const Entry* entry(const Node& node) {
  if (!node.in_default_domain()) return nullptr;
  for (const Entry* e : kWeighted) {
    if (e->op.op_type == node.op_type) return e;
  }
  return nullptr;
}

const std::pair<std::string_view, DataMovement> kMovers[] = {
    {"Reshape", DataMovement::kView},         {"Flatten", DataMovement::kView},
    {"Squeeze", DataMovement::kView},         {"Unsqueeze", DataMovement::kView},
    {"Identity", DataMovement::kView},        {"Transpose", DataMovement::kReorder},
    {"DepthToSpace", DataMovement::kReorder}, {"SpaceToDepth", DataMovement::kReorder},
    {"ReverseSequence", DataMovement::kReorder},
    {"Slice", DataMovement::kSelect},         {"Gather", DataMovement::kSelect},
    {"Split", DataMovement::kSplit},          {"Expand", DataMovement::kRepeat},
    {"Tile", DataMovement::kRepeat},          {"Concat", DataMovement::kJoin},
    {"MaxPool", DataMovement::kWindowMax},
};

constexpr std::string_view kRecurrent =
    "recurrent op: stays float (TensorRT does not quantize RNN weights or inputs)";
// Sorted by op type; the reasons are docs/QUANTIZED_OPS.md's, shortened.
const std::pair<std::string_view, std::string_view> kFloatOps[] = {
    {"GRU", kRecurrent},
    {"GridSample",
     "sampling op: stays float (TensorRT runs GridSample in FP32/FP16 only; grid coordinates "
     "need float precision)"},
    {"LSTM", kRecurrent},
    {"NonMaxSuppression",
     "box selection: stays float (scores and IoU are compared with thresholds; outputs indices)"},
    {"RNN", kRecurrent},
    {"RoiAlign",
     "box pooling: stays float (roi coordinates drive the sampling positions; TensorRT and ONNX "
     "Runtime have no INT8 RoiAlign)"},
};

bool op_in(const Node& node, std::initializer_list<std::string_view> ops) {
  if (!node.in_default_domain()) return false;
  return std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
}

}  // namespace

const WeightedOp* weighted_op(const Node& node) {
  const Entry* e = entry(node);
  return e ? &e->op : nullptr;
}

bool is_weighted_op(const Node& node) { return entry(node) != nullptr; }

bool is_convolution(const Node& node) {
  const Entry* e = entry(node);
  return e && e->op.layout != WeightLayout::kMatrix;
}

int64_t weight_channel_axis(const Node& node, int64_t weight_rank) {
  const Entry* e = entry(node);
  return e ? e->channel_axis(node, weight_rank) : -1;
}

int64_t input_channels(const Node& node, const Shape& weight) {
  const Entry* e = entry(node);
  return e ? e->input_channels(node, weight) : -1;
}

int64_t output_channels(const Node& node, const Shape& weight) {
  const Entry* e = entry(node);
  return e ? e->output_channels(node, weight) : -1;
}

std::optional<double> multiply_adds_per_output(const Node& node, const Shape* a,
                                               const Shape* weight) {
  const Entry* e = entry(node);
  return e ? e->macs_per_output(node, a, weight) : std::nullopt;
}

std::optional<double> multiply_adds(const Node& node, const Shape& output, const Shape* a,
                                    const Shape* weight) {
  const std::optional<double> per = multiply_adds_per_output(node, a, weight);
  if (!per) return std::nullopt;
  return product(output, 0) * *per;
}

DataMovement data_movement(const Node& node) {
  if (!node.in_default_domain()) return DataMovement::kNone;
  if (node.op_type == "Resize" || node.op_type == "Upsample") {
    // Other modes interpolate: new values.
    const bool nearest = node.attr_string("mode", "nearest") == "nearest";
    return nearest ? DataMovement::kRepeat : DataMovement::kNone;
  }
  for (const auto& [op, kind] : kMovers) {
    if (op == node.op_type) return kind;
  }
  return DataMovement::kNone;
}

bool is_data_movement(const Node& node) { return data_movement(node) != DataMovement::kNone; }

bool moves_one_input(const Node& node) {
  switch (data_movement(node)) {
    case DataMovement::kView:
    case DataMovement::kReorder:
    case DataMovement::kSelect:
    case DataMovement::kSplit:
    case DataMovement::kRepeat:
      return true;
    case DataMovement::kNone:
    case DataMovement::kJoin:
    case DataMovement::kWindowMax:
      return false;
  }
  return false;
}

std::vector<size_t> data_inputs(const Node& node) {
  if (data_movement(node) != DataMovement::kJoin) return {0};
  std::vector<size_t> all;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i].empty()) all.push_back(i);
  }
  return all;
}

std::optional<std::string_view> float_reason(const Node& node) {
  if (!node.in_default_domain()) return std::nullopt;
  for (const auto& [op, reason] : kFloatOps) {
    if (op == node.op_type) return reason;
  }
  return std::nullopt;
}

bool is_pool(const Node& node) {
  return op_in(node, {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"});
}

bool is_fusable_activation(const Node& node) {
  return op_in(node, {"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish",
                      "PRelu", "Elu", "Selu", "Softplus"});
}

bool is_control_flow(const Node& node) {
  return op_in(node, {"If", "Loop", "Scan"}) || has_subgraph(node);
}

}  // namespace ptq::ir
