// Internal to ptq_onnx: conversions between libonnx's protobuf classes and the ir, shared by
// the reader, the writer and the checker glue.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "onnx/onnx_pb.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace onnx {
struct ShapeInferenceOptions;
}

namespace ptq::onnx {

// Where a tensor's external data is looked up: files relative to the model's folder.
struct ExternalDataSource {
  std::filesystem::path base_dir;
};

// TensorProto -> Tensor. `what` names the tensor in errors ("initializer 'w'"). Reads raw_data,
// every typed field and external data; checks that the data size matches the dims.
Expected<ir::Tensor> tensor_from_proto(const ::onnx::TensorProto& proto,
                                       const ExternalDataSource& external, std::string_view what);
// Tensor -> TensorProto (name left to the caller). With `with_data` false only the dtype and
// dims are set (the writer places the data later, inline or external).
void tensor_to_proto(const ir::Tensor& tensor, ::onnx::TensorProto* proto, bool with_data = true);
// Sets the tensor's bytes as raw_data (string tensors: string_data).
void set_tensor_data(const ir::Tensor& tensor, ::onnx::TensorProto* proto);

// Reads an EXTERNAL tensor of the given dtype and shape (element count already checked for
// overflow); names file, tensor, offset and length in errors.
Expected<ir::Tensor> read_external_data(const ::onnx::TensorProto& proto,
                                        const ExternalDataSource& external, std::string_view what,
                                        ir::DType dtype, const ir::Shape& shape);

Expected<ir::TypeInfo> type_from_proto(const ::onnx::TypeProto& proto, std::string_view what);
void type_to_proto(const ir::TypeInfo& type, ::onnx::ValueInfoProto* proto);

// Whole model, either direction. `infer_shapes` is applied by the reader afterwards.
Expected<ir::Model> model_from_proto(const ::onnx::ModelProto& proto,
                                     const ExternalDataSource& external);
// With `initializer_data` false the initializers carry dtype and dims only.
void model_to_proto(const ir::Model& model, ::onnx::ModelProto* proto, bool initializer_data);
void graph_to_proto(const ir::Graph& graph, ::onnx::GraphProto* proto, bool initializer_data);

// Fills graph.inferred from onnx::shape_inference; best effort (what libonnx cannot infer stays
// unknown), except that a malformed node fails (kInvalidInput naming it): see node_guard.cpp.
Status infer_shapes(::onnx::ModelProto& proto, ir::Graph& graph);

// Checks every default-domain node, subgraphs included, against its op schema for the model's
// opset: input/output counts, required inputs and attributes, and the kernel_shape / strides /
// dilations / pads of conv and pool ops. Ops libonnx does not know pass. kInvalidInput names
// the node.
Status check_node_schemas(const ::onnx::ModelProto& proto);
// libonnx's shape inference on `proto`, in place, made safe on malformed models: the nodes are
// checked first (check_node_schemas) and the ops whose inference trusts their inputs' ranks run
// behind guards. A malformed node fails (kInvalidInput naming it); when libonnx's own inference
// throws, its message goes to `libonnx_error` (if given) and the result is OK, so the caller
// decides whether that matters. Adds an attribute to guarded nodes: run it on a copy you discard.
Status guarded_shape_inference(::onnx::ModelProto& proto,
                               const ::onnx::ShapeInferenceOptions& options,
                               std::string* libonnx_error);

// IR versions this reader accepts.
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 10;

}  // namespace ptq::onnx
