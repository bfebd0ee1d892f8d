// Einsum: the reference against answers computed here in float64 (matrix products, diagonals,
// traces, sums, ellipses that broadcast, three operands, implicit outputs), the GEMM path
// against the reference on seeded random shapes, which equations take the GEMM path, thread
// determinism and the error for labels whose dims disagree.
#include <random>

#include "einsum.h"
#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

ir::Node einsum_node(const std::string& equation, size_t inputs) {
  return make_node("Einsum", inputs, 1, {attr_string("equation", equation)});
}

std::vector<ir::Tensor> einsum(const std::string& equation,
                               const std::vector<const ir::Tensor*>& in, bool reference,
                               int threads = 1) {
  return run_kernel(einsum_node(equation, in.size()), 12, in, reference, threads);
}

float at(const ir::Tensor& t, std::initializer_list<int64_t> idx) {
  int64_t off = 0;
  size_t d = 0;
  for (int64_t i : idx) off = off * t.dim(d++) + i;
  return t.data<float>()[off];
}

TEST(Einsum, ReferenceMatrixProductsAndTheirTransposes) {
  std::mt19937 rng(1);
  const ir::Tensor a = random_tensor(rng, {3, 4}), b = random_tensor(rng, {4, 5});
  for (const char* eq : {"ij,jk->ik", "ij,jk", "ij,jk->ki"}) {
    const ir::Tensor y = einsum(eq, {&a, &b}, true)[0];
    const bool transposed = std::string(eq) == "ij,jk->ki";
    ASSERT_EQ(y.shape(), transposed ? ir::Shape({5, 3}) : ir::Shape({3, 5})) << eq;
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t k = 0; k < 5; ++k) {
        double want = 0;
        for (int64_t j = 0; j < 4; ++j) want += double(at(a, {i, j})) * at(b, {j, k});
        EXPECT_NEAR(transposed ? at(y, {k, i}) : at(y, {i, k}), want, 1e-6) << eq;
      }
    }
  }
}

TEST(Einsum, ReferenceDiagonalsTracesSumsAndInnerProducts) {
  std::mt19937 rng(2);
  const ir::Tensor x = random_tensor(rng, {2, 3, 3});
  const ir::Tensor diag = einsum("...ii->...i", {&x}, true)[0];
  const ir::Tensor trace = einsum("bii", {&x}, true)[0];  // implicit output: b
  const ir::Tensor sum = einsum("bij->j", {&x}, true)[0];
  ASSERT_EQ(diag.shape(), ir::Shape({2, 3}));
  ASSERT_EQ(trace.shape(), ir::Shape({2}));
  ASSERT_EQ(sum.shape(), ir::Shape({3}));
  for (int64_t b = 0; b < 2; ++b) {
    double t = 0;
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(at(diag, {b, i}), at(x, {b, i, i}));
      t += at(x, {b, i, i});
    }
    EXPECT_NEAR(at(trace, {b}), t, 1e-6);
  }
  for (int64_t j = 0; j < 3; ++j) {
    double s = 0;
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t i = 0; i < 3; ++i) s += at(x, {b, i, j});
    }
    EXPECT_NEAR(at(sum, {j}), s, 1e-6);
  }
  const ir::Tensor v = random_tensor(rng, {5}), w = random_tensor(rng, {5});
  const ir::Tensor dot = einsum("i,i", {&v, &w}, true)[0];
  ASSERT_EQ(dot.rank(), 0);
  double want = 0;
  for (int64_t i = 0; i < 5; ++i) want += double(v.data<float>()[i]) * w.data<float>()[i];
  EXPECT_NEAR(dot.data<float>()[0], want, 1e-6);
}

TEST(Einsum, ReferenceEllipsesBroadcastAndThreeOperandsChain) {
  std::mt19937 rng(3);
  // a [2, 1, 3, 4] and b [5, 4, 2]: the ellipses broadcast to [2, 5].
  const ir::Tensor a = random_tensor(rng, {2, 1, 3, 4}), b = random_tensor(rng, {5, 4, 2});
  const ir::Tensor y = einsum("...ij,...jk->...ik", {&a, &b}, true)[0];
  ASSERT_EQ(y.shape(), ir::Shape({2, 5, 3, 2}));
  for (int64_t p = 0; p < 2; ++p) {
    for (int64_t q = 0; q < 5; ++q) {
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t k = 0; k < 2; ++k) {
          double want = 0;
          for (int64_t j = 0; j < 4; ++j) want += double(at(a, {p, 0, i, j})) * at(b, {q, j, k});
          EXPECT_NEAR(at(y, {p, q, i, k}), want, 1e-6);
        }
      }
    }
  }
  const ir::Tensor c = random_tensor(rng, {3, 4}), d = random_tensor(rng, {4, 2}),
                   e = random_tensor(rng, {2, 3});
  const ir::Tensor chain = einsum("ij,jk,kl->li", {&c, &d, &e}, true)[0];
  ASSERT_EQ(chain.shape(), ir::Shape({3, 3}));
  for (int64_t l = 0; l < 3; ++l) {
    for (int64_t i = 0; i < 3; ++i) {
      double want = 0;
      for (int64_t j = 0; j < 4; ++j) {
        for (int64_t k = 0; k < 2; ++k) {
          want += double(at(c, {i, j})) * at(d, {j, k}) * at(e, {k, l});
        }
      }
      EXPECT_NEAR(at(chain, {l, i}), want, 1e-6);
    }
  }
}

TEST(Einsum, IntegersAreSummedExactly) {
  const int64_t big = int64_t{1} << 60;  // beyond double's 53 bits: a double sum would round
  const ir::Tensor a = ir::make_tensor<int64_t>({2, 2}, {big, 1, 2, 3});
  const ir::Tensor b = ir::make_tensor<int64_t>({2, 2}, {1, 2, 3, 4});
  for (bool reference : {true, false}) {
    const ir::Tensor y = einsum("ij,jk->ik", {&a, &b}, reference)[0];
    ASSERT_EQ(y.dtype(), ir::DType::kInt64);
    EXPECT_EQ(y.data<int64_t>()[0], big * 1 + 1 * 3);
    EXPECT_EQ(y.data<int64_t>()[3], 2 * 2 + 3 * 4);
  }
}

// Equations the GEMM path takes, with their operands' shapes.
struct GemmCase {
  std::string equation;
  ir::Shape a, b;
};

std::vector<GemmCase> gemm_cases(std::mt19937& rng) {
  auto d = [&](int lo, int hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t b = d(1, 3), h = d(1, 4), i = d(1, 40), j = d(1, 40), k = d(1, 70);
  return {
      {"bhid,bhjd->bhij", {b, h, i, k}, {b, h, j, k}},  // attention scores
      {"bhij,bhjd->bhid", {b, h, i, j}, {b, h, j, k}},  // attention times values
      {"bij,bjk->bik", {b, i, j}, {b, j, k}},
      {"ij,jk->ik", {i, j}, {j, k}},
      {"ji,jk->ik", {j, i}, {j, k}},                    // A transposed
      {"ij,kj->ki", {i, j}, {k, j}},                    // B transposed, output transposed
      {"bhqd,bkhd->bhqk", {b, h, i, k}, {b, j, h, k}},  // B permuted
      {"ibh,hjb->bji", {i, b, h}, {h, j, b}},           // both permuted, output permuted
      {"...ij,...jk->...ik", {b, h, i, j}, {b, h, j, k}},
      {"ik,jl->ijkl", {i, k}, {j, h}},                  // outer product: no summed label
  };
}

TEST(Einsum, GemmPathMatchesReferenceOnRandomShapes) {
  std::mt19937 rng(4);
  for (int round = 0; round < 4; ++round) {
    for (const GemmCase& c : gemm_cases(rng)) {
      const ir::Tensor a = random_tensor(rng, c.a), b = random_tensor(rng, c.b);
      const ir::Tensor want = einsum(c.equation, {&a, &b}, true)[0];
      const ir::Tensor got = einsum(c.equation, {&a, &b}, false, 2)[0];
      EXPECT_LE(rel_l2(got, want), 1e-5) << c.equation << " " << ir::shape_str(c.a) << " "
                                         << ir::shape_str(c.b);
    }
  }
}

TEST(Einsum, MatrixProductsPlanAsGemmOthersDoNot) {
  auto plan = [](const std::string& eq, std::vector<ir::Shape> shapes) {
    const ir::Node node = einsum_node(eq, shapes.size());
    auto parsed = cpu::einsum::parse(node, eq);
    EXPECT_TRUE(parsed.has_value());
    auto layout = cpu::einsum::resolve(node, *parsed, shapes);
    EXPECT_TRUE(layout.has_value()) << layout.status().message();
    return cpu::einsum::plan_gemm(*layout, shapes);
  };
  auto p = plan("bhid,bhjd->bhij", {{2, 4, 8, 16}, {2, 4, 9, 16}});
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->batch, 8);
  EXPECT_EQ(p->m, 8);
  EXPECT_EQ(p->n, 9);
  EXPECT_EQ(p->k, 16);
  EXPECT_FALSE(p->trans_a);
  EXPECT_TRUE(p->trans_b);  // [b, h, j, d] is B transposed: no copy
  EXPECT_FALSE(p->permute_a || p->permute_b || p->scatter_c);
  auto q = plan("bkhd,bhqd->bhqk", {{2, 5, 4, 8}, {2, 4, 3, 8}});
  ASSERT_TRUE(q.has_value());
  EXPECT_TRUE(q->permute_a.has_value());  // k (m here) sits before h: copied
  EXPECT_FALSE(plan("ii,ij->j", {{3, 3}, {3, 4}}).has_value());   // a diagonal
  EXPECT_FALSE(plan("ij,jk->k", {{3, 4}, {4, 5}}).has_value());   // i summed in A only
  EXPECT_FALSE(plan("bij,bjk->bik", {{1, 3, 4}, {2, 4, 5}}).has_value());  // b broadcasts
  EXPECT_FALSE(plan("ij->ji", {{3, 4}}).has_value());
}

TEST(Einsum, ThreadsGiveIdenticalBits) {
  std::mt19937 rng(5);
  const ir::Tensor a = random_tensor(rng, {2, 3, 37, 24}), b = random_tensor(rng, {2, 3, 29, 24});
  for (const char* eq : {"bhid,bhjd->bhij", "bhid,bhjd->bjhi", "bhid,bhjd->bd"}) {
    for (bool reference : {true, false}) {
      const ir::Tensor one = einsum(eq, {&a, &b}, reference, 1)[0];
      for (int threads : {2, 3}) {
        EXPECT_TRUE(bit_identical(one, einsum(eq, {&a, &b}, reference, threads)[0]))
            << eq << " reference=" << reference << " threads=" << threads;
      }
    }
  }
}

TEST(Einsum, DisagreeingDimsNameTheLabelAndBothShapes) {
  const ir::Tensor a(ir::DType::kFloat32, {2, 3}), b(ir::DType::kFloat32, {4, 5});
  EXPECT_EQ(kernel_error(einsum_node("ij,jk->ik", 2), 12, {&a, &b}),
            "Einsum node 'n': label 'j' is 3 in input 0 [2, 3] but 4 in input 1 [4, 5]");
  EXPECT_EQ(kernel_error(einsum_node("ij,jk->i*", 2), 12, {&a, &b}),
            "Einsum node 'n': equation term 'i*' has '*': not a letter");
}

}  // namespace
}  // namespace ptq::runtime::testing
