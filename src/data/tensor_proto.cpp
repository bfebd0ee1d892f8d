#include "tensor_proto.h"

#include <cstring>
#include <limits>

#include <onnx/onnx_pb.h>

namespace ptq::data {

namespace {

using ir::DType;

template <typename Dst, typename Field>
void copy_field(const Field& field, ir::Tensor& t) {
  Dst* out = t.data<Dst>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

// The typed repeated field ONNX uses for `dtype` and its element count.
Status copy_typed(const onnx::TensorProto& p, ir::Tensor& t, const std::string& what) {
  const int64_t n = t.size();
  auto check = [&](int64_t have) -> Status {
    if (have != n) {
      return invalid_input("{}: holds {} values for shape {} ({} elements)", what, have,
                           ir::shape_str(t.shape()), n);
    }
    return {};
  };
  switch (t.dtype()) {
    case DType::kFloat32:
      PTQ_RETURN_IF_ERROR(check(p.float_data_size()));
      copy_field<float>(p.float_data(), t);
      return {};
    case DType::kFloat64:
      PTQ_RETURN_IF_ERROR(check(p.double_data_size()));
      copy_field<double>(p.double_data(), t);
      return {};
    case DType::kInt64:
      PTQ_RETURN_IF_ERROR(check(p.int64_data_size()));
      copy_field<int64_t>(p.int64_data(), t);
      return {};
    case DType::kUInt32:
      PTQ_RETURN_IF_ERROR(check(p.uint64_data_size()));
      copy_field<uint32_t>(p.uint64_data(), t);
      return {};
    case DType::kUInt64:
      PTQ_RETURN_IF_ERROR(check(p.uint64_data_size()));
      copy_field<uint64_t>(p.uint64_data(), t);
      return {};
    case DType::kInt32:
      PTQ_RETURN_IF_ERROR(check(p.int32_data_size()));
      copy_field<int32_t>(p.int32_data(), t);
      return {};
    case DType::kInt16:
      PTQ_RETURN_IF_ERROR(check(p.int32_data_size()));
      copy_field<int16_t>(p.int32_data(), t);
      return {};
    case DType::kInt8:
      PTQ_RETURN_IF_ERROR(check(p.int32_data_size()));
      copy_field<int8_t>(p.int32_data(), t);
      return {};
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:  // 16-bit patterns in int32_data
      PTQ_RETURN_IF_ERROR(check(p.int32_data_size()));
      copy_field<uint16_t>(p.int32_data(), t);
      return {};
    case DType::kUInt8:
      PTQ_RETURN_IF_ERROR(check(p.int32_data_size()));
      copy_field<uint8_t>(p.int32_data(), t);
      return {};
    case DType::kBool: {
      PTQ_RETURN_IF_ERROR(check(p.int32_data_size()));
      auto* out = t.data<uint8_t>();
      for (int i = 0; i < p.int32_data_size(); ++i) out[i] = p.int32_data(i) != 0 ? 1 : 0;
      return {};
    }
    default:
      return invalid_input("{}: unsupported tensor data type {}", what, p.data_type());
  }
}

}  // namespace

Expected<NamedTensor> parse_tensor_proto(std::string_view bytes, const std::string& what) {
  onnx::TensorProto p;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return invalid_input("{}: not a valid ONNX TensorProto", what);
  }
  if (!ir::dtype_known(p.data_type()) || p.data_type() == static_cast<int>(DType::kString) ||
      p.data_type() == 0) {
    return invalid_input("{}: unsupported tensor data type {}", what, p.data_type());
  }
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    return invalid_input("{}: tensors with external data are not supported", what);
  }
  if (p.has_segment()) return invalid_input("{}: segmented tensors are not supported", what);
  ir::Shape shape(p.dims().begin(), p.dims().end());
  // Every element takes at least one byte of the message, which bounds a sane element count
  // before anything is allocated.
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0) return invalid_input("{}: bad dimension {} in {}", what, d, ir::shape_str(shape));
    if (d > 0 && elements > static_cast<int64_t>(bytes.size()) / d) elements = -1;
    if (elements < 0) {
      return invalid_input("{}: shape {} needs more data than the file holds", what,
                           ir::shape_str(shape));
    }
    elements *= d;
  }
  const auto dtype = static_cast<DType>(p.data_type());
  NamedTensor out{p.name(), ir::Tensor(dtype, shape)};
  ir::Tensor& t = out.tensor;
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes()) {
      return invalid_input("{}: raw_data has {} bytes, {} {} needs {}", what, p.raw_data().size(),
                           ir::dtype_name(dtype), ir::shape_str(shape), t.nbytes());
    }
    if (t.nbytes() > 0) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return out;
  }
  PTQ_RETURN_IF_ERROR(copy_typed(p, t, what));
  return out;
}

}  // namespace ptq::data
