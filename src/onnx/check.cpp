// Glue to libonnx's checker and shape inference. libonnx reports problems by throwing; the
// exceptions stop here and become a Status (or, for inference at load, an empty result).
#include <algorithm>
#include <exception>
#include <unordered_set>

#include <fmt/format.h>

#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"
#include "proto.h"
#include "ptq/onnx.h"

namespace ptq::onnx {

namespace {

// libonnx messages span lines ("==> Context: …"); errors here are one line.
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  s.erase(std::unique(s.begin(), s.end(), [](char a, char b) { return a == ' ' && b == ' '; }),
          s.end());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// libonnx 1.12 knows IR versions up to 8. Later versions (9, 10) add fields this build cannot
// represent anyway, so their models are checked under the newest rules it knows.
constexpr int64_t kCheckerIrVersion = ::onnx::Version::IR_VERSION;

}  // namespace

Status check_model(const ir::Model& model) {
  ::onnx::ModelProto proto;
  model_to_proto(model, &proto, /*initializer_data=*/true);
  if (proto.ir_version() > kCheckerIrVersion) proto.set_ir_version(kCheckerIrVersion);
  try {
    ::onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    return invalid_input("model fails the ONNX checker: {}", one_line(e.what()));
  }
  // The full check: strict shape inference with type checks, as onnx.checker's full_check.
  std::string failure;
  PTQ_RETURN_IF_ERROR(
      guarded_shape_inference(proto, ::onnx::ShapeInferenceOptions(true, 1, false), &failure));
  if (!failure.empty()) {
    return invalid_input("model fails ONNX shape inference: {}", one_line(failure));
  }
  return {};
}

Status infer_shapes(::onnx::ModelProto& proto, ir::Graph& graph) {
  const int declared = proto.graph().value_info_size();
  std::string failure;
  PTQ_RETURN_IF_ERROR(guarded_shape_inference(proto, ::onnx::ShapeInferenceOptions(), &failure));
  // Best effort: a model libonnx cannot infer still loads, with declared types only.
  if (!failure.empty()) return {};
  std::unordered_set<std::string_view> have;
  for (const auto* list : {&graph.inputs, &graph.outputs, &graph.value_info}) {
    for (const ir::ValueInfo& v : *list) {
      if (v.type.dims || !v.type.opaque.empty()) have.insert(v.name);
    }
  }
  auto take = [&](const ::onnx::ValueInfoProto& p) {
    if (have.count(p.name()) || !p.has_type()) return;
    auto type = type_from_proto(p.type(), p.name());
    if (type) graph.inferred.push_back({p.name(), std::move(*type), {}});
  };
  const auto& g = proto.graph();
  for (int i = declared; i < g.value_info_size(); ++i) take(g.value_info(i));
  for (const auto& o : g.output()) take(o);
  return {};
}

}  // namespace ptq::onnx
