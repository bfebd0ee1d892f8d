// Runs one CPU kernel directly (no executor) in its fast or reference form, and compares
// tensors. Shared by the runtime kernel tests and benchmarks.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/node_builder.h"
#include "common/poisoned.h"
#include "common/random.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"

namespace ptq::runtime::testing {

using ptq::testing::attr_float;
using ptq::testing::attr_int;
using ptq::testing::attr_ints;
using ptq::testing::attr_string;
using ptq::testing::make_node;
using ptq::testing::PoisonAllocator;
using ptq::testing::random_tensor;

// Runs `node` on `inputs` (null = omitted) with `isa`'s kernels. Fails the test on an error
// and returns {}.
inline std::vector<ir::Tensor> run_kernel(const ir::Node& node, int64_t opset,
                                          const std::vector<const ir::Tensor*>& inputs,
                                          bool reference, int threads = 1,
                                          CpuIsa isa = CpuIsa::kAuto) {
  CpuBackendOptions options;
  options.reference = reference;
  options.isa = isa;
  auto backend = make_cpu_backend(options);
  KernelContext ctx{node, opset, threads, nullptr, reference};
  auto kernel = backend->create_kernel(ctx);
  EXPECT_TRUE(kernel.has_value()) << kernel.status().message();
  if (!kernel) return {};
  std::vector<ir::Tensor> outs(node.outputs.size());
  PoisonAllocator alloc;
  Status st = (*kernel)->run(inputs, outs, alloc);
  EXPECT_TRUE(st.is_ok()) << st.message();
  if (!st.is_ok()) return {};
  return outs;
}

// The error a kernel reports (creation or run), or "" when it succeeds.
inline std::string kernel_error(const ir::Node& node, int64_t opset,
                                const std::vector<const ir::Tensor*>& inputs) {
  auto backend = make_cpu_backend();
  KernelContext ctx{node, opset, 1, nullptr, false};
  auto kernel = backend->create_kernel(ctx);
  if (!kernel) return kernel.status().message();
  std::vector<ir::Tensor> outs(node.outputs.size());
  PoisonAllocator alloc;
  Status st = (*kernel)->run(inputs, outs, alloc);
  return st.is_ok() ? "" : st.message();
}

inline ir::Tensor to_double(const ir::Tensor& t) {
  ir::Tensor d(ir::DType::kFloat64, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) d.data<double>()[i] = t.as_double(i);
  return d;
}

// ||a - b|| / ||b|| over all elements (both read as double); +inf on a shape mismatch or NaN.
inline double rel_l2(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.shape() != b.shape()) return INFINITY;
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.as_double(i), y = b.as_double(i);
    if (std::isnan(x) != std::isnan(y)) return INFINITY;
    if (std::isnan(x)) continue;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den == 0.0 ? std::sqrt(num) : std::sqrt(num / den);
}

inline bool bit_identical(const ir::Tensor& a, const ir::Tensor& b) {
  // memcmp must not see the null data pointer of an empty tensor, even for 0 bytes.
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

}  // namespace ptq::runtime::testing
