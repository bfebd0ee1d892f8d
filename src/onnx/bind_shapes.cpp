// Input shapes for planning: graph inputs bound to concrete dims, then libonnx's shape inference
// (with data propagation, so Shape -> Gather -> Concat -> Reshape chains follow) on a copy of
// the model. The model keeps its symbolic dims; only the returned dims are concrete.
#include <fmt/format.h>

#include <algorithm>

#include "onnx/defs/shape_inference.h"
#include "proto.h"
#include "ptq/onnx.h"

namespace ptq::onnx {

namespace {

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string declared_str(const ::onnx::TensorShapeProto& shape) {
  std::vector<std::string> parts;
  for (const auto& d : shape.dim()) {
    parts.push_back(d.has_dim_value() ? std::to_string(d.dim_value())
                                      : (d.dim_param().empty() ? "?" : d.dim_param()));
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

::onnx::ValueInfoProto* find_real_input(::onnx::GraphProto& g, const std::string& name) {
  for (const auto& init : g.initializer()) {
    if (init.name() == name) return nullptr;  // an initializer listed as input is not fed
  }
  for (auto& in : *g.mutable_input()) {
    if (in.name() == name) return &in;
  }
  return nullptr;
}

std::string real_input_names(const ir::Graph& graph) {
  std::vector<std::string> names;
  for (const ir::ValueInfo* v : graph.real_inputs()) names.push_back(v->name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// Sets the tensor shape of `in` to `dims` (-1 keeps the declared dim); a rank or fixed dim the
// model declares otherwise is an error.
Status bind(::onnx::ValueInfoProto& in, const std::vector<int64_t>& dims) {
  if (!in.type().has_tensor_type()) {
    return invalid_input("input '{}' is not a tensor; it takes no shape", in.name());
  }
  auto* tensor = in.mutable_type()->mutable_tensor_type();
  if (!tensor->has_shape()) {
    for (size_t i = 0; i < dims.size(); ++i) tensor->mutable_shape()->add_dim();
  }
  auto* shape = tensor->mutable_shape();
  if (static_cast<size_t>(shape->dim_size()) != dims.size()) {
    return invalid_input("input '{}' has rank {} ({}); the shape given, {}, has rank {}", in.name(),
                         shape->dim_size(), declared_str(*shape), dims_str(dims), dims.size());
  }
  const std::string declared = declared_str(*shape);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = shape->mutable_dim(static_cast<int>(i));
    if (dims[i] < 0) continue;
    if (d->has_dim_value() && d->dim_value() != dims[i]) {
      return invalid_input("input '{}' has shape {}; the shape given, {}, differs in dim {}",
                           in.name(), declared, dims_str(dims), i);
    }
    d->set_dim_value(dims[i]);
  }
  return Status::ok();
}

void take_dims(const ::onnx::ValueInfoProto& p, ValueDims& out) {
  if (!p.has_type()) return;
  auto type = type_from_proto(p.type(), p.name());
  if (type && type->dims) out[p.name()] = *type->dims;
}

}  // namespace

Expected<ValueDims> bind_input_shapes(const ir::Model& model, const InputShapes& shapes) {
  ::onnx::ModelProto proto;
  model_to_proto(model, &proto, /*initializer_data=*/true);
  ::onnx::GraphProto& g = *proto.mutable_graph();
  for (const auto& [name, dims] : shapes) {
    ::onnx::ValueInfoProto* in = find_real_input(g, name);
    if (in == nullptr) {
      return invalid_input("'{}' is not an input of the model (inputs: {})", name,
                           real_input_names(model.graph));
    }
    PTQ_RETURN_IF_ERROR(bind(*in, dims));
  }
  // Guarded: bound dims give libonnx ranks it did not see at load (node_guard.cpp).
  std::string failure;
  PTQ_RETURN_IF_ERROR(
      guarded_shape_inference(proto, ::onnx::ShapeInferenceOptions(false, 0, true), &failure));
  if (!failure.empty()) {
    return invalid_input("shape inference fails with the input shapes given: {}",
                         one_line(failure));
  }
  ValueDims out;
  for (const auto& p : g.input()) take_dims(p, out);
  for (const auto& p : g.value_info()) take_dims(p, out);
  for (const auto& p : g.output()) take_dims(p, out);
  for (const auto& init : g.initializer()) out.erase(init.name());
  return out;
}

}  // namespace ptq::onnx
