#include "ptq/ir/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace ptq::ir {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kUInt8: return 1;
    case DType::kInt8: return 1;
    case DType::kUInt16: return 2;
    case DType::kInt16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kFloat16: return 2;
    case DType::kFloat64: return 8;
    case DType::kUInt32: return 4;
    case DType::kUInt64: return 8;
    case DType::kBFloat16: return 2;
    case DType::kString:
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kUInt16: return "uint16";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kString: return "string";
    case DType::kBool: return "bool";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "float64";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBFloat16: return "bfloat16";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

bool dtype_known(int32_t onnx_type) {
  auto t = static_cast<DType>(onnx_type);
  return t == DType::kString || dtype_size(t) > 0;
}

bool is_float(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat64;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kUInt16:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt32:
    case DType::kUInt64: return true;
    default: return false;
  }
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: value = mant * 2^-24.
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  uint32_t bits = 0;
  if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (absx < 0x38800000u) {
    // Subnormal half (or zero): round |f| * 2^24 to nearest even integer.
    float v = std::bit_cast<float>(absx) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(v)));
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float bfloat16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace ptq::ir
