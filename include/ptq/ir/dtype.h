// Element types of tensors, numbered as ONNX's TensorProto.DataType so conversion is a cast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ptq::ir {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// Bytes per element; 0 for kUndefined and kString (strings are stored apart).
size_t dtype_size(DType t);
// Lower-case ONNX-style name: "float32", "int8", … ("undefined" for unknown values).
std::string_view dtype_name(DType t);
// True for a DType value this build knows about.
bool dtype_known(int32_t onnx_type);
bool is_float(DType t);    // float16, bfloat16, float32, float64
bool is_integer(DType t);  // signed or unsigned integers (not bool)

// IEEE half and bfloat16 conversions (round to nearest even).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

// Maps a C++ element type to its DType.
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }

}  // namespace ptq::ir
