// Random tensors for tests, drawn in element order from a caller's seeded generator, so a test's
// expected values follow from its seed alone.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ptq/ir.h"

namespace ptq::testing {

// A tensor of T whose elements are draws of `dist` (cast to T): the one form the others use;
// pass any distribution and engine (std::mt19937_64, normal_distribution<double>, ...).
template <typename T = float, typename Dist, typename Rng>
ir::Tensor drawn_tensor(ir::Shape shape, Dist dist, Rng& rng) {
  ir::Tensor t(ir::dtype_of<T>(), std::move(shape));
  for (T& v : t.span<T>()) v = static_cast<T>(dist(rng));
  return t;
}

// float32, uniform in [lo, hi).
inline ir::Tensor random_tensor(std::mt19937& rng, ir::Shape shape, float lo = -1.0f,
                                float hi = 1.0f) {
  return drawn_tensor(std::move(shape), std::uniform_real_distribution<float>(lo, hi), rng);
}

// float32, N(0, stddev) drawn in float.
inline ir::Tensor normal_tensor(std::mt19937& rng, ir::Shape shape, float stddev) {
  return drawn_tensor(std::move(shape), std::normal_distribution<float>(0.0f, stddev), rng);
}

// int64, uniform in [lo, hi].
inline ir::Tensor random_int64(std::mt19937& rng, ir::Shape shape, int64_t lo, int64_t hi) {
  return drawn_tensor<int64_t>(std::move(shape), std::uniform_int_distribution<int64_t>(lo, hi),
                               rng);
}

// n floats, uniform in [lo, hi).
inline std::vector<float> random_floats(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = d(rng);
  return v;
}

// A tensor of `dtype` whose bytes are random (its own generator seeded with `seed`); bool gets
// 0/1, strings random text. For readers and writers, which must keep every byte.
inline ir::Tensor random_bytes_tensor(ir::DType dtype, ir::Shape shape, uint32_t seed) {
  ir::Tensor t(dtype, std::move(shape));
  std::mt19937 rng(seed);
  if (dtype == ir::DType::kString) {
    for (auto& s : t.strings())
      s = "s" + std::to_string(rng() % 100000) + std::string(rng() % 5, 'x');
    return t;
  }
  auto* bytes = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(rng());
  if (dtype == ir::DType::kBool) {
    for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] &= 1;
  }
  return t;
}

}  // namespace ptq::testing
