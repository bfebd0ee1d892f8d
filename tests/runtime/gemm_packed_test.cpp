// The packed-operand GEMM (micro-kernel, packing, epilogue) against a double-precision
// reference on random shapes (fixed seeds), and the kernels that pack a constant operand once
// (Conv weights, Gemm/MatMul B given as initializers) against their reference kernels, with
// bit-identical results for any thread count and for packed-once vs packed-per-call weights.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kernel_harness.h"

#include "common/isa_suite.h"
#include "isa_begin.h"
#include "gemm_packed.h"
#include "shared_packing.h"
#include "isa_end.h"

namespace ptq::runtime::testing {
namespace {

namespace isa = cpu::PTQ_ISA_NS;  // this copy's level

PTQ_ISA_FIXTURE(GemmPacked);
PTQ_ISA_FIXTURE(SharedPacking);

using isa::Activation;
using isa::GemmEpilogue;

struct Matrix {
  int64_t rows, cols;
  std::vector<float> v;
};

Matrix random_matrix(std::mt19937& rng, int64_t rows, int64_t cols) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Matrix m{rows, cols, std::vector<float>(static_cast<size_t>(rows * cols))};
  for (float& x : m.v) x = dist(rng);
  return m;
}

// C = op(A) op(B) + bias, clamped, through pack_a / pack_b / gemm_packed.
std::vector<float> packed_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                  const Matrix& a, const Matrix& b, const GemmEpilogue& e,
                                  int64_t ldc) {
  std::vector<float> pa(static_cast<size_t>(isa::packed_a_floats(m, k)));
  std::vector<float> pb(static_cast<size_t>(isa::packed_b_floats(k, n)));
  isa::pack_a(ta, m, k, a.v.data(), a.cols, pa.data());
  isa::pack_b(tb, k, n, b.v.data(), b.cols, pb.data());
  std::vector<float> c(static_cast<size_t>(m * ldc), -7.0f);  // columns >= n must stay -7
  isa::gemm_packed(m, n, k, pa.data(), pb.data(), c.data(), ldc, e);
  return c;
}

PTQ_ISA_TEST(GemmPacked, MatchesDoubleReferenceOnRandomShapes) {
  std::mt19937 rng(2024);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int it = 0; it < 60; ++it) {
    // Shapes around the register block (rows and column tails) and the k and column blocks.
    const int64_t m = pick(1, 3 * isa::kGemmMR + 1), n = pick(1, it % 5 == 0 ? 700 : 80);
    const int64_t k = it % 7 == 0 ? 0 : pick(1, it % 3 == 0 ? 600 : 40);
    const bool ta = pick(0, 1) == 1, tb = pick(0, 1) == 1;
    const Matrix a = ta ? random_matrix(rng, k, m) : random_matrix(rng, m, k);
    const Matrix b = tb ? random_matrix(rng, n, k) : random_matrix(rng, k, n);
    const Matrix bias = random_matrix(rng, 1, m);
    const int64_t ldc = n + it % 3;
    const Matrix residual = random_matrix(rng, m, ldc);
    GemmEpilogue e;
    if (it % 2 == 0) e.row_bias = bias.v.data();
    if (it % 3 == 1) e.residual = residual.v.data(), e.ldr = ldc;
    if (it % 4 == 1) e.act = Activation::kRelu;
    if (it % 4 == 3) e.act = Activation::kClip, e.lo = -0.5f, e.hi = 0.25f;
    const std::vector<float> c = packed_product(ta, tb, m, n, k, a, b, e, ldc);
    double err = 0.0, norm = 0.0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = c[static_cast<size_t>(i * ldc + j)];
        if (j >= n) {
          ASSERT_EQ(got, -7.0f) << "wrote past column " << n;
          continue;
        }
        double s = 0.0;
        for (int64_t q = 0; q < k; ++q) {
          s +=
              double(ta ? a.v[q * m + i] : a.v[i * k + q]) * (tb ? b.v[j * k + q] : b.v[q * n + j]);
        }
        if (e.row_bias != nullptr) s += e.row_bias[i];
        if (e.residual != nullptr) s += e.residual[i * e.ldr + j];
        if (e.act == Activation::kRelu) s = std::max(s, 0.0);
        if (e.act == Activation::kClip) s = std::min<double>(std::max<double>(s, e.lo), e.hi);
        err += (got - s) * (got - s);
        norm += s * s;
      }
    }
    // Each element is a float sum of k products in order: its rounding grows like sqrt(k) float
    // epsilons (k = 460 at the AVX2 level's shapes: 1.6e-6), well under 4e-6 for k <= 600.
    EXPECT_LE(std::sqrt(err / std::max(norm, 1e-30)), 4e-6)
        << "m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb;
  }
}

// A single row (a matrix-vector product) runs groups of whole panels through row_panels; each
// element must still be the bits the micro-kernel gives the same row inside a larger product
// (which the test above checks against the reference), with every epilogue.
PTQ_ISA_TEST(GemmPacked, OneRowSameBitsAsThatRowOfALargerProduct) {
  std::mt19937 rng(31);
  const int64_t shapes[][2] = {{1000, 1280}, {256, 300}, {130, 64}, {384, 7}, {20, 50}};
  for (int it = 0; it < 10; ++it) {
    const int64_t n = shapes[it % 5][0], k = shapes[it % 5][1], m = 3;
    const Matrix a = random_matrix(rng, m, k), b = random_matrix(rng, n, k);
    const Matrix bias = random_matrix(rng, 1, m), residual = random_matrix(rng, m, n);
    GemmEpilogue e;
    if (it % 2 == 0) e.row_bias = bias.v.data();
    if (it % 3 != 2) e.residual = residual.v.data(), e.ldr = n;
    if (it % 4 == 1) e.act = Activation::kRelu;
    if (it % 4 == 3) e.act = Activation::kClip, e.lo = -0.5f, e.hi = 0.25f;
    const Matrix row{1, k, std::vector<float>(a.v.begin(), a.v.begin() + k)};
    const std::vector<float> one = packed_product(false, true, 1, n, k, row, b, e, n);
    const std::vector<float> all = packed_product(false, true, m, n, k, a, b, e, n);
    EXPECT_EQ(0, std::memcmp(one.data(), all.data(), static_cast<size_t>(n) * sizeof(float)))
        << "n " << n << " k " << k;
  }
}

// GemmEpilogue::stream writes whole aligned vectors past the caches: the same values as plain
// stores, for k within one slice and across slices (partial sums are never streamed), whole
// and partial panels, every epilogue; rows 64-byte aligned (ldc a multiple of 16).
PTQ_ISA_TEST(GemmPacked, StreamedStoresGiveTheSameValues) {
  std::mt19937 rng(8);
  for (const int64_t k : {50, 600}) {
    const int64_t m = 30, n = 200, ldc = 208;
    const Matrix a = random_matrix(rng, m, k), b = random_matrix(rng, k, n);
    const Matrix bias = random_matrix(rng, 1, m), residual = random_matrix(rng, m, ldc);
    std::vector<float> pa(static_cast<size_t>(isa::packed_a_floats(m, k)));
    std::vector<float> pb(static_cast<size_t>(isa::packed_b_floats(k, n)));
    isa::pack_a(false, m, k, a.v.data(), k, pa.data());
    isa::pack_b(false, k, n, b.v.data(), n, pb.data());
    GemmEpilogue e{bias.v.data(), residual.v.data(), ldc, Activation::kClip, -0.5f, 0.5f};
    std::vector<float> buffer(static_cast<size_t>(2 * m * ldc + 32));
    float* plain = buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) / 4 % 16) % 16;
    float* streamed = plain + m * ldc;
    isa::gemm_packed(m, n, k, pa.data(), pb.data(), plain, ldc, e);
    e.stream = true;
    isa::gemm_packed(m, n, k, pa.data(), pb.data(), streamed, ldc, e);
    for (int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(0, std::memcmp(plain + i * ldc, streamed + i * ldc, n * sizeof(float)))
          << "k " << k << " row " << i;
    }
  }
}

// gemm_shifted reading B's rows where they lie (a plane apart, as a 1x1 conv's input) gives
// gemm_packed's bits on the packed copy of the same rows, with the rows prefetched ahead
// (far_rows) or not; k within one slice and across slices, whole and partial panels.
PTQ_ISA_TEST(GemmPacked, ShiftedRowsGiveThePackedProductsBits) {
#if PTQ_AVX512
  std::mt19937 rng(12);
  for (const int64_t k : {24, 300}) {
    const int64_t m = 16, n = 200, plane = 3136;  // rows 56 x 56 floats apart
    const Matrix a = random_matrix(rng, m, k), planes = random_matrix(rng, k, plane);
    Matrix b{k, n, {}};
    for (int64_t q = 0; q < k; ++q) {
      b.v.insert(b.v.end(), planes.v.begin() + q * plane, planes.v.begin() + q * plane + n);
    }
    const Matrix bias = random_matrix(rng, 1, m);
    const GemmEpilogue e{bias.v.data(), nullptr, 0, Activation::kRelu};
    const std::vector<float> want = packed_product(false, false, m, n, k, a, b, e, n);
    std::vector<float> pa(static_cast<size_t>(isa::packed_a_floats(m, k)));
    isa::pack_a(false, m, k, a.v.data(), k, pa.data());
    std::vector<int64_t> rows(static_cast<size_t>(k));
    for (int64_t q = 0; q < k; ++q) rows[static_cast<size_t>(q)] = q * plane;
    for (const bool far : {false, true}) {
      std::vector<float> got(want.size(), -7.0f);
      ASSERT_TRUE(isa::gemm_shifted(m, n, k, pa.data(), planes.v.data(), rows.data(), got.data(),
                                    n, e, far));
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
          << "k " << k << " far_rows " << far;
    }
  }
#else
  float c = 0.0f;  // below AVX-512 it declines, and the callers copy B's rows instead
  EXPECT_FALSE(isa::gemm_shifted(1, 1, 0, nullptr, nullptr, nullptr, &c, 1));
#endif
}

PTQ_ISA_TEST(GemmPacked, NanStaysNanThroughTheClamp) {
  std::mt19937 rng(3);
  Matrix a = random_matrix(rng, 3, 5), b = random_matrix(rng, 5, 4);
  a.v[7] = NAN;  // row 1
  GemmEpilogue e;
  e.act = Activation::kClip, e.lo = 0.0f, e.hi = 6.0f;
  const std::vector<float> c = packed_product(false, false, 3, 4, 5, a, b, e, 4);
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_TRUE(std::isnan(c[4 + j])) << j;
    EXPECT_FALSE(std::isnan(c[j]));
    EXPECT_GE(c[j], 0.0f);
    EXPECT_LE(c[j], 6.0f);
  }
}

// A fused Relu is the Relu kernel's x > 0 ? x : 0: NaN and -0 give +0 (a clamp to [0, inf)
// would keep both).
PTQ_ISA_TEST(GemmPacked, ReluMapsNanAndNegativeZeroToPlusZero) {
  std::mt19937 rng(4);
  Matrix a = random_matrix(rng, 3, 5), b = random_matrix(rng, 5, 4);
  a.v[7] = NAN;  // row 1: NaN
  // Row 2: a sum that underflows to -0 (its last product is -1e-60), plus a residual of -0.
  std::fill(a.v.begin() + 10, a.v.begin() + 15, 0.0f);
  a.v[14] = -1e-30f;
  std::fill(b.v.begin() + 16, b.v.begin() + 20, 1e-30f);
  const std::vector<float> minus_zero(12, -0.0f);
  GemmEpilogue e;
  e.act = Activation::kRelu;
  e.residual = minus_zero.data(), e.ldr = 4;
  const std::vector<float> c = packed_product(false, false, 3, 4, 5, a, b, e, 4);
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_FALSE(std::signbit(c[4 + j]) || std::isnan(c[4 + j])) << c[4 + j];
    EXPECT_EQ(c[4 + j], 0.0f);
    EXPECT_FALSE(std::signbit(c[8 + j])) << j;
  }
}

// ---- kernels with a constant operand, packed when the kernel is prepared ----------------------

// Runs `node` with inputs i0.. where every input listed in `constants` is an initializer of a
// graph the kernel sees at creation (so it may pack it once).
std::vector<ir::Tensor> run_with_constants(const ir::Node& node, std::vector<ir::Tensor> inputs,
                                           const std::vector<size_t>& constants, int threads) {
  ir::Graph graph;
  for (size_t i : constants) graph.set_initializer(node.inputs[i], inputs[i]);
  std::vector<const ir::Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool constant = std::find(constants.begin(), constants.end(), i) != constants.end();
    ptrs.push_back(constant ? graph.initializer(node.inputs[i]) : &inputs[i]);
  }
  CpuBackendOptions options;
  options.isa = testing_isa::kLevel;
  auto backend = make_cpu_backend(options);
  KernelContext ctx{node, 13, threads, &graph, false};
  auto kernel = backend->create_kernel(ctx);
  EXPECT_TRUE(kernel.has_value()) << kernel.status().message();
  if (!kernel) return {};
  std::vector<ir::Tensor> outs(node.outputs.size());
  PoisonAllocator alloc;
  for (int run = 0; run < 2; ++run) {  // a second run reuses the packed operand
    Status st = (*kernel)->run(ptrs, outs, alloc);
    EXPECT_TRUE(st.is_ok()) << st.message();
  }
  return outs;
}

// `same_per_call`: the kernel packs a non-constant operand per call with the same packing, so
// both forms must agree bit for bit (Conv); Gemm/MatMul use Eigen then.
void expect_packed_matches(const ir::Node& node, const std::vector<ir::Tensor>& inputs,
                           const std::vector<size_t>& constants, const std::string& what,
                           bool same_per_call) {
  std::vector<const ir::Tensor*> ptrs;
  for (const ir::Tensor& t : inputs) ptrs.push_back(&t);
  auto ref = run_kernel(node, 13, ptrs, true);
  auto per_call = run_kernel(node, 13, ptrs, false, 1, testing_isa::kLevel);
  auto once = run_with_constants(node, inputs, constants, 1);
  ASSERT_EQ(once.size(), 1u) << what;
  EXPECT_LE(rel_l2(once[0], ref[0]), 1e-5) << what;
  EXPECT_LE(rel_l2(per_call[0], ref[0]), 1e-5) << what;
  if (same_per_call) {
    EXPECT_TRUE(bit_identical(once[0], per_call[0])) << what << ": packed once vs per call";
  }
  for (int t : {2, 3, 8}) {  // 8: narrower tiles for the threads
    auto many = run_with_constants(node, inputs, constants, t);
    EXPECT_TRUE(bit_identical(once[0], many[0])) << what << " threads " << t;
  }
}

PTQ_ISA_TEST(GemmPacked, ConvWithConstantWeights) {
  std::mt19937 rng(77);
  struct Case {
    ir::Shape x, w;
    int64_t group;
    std::vector<int64_t> strides, pads;
  };
  const std::vector<Case> cases{
      {{2, 16, 15, 13}, {40, 16, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},     // im2col, row tails
      {{1, 24, 9, 9}, {30, 8, 3, 3}, 3, {2, 2}, {0, 1, 1, 0}},        // grouped, strided
      {{1, 48, 10, 10}, {33, 48, 1, 1}, 1, {1, 1}, {0, 0, 0, 0}},     // 1x1
      {{1, 300, 5, 5}, {160, 300, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}},    // k > one k block, row tiles
      {{3, 5, 17}, {7, 5, 4}, 1, {3}, {2, 1}},                        // 1-D
  };
  for (const Case& c : cases) {
    std::vector<ir::Tensor> in{random_tensor(rng, c.x), random_tensor(rng, c.w),
                               random_tensor(rng, {c.w[0]})};
    const ir::Node node = make_node("Conv", 3, 1,
                                    {attr_int("group", c.group), attr_ints("strides", c.strides),
                                     attr_ints("pads", c.pads)});
    expect_packed_matches(node, in, {1},
                          "conv x " + ir::shape_str(c.x) + " w " + ir::shape_str(c.w), true);
  }
}

PTQ_ISA_TEST(GemmPacked, GemmAndMatMulWithConstantB) {
  std::mt19937 rng(78);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t m = 37, n = 530, k = 300;
      std::vector<ir::Tensor> in{random_tensor(rng, ta ? ir::Shape{k, m} : ir::Shape{m, k}),
                                 random_tensor(rng, tb ? ir::Shape{n, k} : ir::Shape{k, n}),
                                 random_tensor(rng, {n})};
      const ir::Node node = make_node("Gemm", 3, 1,
                                      {attr_int("transA", ta), attr_int("transB", tb),
                                       attr_float("alpha", 0.5f), attr_float("beta", 2.0f)});
      expect_packed_matches(node, in, {1}, fmt::format("gemm ta {} tb {}", ta, tb), false);
    }
  }
  std::vector<ir::Tensor> in{random_tensor(rng, {2, 45, 64}), random_tensor(rng, {64, 100})};
  expect_packed_matches(make_node("MatMul", 2, 1), in, {1}, "matmul [2, 45, 64] x [64, 100]",
                        false);
  std::vector<ir::Tensor> vec{random_tensor(rng, {64}), random_tensor(rng, {64, 33})};
  expect_packed_matches(make_node("MatMul", 2, 1), vec, {1}, "matmul [64] x [64, 33]", false);
}

// Kernels packing the same weights the same way share one packing while any of them holds
// it; other parameters get their own; once none holds it, it is packed afresh.
PTQ_ISA_TEST(SharedPacking, SameWeightsAndParamsShareOnePacking) {
  const std::vector<float> w(64, 1.5f);
  int packs = 0;
  auto pack = [&](float* out) {
    ++packs;
    std::fill(out, out + 8, 2.0f);
  };
  isa::PackedWeights a = isa::shared_packing(w.data(), {0, 8, 8, 1}, 8, pack);
  isa::PackedWeights b = isa::shared_packing(w.data(), {0, 8, 8, 1}, 8, pack);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(packs, 1);
  EXPECT_EQ(a[7], 2.0f);
  isa::PackedWeights other = isa::shared_packing(w.data(), {0, 4, 16, 1}, 8, pack);
  EXPECT_NE(other.get(), a.get());
  EXPECT_EQ(packs, 2);
  a.reset();
  b.reset();
  isa::PackedWeights again = isa::shared_packing(w.data(), {0, 8, 8, 1}, 8, pack);
  EXPECT_EQ(packs, 3);
  EXPECT_EQ(again[0], 2.0f);
}

}  // namespace
}  // namespace ptq::runtime::testing
