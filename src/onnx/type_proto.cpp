// TypeProto <-> ir::TypeInfo. Tensor types become dtype + dims (symbolic dims kept); every
// other type (sequence, map, optional, sparse tensor) travels as its serialized bytes.
#include <exception>

#include "onnx/defs/data_type_utils.h"
#include "proto.h"
#include "ptq/onnx.h"

namespace ptq::onnx {

Expected<ir::TypeInfo> type_from_proto(const ::onnx::TypeProto& p, std::string_view what) {
  ir::TypeInfo type;
  if (p.value_case() != ::onnx::TypeProto::kTensorType || p.tensor_type().elem_type() == 0) {
    if (p.value_case() != ::onnx::TypeProto::VALUE_NOT_SET || p.ByteSizeLong() > 0) {
      type.opaque = p.SerializeAsString();
    }
    return type;
  }
  const auto& tt = p.tensor_type();
  if (!ir::dtype_known(tt.elem_type())) {
    return invalid_input("{} has unknown or unsupported element type code {}", what,
                         tt.elem_type());
  }
  type.dtype = static_cast<ir::DType>(tt.elem_type());
  if (tt.has_shape()) {
    std::vector<ir::Dim> dims;
    dims.reserve(static_cast<size_t>(tt.shape().dim_size()));
    for (const auto& d : tt.shape().dim()) {
      if (d.value_case() == ::onnx::TensorShapeProto::Dimension::kDimValue && d.dim_value() >= 0) {
        dims.push_back(ir::Dim::of(d.dim_value()));
      } else if (d.value_case() == ::onnx::TensorShapeProto::Dimension::kDimParam) {
        dims.push_back(ir::Dim::symbol(d.dim_param()));
      } else {
        dims.push_back(ir::Dim{});
      }
    }
    type.dims = std::move(dims);
  }
  return type;
}

void type_to_proto(const ir::TypeInfo& type, ::onnx::ValueInfoProto* proto) {
  if (!type.opaque.empty()) {
    proto->mutable_type()->ParseFromString(type.opaque);
    return;
  }
  if (type.dtype == ir::DType::kUndefined && !type.dims) return;
  auto* tt = proto->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(type.dtype));
  if (!type.dims) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : *type.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) {
      dim->set_dim_value(d.value);
    } else if (!d.param.empty()) {
      dim->set_dim_param(d.param);
    }
  }
}

std::string type_name(const ir::TypeInfo& type) {
  if (type.opaque.empty()) return std::string(ir::dtype_name(type.dtype));
  ::onnx::TypeProto p;
  if (!p.ParseFromString(type.opaque)) return "undefined";
  try {
    return *::onnx::Utils::DataTypeUtils::ToType(p);
  } catch (const std::exception&) {
    return "undefined";
  }
}

}  // namespace ptq::onnx
