// Helpers for the per-op kernel tests: run a node's CPU kernel directly (no executor) on
// NaN-poisoned outputs, and compare with float64 references.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/node_builder.h"
#include "common/poisoned.h"
#include "common/random.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "registry.h"

namespace ptq::test {

using ptq::testing::op;
using ptq::testing::random_floats;
using ptq::testing::random_int64;
using ptq::testing::random_tensor;

// Runs node's kernel on `inputs` (null = omitted) and returns its outputs.
inline Expected<std::vector<ir::Tensor>> run_op(const ir::Node& node,
                                                std::vector<const ir::Tensor*> inputs,
                                                int64_t opset = 17, int threads = 1) {
  runtime::KernelFactory factory = runtime::cpu::find_factory(node.op_type);
  if (factory == nullptr) return invalid_input("no kernel for {}", node.op_type);
  runtime::KernelContext ctx{node, opset, threads, nullptr};
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Kernel> kernel, factory(ctx));
  std::vector<ir::Tensor> outputs(node.outputs.size());
  ptq::testing::PoisonAllocator alloc;
  PTQ_RETURN_IF_ERROR(kernel->run(inputs, outputs, alloc));
  return outputs;
}

// Runs and asserts success; returns output 0.
inline ir::Tensor run1(const ir::Node& node, std::vector<const ir::Tensor*> inputs,
                       int64_t opset = 17, int threads = 1) {
  auto r = run_op(node, std::move(inputs), opset, threads);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  if (!r.has_value() || r->empty()) return {};
  return std::move((*r)[0]);
}

// The L2 norms of got - want and of want, summed in float64.
inline std::pair<double, double> l2_error_and_norm(const std::vector<float>& got,
                                                   const std::vector<float>& want) {
  double err = 0.0, norm = 0.0;
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    err += (got[k] - want[k]) * double(got[k] - want[k]);
    norm += want[k] * double(want[k]);
  }
  return {std::sqrt(err), std::sqrt(norm)};
}

inline ir::Tensor int64s(std::vector<int64_t> v) {
  return ir::make_tensor<int64_t>({static_cast<int64_t>(v.size())}, std::span<const int64_t>(v));
}

// Unravels flat index i of `shape` into a multi-index.
inline std::vector<int64_t> unravel(int64_t i, const ir::Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const ir::Shape& shape) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

// Element-wise comparison of a float32 result with a float64 reference.
inline void expect_close(const ir::Tensor& got, const std::vector<double>& want,
                         const ir::Shape& want_shape, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.shape(), want_shape);
  ASSERT_EQ(static_cast<size_t>(got.size()), want.size());
  for (int64_t i = 0; i < got.size(); ++i) {
    const double g = got.as_double(i);
    const double w = want[static_cast<size_t>(i)];
    ASSERT_NEAR(g, w, atol + rtol * std::abs(w)) << "at flat index " << i;
  }
}

// Empty tensors may have no storage at all: memcmp must not see their null pointers.
inline bool same_bytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// The same floats bit for bit (NaNs and signed zeros included).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace ptq::test
