#include "convert.h"

#include <cstring>
#include <limits>

namespace ptq::data {

namespace {

using ir::DType;

bool is_int_or_bool(DType t) { return ir::is_integer(t) || t == DType::kBool; }

double load_double(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::kFloat32: return static_cast<const float*>(p)[i];
    case DType::kFloat64: return static_cast<const double*>(p)[i];
    case DType::kFloat16: return ir::half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16: return ir::bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt8: return static_cast<const uint8_t*>(p)[i];
    case DType::kUInt16: return static_cast<const uint16_t*>(p)[i];
    case DType::kUInt32: return static_cast<const uint32_t*>(p)[i];
    case DType::kUInt64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::kBool: return static_cast<const uint8_t*>(p)[i] != 0 ? 1.0 : 0.0;
    default: return 0.0;
  }
}

// Integers travel as (negative, magnitude) so all of int64 and uint64 fit.
struct Int {
  bool negative;
  uint64_t magnitude;
};

Int load_int(DType t, const void* p, int64_t i) {
  auto s = [](int64_t v) {
    return Int{v < 0, v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v)};
  };
  switch (t) {
    case DType::kInt8: return s(static_cast<const int8_t*>(p)[i]);
    case DType::kInt16: return s(static_cast<const int16_t*>(p)[i]);
    case DType::kInt32: return s(static_cast<const int32_t*>(p)[i]);
    case DType::kInt64: return s(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt8: return {false, static_cast<const uint8_t*>(p)[i]};
    case DType::kUInt16: return {false, static_cast<const uint16_t*>(p)[i]};
    case DType::kUInt32: return {false, static_cast<const uint32_t*>(p)[i]};
    case DType::kUInt64: return {false, static_cast<const uint64_t*>(p)[i]};
    case DType::kBool: return {false, static_cast<const uint8_t*>(p)[i] != 0 ? 1u : 0u};
    default: return {false, 0};
  }
}

template <typename T>
bool store_int_as(Int v, void* p, int64_t i) {
  using L = std::numeric_limits<T>;
  if (v.negative) {
    if constexpr (!L::is_signed) {
      return false;
    } else {
      if (v.magnitude > static_cast<uint64_t>(L::max()) + 1) return false;
      static_cast<T*>(p)[i] = static_cast<T>(-static_cast<int64_t>(v.magnitude - 1) - 1);
      return true;
    }
  }
  if (v.magnitude > static_cast<uint64_t>(L::max())) return false;
  static_cast<T*>(p)[i] = static_cast<T>(v.magnitude);
  return true;
}

bool store_int(DType t, Int v, void* p, int64_t i) {
  switch (t) {
    case DType::kInt8: return store_int_as<int8_t>(v, p, i);
    case DType::kInt16: return store_int_as<int16_t>(v, p, i);
    case DType::kInt32: return store_int_as<int32_t>(v, p, i);
    case DType::kInt64: return store_int_as<int64_t>(v, p, i);
    case DType::kUInt8: return store_int_as<uint8_t>(v, p, i);
    case DType::kUInt16: return store_int_as<uint16_t>(v, p, i);
    case DType::kUInt32: return store_int_as<uint32_t>(v, p, i);
    case DType::kUInt64: return store_int_as<uint64_t>(v, p, i);
    case DType::kBool:
      static_cast<uint8_t*>(p)[i] = v.magnitude != 0 ? 1 : 0;
      return true;
    default: return false;
  }
}

void store_float(DType t, double v, void* p, int64_t i) {
  switch (t) {
    case DType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DType::kFloat16:
      static_cast<uint16_t*>(p)[i] = ir::float_to_half(static_cast<float>(v));
      break;
    case DType::kBFloat16:
      static_cast<uint16_t*>(p)[i] = ir::float_to_bfloat16(static_cast<float>(v));
      break;
    default: break;
  }
}

}  // namespace

bool can_convert(DType from, DType to) {
  if (from == to) return ir::dtype_size(from) > 0;
  const bool from_number = ir::is_float(from) || is_int_or_bool(from);
  if (ir::is_float(to)) return from_number;
  if (is_int_or_bool(to)) return is_int_or_bool(from);
  return false;
}

Status convert(DType from, const void* src, DType to, void* dst, int64_t n,
               const std::string& what) {
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n) * ir::dtype_size(to));
    return {};
  }
  if (!can_convert(from, to)) {
    return invalid_input("{}: cannot feed {} data to a {} input", what, ir::dtype_name(from),
                         ir::dtype_name(to));
  }
  if (ir::is_float(to)) {
    // float16 -> float32 goes through double exactly; so do all the integer types but
    // (u)int64 beyond 2^53, which round as a cast to float would.
    for (int64_t i = 0; i < n; ++i) store_float(to, load_double(from, src, i), dst, i);
    return {};
  }
  for (int64_t i = 0; i < n; ++i) {
    const Int v = load_int(from, src, i);
    if (!store_int(to, v, dst, i)) {
      return invalid_input("{}: value {}{} at element {} does not fit {}", what,
                           v.negative ? "-" : "", v.magnitude, i, ir::dtype_name(to));
    }
  }
  return {};
}

}  // namespace ptq::data
