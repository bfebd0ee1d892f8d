// Opset conversion through libonnx's version converter (onnx/version_converter/convert.h).
//
// The converter has two snags across opset 13 (shared specs/quantization.md, "Known snags"):
//  - Softmax/LogSoftmax 12 -> 13 reads the input's rank from the converter's own IR, which only
//    knows what value_info declares; with no shape it aborts ("input shape is unknown"). When
//    the axis is not the last one it also bakes the input shape into a Reshape constant, which
//    breaks with more than one symbolic dim.
//  - Hardmax 12 -> 13 is registered as "compatible" although its axis semantics changed too.
// So before converting, every Softmax/LogSoftmax/Hardmax whose old axis is not the last one is
// rewritten here as Flatten(axis) -> op(axis=1) -> Reshape(Shape(x)) (the opset < 13 definition,
// spelled out; no shape needed), and the inputs of the others get a value_info carrying their
// rank (from the model's declarations or the types inferred at load).
#include <algorithm>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx/version_converter/convert.h"
#include "proto.h"
#include "ptq/ir/builders.h"
#include "ptq/onnx.h"

namespace ptq::onnx {

namespace {

bool is_coerced_axis_op(const ir::Node& n) {
  return n.in_default_domain() &&
         (n.op_type == "Softmax" || n.op_type == "LogSoftmax" || n.op_type == "Hardmax");
}

// Every value name in the graph, for picking fresh ones.
std::set<std::string> value_names(const ir::Graph& g) {
  std::set<std::string> names;
  for (const ir::Node& n : g.nodes) {
    names.insert(n.inputs.begin(), n.inputs.end());
    names.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const ir::ValueInfo& v : g.inputs) names.insert(v.name);
  for (const ir::Initializer& i : g.initializers()) names.insert(i.name);
  return names;
}

std::string fresh_name(std::set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = fmt::format("{}_{}", base, k);
  taken.insert(name);
  return name;
}

// x -> Flatten(axis) -> op(axis=1) -> Reshape(., Shape(x)) -> y, replacing nodes[i]. The
// flattened values get rank-2 value_info so the converter sees the last axis.
void spell_out(ir::Graph& g, size_t i, int64_t axis, std::set<std::string>& taken) {
  ir::Node op = g.nodes[i];
  const std::string x = op.inputs[0];
  const std::string y = op.outputs[0];
  const std::string base = op.name.empty() ? y : op.name;
  const std::string flat = fresh_name(taken, base + "_flat_in");
  const std::string flat_out = fresh_name(taken, base + "_flat_out");
  const std::string shape = fresh_name(taken, base + "_in_shape");

  ir::Node flatten = ir::make_node("Flatten", fresh_name(taken, base + "_Flatten"), {x}, {flat});
  flatten.set_attr(ir::int_attr("axis", axis));
  ir::Node shape_of = ir::make_node("Shape", fresh_name(taken, base + "_Shape"), {x}, {shape});
  op.inputs[0] = flat;
  op.outputs[0] = flat_out;
  op.set_attr(ir::int_attr("axis", 1));
  ir::Node reshape =
      ir::make_node("Reshape", fresh_name(taken, base + "_Reshape"), {flat_out, shape}, {y});

  g.nodes[i] = std::move(op);
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(reshape));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(shape_of));
  g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i), std::move(flatten));
  ir::DType dtype = g.value_dtype(x);
  if (dtype == ir::DType::kUndefined) dtype = ir::DType::kFloat32;  // these ops take floats
  for (const std::string& v : {flat, flat_out}) {
    g.value_info.push_back({v, ir::TypeInfo{dtype, std::vector<ir::Dim>(2), {}}, {}});
  }
}

// Prepares the axis-coercing ops of an opset < 13 model for the 12 -> 13 step.
Status prepare_coerced_axis_ops(ir::Model& model) {
  ir::Graph& g = model.graph;
  std::set<std::string> taken = value_names(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (!is_coerced_axis_op(n) || n.inputs.empty()) continue;
    int64_t axis = n.attr_int("axis", 1);
    const ir::ValueInfo* vi = g.find_value_info(n.inputs[0]);
    const bool rank_known = vi != nullptr && vi->type.dims.has_value();
    const auto rank = rank_known ? static_cast<int64_t>(vi->type.dims->size()) : int64_t{-1};
    if (axis < 0 && rank_known) axis += rank;
    if (rank_known && axis == rank - 1) {
      // Same meaning at 13; the converter only needs to see the rank.
      const bool declared =
          std::any_of(g.value_info.begin(), g.value_info.end(),
                      [&](const ir::ValueInfo& v) { return v.name == vi->name; }) ||
          g.is_graph_input(vi->name);
      if (!declared) {
        ir::ValueInfo copy = *vi;
        g.value_info.push_back(std::move(copy));
      }
      continue;
    }
    if (axis < 0 && model.opset() < 11) {
      return invalid_input("{}: axis {} is negative and the input rank is unknown; cannot convert "
                           "from opset {} to 13 (the axis semantics changed)",
                           n.label(), axis, model.opset());
    }
    // Flatten accepts a negative axis from opset 11, so an unknown rank is fine here.
    spell_out(g, i, axis, taken);
    i += 3;
  }
  return Status::ok();
}

int64_t ir_version_for(int64_t opset) {
  if (opset <= 8) return 3;
  if (opset <= 9) return 4;
  if (opset <= 10) return 5;
  if (opset <= 11) return 6;
  if (opset <= 14) return 7;
  return 8;
}

}  // namespace

Status convert_opset(ir::Model& model, int64_t target) {
  const int64_t from = model.opset();
  if (from == 0) return invalid_input("model imports no default-domain opset; cannot convert it");
  if (from == target) return Status::ok();
  if (target < 1) return usage_error("cannot convert to opset {}", target);
  ir::Model work = model;
  if (from < 13 && target >= 13) PTQ_RETURN_IF_ERROR(prepare_coerced_axis_ops(work));
  ::onnx::ModelProto in;
  model_to_proto(work, &in, /*initializer_data=*/true);
  ::onnx::ModelProto out;
  try {
    out = ::onnx::version_conversion::ConvertVersion(in, static_cast<int>(target));
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return invalid_input("converting the model from opset {} to {} failed: {}", from, target, what);
  }
  PTQ_ASSIGN_OR_RETURN(ir::Model converted, model_from_proto(out, ExternalDataSource{}));
  // The converter's IR keeps only the graph; the model's own fields come from the original.
  converted.ir_version = std::max(work.ir_version, ir_version_for(target));
  converted.producer_name = work.producer_name;
  converted.producer_version = work.producer_version;
  converted.domain = work.domain;
  converted.model_version = work.model_version;
  converted.doc_string = work.doc_string;
  converted.metadata_props = work.metadata_props;
  converted.opaque_functions = work.opaque_functions;
  converted.opaque_training_info = work.opaque_training_info;
  for (const ir::OpsetImport& o : work.opset_imports) {
    if (!o.domain.empty() && o.domain != "ai.onnx") converted.set_opset(o.domain, o.version);
  }
  // value_info the converter may have carried through from before is stale after a rewrite;
  // keep the model's own declarations, drop those added for the converter, infer the rest.
  std::set<std::string> declared;
  for (const ir::ValueInfo& v : model.graph.value_info) declared.insert(v.name);
  std::erase_if(converted.graph.value_info,
                [&](const ir::ValueInfo& v) { return declared.count(v.name) == 0; });
  ::onnx::ModelProto reproto;
  model_to_proto(converted, &reproto, /*initializer_data=*/true);
  converted.graph.inferred.clear();
  PTQ_RETURN_IF_ERROR(infer_shapes(reproto, converted.graph));
  model = std::move(converted);
  return Status::ok();
}

}  // namespace ptq::onnx
