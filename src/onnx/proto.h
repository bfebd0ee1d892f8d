// Internal to ptq_onnx: conversions between libonnx's protobuf classes and the ir, shared by
// the reader, the writer and the checker glue.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "onnx/onnx_pb.h"
#include "ptq/ir.h"
#include "ptq/status.h"

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

// Fills graph.inferred from onnx::shape_inference; best effort (a failure leaves it empty).
void infer_shapes(::onnx::ModelProto& proto, ir::Graph& graph);

// IR versions this reader accepts.
inline constexpr int64_t kMinIrVersion = 3;
inline constexpr int64_t kMaxIrVersion = 10;

}  // namespace ptq::onnx
