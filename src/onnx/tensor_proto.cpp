// TensorProto <-> ir::Tensor. Reading accepts every storage form ONNX allows (raw_data, the
// typed repeated fields, external files); writing always uses raw_data, which keeps the exact
// bits and is what every runtime reads fastest.
#include <bit>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "proto.h"

namespace ptq::onnx {

static_assert(std::endian::native == std::endian::little,
              "raw_data is little-endian; a big-endian host needs byte swaps here");

namespace {

using ir::DType;

// Shape from dims, with the element count computed without overflow.
Status shape_of(const ::onnx::TensorProto& p, std::string_view what, ir::Shape* shape,
                int64_t* count) {
  shape->assign(p.dims().begin(), p.dims().end());
  int64_t n = 1;
  for (int64_t d : *shape) {
    if (d < 0) return invalid_input("{} has a negative dim in {}", what, ir::shape_str(*shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 16 / d) {
      return invalid_input("{} has too many elements: dims {}", what, ir::shape_str(*shape));
    }
    n *= d;
  }
  *count = n;
  return {};
}

Status size_mismatch(std::string_view what, std::string_view field, int64_t have,
                     std::string_view unit, const ir::Shape& shape, DType dtype, int64_t need) {
  return invalid_input("{} has {} {} in {} but its dims {} of {} need {}", what, have, unit, field,
                       ir::shape_str(shape), ir::dtype_name(dtype), need);
}

// Copies a repeated field into the tensor, narrowing each value to T.
template <typename T, typename Field>
void copy_typed(const Field& field, ir::Tensor& t) {
  T* out = t.data<T>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

// The typed field a dtype's values live in when raw_data is not used.
struct TypedField {
  const char* name;
  int size;
};

TypedField typed_field(const ::onnx::TensorProto& p, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return {"float_data", p.float_data_size()};
    case DType::kFloat64: return {"double_data", p.double_data_size()};
    case DType::kInt64: return {"int64_data", p.int64_data_size()};
    case DType::kUInt32:
    case DType::kUInt64: return {"uint64_data", p.uint64_data_size()};
    case DType::kString: return {"string_data", p.string_data_size()};
    default: return {"int32_data", p.int32_data_size()};
  }
}

void fill_typed(const ::onnx::TensorProto& p, ir::Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32: copy_typed<float>(p.float_data(), t); break;
    case DType::kFloat64: copy_typed<double>(p.double_data(), t); break;
    case DType::kInt64: copy_typed<int64_t>(p.int64_data(), t); break;
    case DType::kUInt32: copy_typed<uint32_t>(p.uint64_data(), t); break;
    case DType::kUInt64: copy_typed<uint64_t>(p.uint64_data(), t); break;
    case DType::kInt32: copy_typed<int32_t>(p.int32_data(), t); break;
    case DType::kInt16: copy_typed<int16_t>(p.int32_data(), t); break;
    case DType::kInt8: copy_typed<int8_t>(p.int32_data(), t); break;
    case DType::kUInt8: copy_typed<uint8_t>(p.int32_data(), t); break;
    // float16 and bfloat16 keep their bit patterns in the low 16 bits of int32_data.
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16: copy_typed<uint16_t>(p.int32_data(), t); break;
    case DType::kBool: {
      uint8_t* out = t.data<uint8_t>();
      for (int i = 0; i < p.int32_data_size(); ++i) out[i] = p.int32_data(i) != 0 ? 1 : 0;
      break;
    }
    case DType::kString:
      for (int i = 0; i < p.string_data_size(); ++i) t.strings()[i] = p.string_data(i);
      break;
    default: break;
  }
}

}  // namespace

Expected<ir::Tensor> tensor_from_proto(const ::onnx::TensorProto& p,
                                       const ExternalDataSource& external, std::string_view what) {
  if (p.data_type() == 0) return invalid_input("{} has no data type", what);
  if (!ir::dtype_known(p.data_type())) {
    return invalid_input("{} has unknown or unsupported data type code {}", what, p.data_type());
  }
  const auto dtype = static_cast<DType>(p.data_type());
  ir::Shape shape;
  int64_t count = 0;
  PTQ_RETURN_IF_ERROR(shape_of(p, what, &shape, &count));
  const auto elem = static_cast<int64_t>(ir::dtype_size(dtype));

  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    if (dtype == DType::kString)
      return invalid_input("{} is a string tensor stored externally", what);
    return read_external_data(p, external, what, dtype, shape);
  }
  if (p.has_raw_data()) {
    if (dtype == DType::kString) return invalid_input("{} is a string tensor with raw_data", what);
    const auto have = static_cast<int64_t>(p.raw_data().size());
    if (have != count * elem) {
      return size_mismatch(what, "raw_data", have, "bytes", shape, dtype, count * elem);
    }
    ir::Tensor t(dtype, shape);
    if (have > 0) std::memcpy(t.raw(), p.raw_data().data(), p.raw_data().size());
    return t;
  }
  const TypedField field = typed_field(p, dtype);
  if (field.size != count) {
    return size_mismatch(what, field.name, field.size, "values", shape, dtype, count);
  }
  ir::Tensor t(dtype, shape);
  fill_typed(p, t);
  return t;
}

void set_tensor_data(const ir::Tensor& t, ::onnx::TensorProto* p) {
  if (t.dtype() == DType::kString) {
    p->clear_string_data();
    for (const std::string& s : t.strings()) p->add_string_data(s);
    return;
  }
  // An absent raw_data on a tensor with elements would be read back as typed data; set it
  // always, even when empty, so the storage form is unambiguous.
  p->set_raw_data(t.nbytes() > 0 ? static_cast<const char*>(t.raw()) : "", t.nbytes());
}

void tensor_to_proto(const ir::Tensor& t, ::onnx::TensorProto* p, bool with_data) {
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  p->clear_dims();
  for (int64_t d : t.shape()) p->add_dims(d);
  if (with_data) set_tensor_data(t, p);
}

}  // namespace ptq::onnx
