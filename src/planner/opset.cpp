// Raising the opset to 13 without a converter, when no node's definition changed on the way.
#include <map>

#include <fmt/format.h>

#include "ptq/planner.h"

namespace ptq::planner {

namespace {

// The opset from which each op reads the same (attributes and inputs) as at opset 13.
// Ops absent here are not known to be safe; ops changed at 13 (Softmax axis, Squeeze/
// Unsqueeze/ReduceSum/Split attributes moved to inputs) need the onnx module's converter.
int64_t same_as_13_since(const ir::Node& node) {
  static const std::map<std::string, int64_t, std::less<>> kSince = {
      {"Abs", 6}, {"Add", 7}, {"And", 7}, {"ArgMax", 1}, {"ArgMin", 1}, {"AveragePool", 1},
      {"BatchNormalization", 9}, {"Cast", 6}, {"Ceil", 6}, {"Clip", 11}, {"Concat", 4},
      {"Constant", 1}, {"ConstantOfShape", 9}, {"Conv", 1}, {"ConvTranspose", 1},
      {"DepthToSpace", 1}, {"Div", 7}, {"Elu", 6}, {"Equal", 7}, {"Erf", 9}, {"Exp", 6},
      {"Expand", 8}, {"Flatten", 1}, {"Floor", 6}, {"Gather", 1}, {"Gemm", 7},
      {"GlobalAveragePool", 1}, {"GlobalMaxPool", 1}, {"Greater", 7}, {"HardSigmoid", 6},
      {"Identity", 1}, {"InstanceNormalization", 6}, {"LeakyRelu", 6}, {"Less", 7}, {"Log", 6},
      {"LRN", 1}, {"MatMul", 1}, {"Max", 8}, {"MaxPool", 1}, {"Mean", 8}, {"Min", 8},
      {"Mul", 7}, {"Neg", 6}, {"Not", 1}, {"Pad", 11}, {"Pow", 7}, {"PRelu", 9},
      {"Range", 11}, {"Reciprocal", 6}, {"ReduceMax", 1}, {"ReduceMean", 1},
      {"ReduceMin", 1}, {"ReduceProd", 1}, {"Relu", 6}, {"Reshape", 5}, {"Resize", 11},
      {"Shape", 1}, {"Sigmoid", 6}, {"Slice", 10}, {"Softplus", 1}, {"SpaceToDepth", 1},
      {"Sqrt", 6}, {"Sub", 7}, {"Sum", 8}, {"Tanh", 6}, {"Tile", 6}, {"TopK", 10},
      {"Transpose", 1}, {"Where", 9}};
  // Attribute-free forms of ops whose attributes became inputs at 13 read the same.
  if (node.op_type == "Squeeze" && !node.has_attr("axes")) return 1;
  if (node.op_type == "Split" && !node.has_attr("split")) return 2;
  if (node.op_type == "Dropout" && !node.has_attr("ratio")) return 7;
  auto it = kSince.find(node.op_type);
  return it == kSince.end() ? -1 : it->second;
}

}  // namespace

Status check_opset_upgradable(const ir::Model& model) {
  const int64_t opset = model.opset();
  if (opset >= 13) return Status::ok();
  for (const ir::Node& node : model.graph.nodes) {
    if (!node.in_default_domain()) continue;
    const int64_t since = same_as_13_since(node);
    if (since < 0 || since > opset) {
      return invalid_input(
          "model opset {} < 13 and {} changed by opset 13: convert the model to opset 13 with "
          "the onnx module's version converter first",
          opset, node.label());
    }
  }
  return Status::ok();
}

Status upgrade_opset_to_13(ir::Model& model) {
  PTQ_RETURN_IF_ERROR(check_opset_upgradable(model));
  if (model.opset() < 13) {
    bool found = false;
    for (ir::OpsetImport& o : model.opset_imports) {
      if (o.domain.empty() || o.domain == "ai.onnx") {
        o.version = 13;
        found = true;
      }
    }
    if (!found) model.set_opset("", 13);
  }
  return Status::ok();
}

}  // namespace ptq::planner
