// LRN and MeanVarianceNormalization: against float64 formulas written here (ONNX's channel
// window for LRN, every axes choice for MVN), thread determinism and errors naming the node.
#include <cmath>
#include <random>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

// make_node's node (name 'n', input i0, output o0), built here: GCC 12 warns falsely
// (-Wrestrict) on make_node's `name = "n"` inlined into these tests.
ir::Node node_of(std::string op, std::vector<ir::Attribute> attrs = {}) {
  ir::Node n;
  n.op_type = std::move(op);
  n.name = std::string("n");
  n.inputs = {std::string("i0")};
  n.outputs = {std::string("o0")};
  n.attributes = std::move(attrs);
  return n;
}

TEST(Lrn, DividesBySquaresOfNeighbouringChannels) {
  std::mt19937 rng(1);
  const ir::Tensor x = random_tensor(rng, {2, 6, 3, 2}, -2.0f, 2.0f);
  for (int64_t size : {1, 2, 3, 4}) {
    const double alpha = 0.3, beta = 0.6, bias = 1.5;
    const ir::Node node = node_of("LRN", {attr_int("size", size),
                                                  attr_float("alpha", float(alpha)),
                                                  attr_float("beta", float(beta)),
                                                  attr_float("bias", float(bias))});
    const ir::Tensor y = run_kernel(node, 13, {&x}, true, 2)[0];
    for (int64_t n = 0; n < 2; ++n) {
      for (int64_t c = 0; c < 6; ++c) {
        for (int64_t i = 0; i < 6; ++i) {
          double sq = 0;
          // floor((size - 1) / 2) channels before c, ceil((size - 1) / 2) after.
          for (int64_t q = c - (size - 1) / 2; q <= c + size / 2; ++q) {
            if (q < 0 || q >= 6) continue;
            const double v = x.data<float>()[(n * 6 + q) * 6 + i];
            sq += v * v;
          }
          const int64_t at = (n * 6 + c) * 6 + i;
          const double want = x.data<float>()[at] /
                              std::pow(double(float(bias)) + double(float(alpha)) / size * sq,
                                       double(float(beta)));
          EXPECT_NEAR(y.data<float>()[at], want, 1e-6) << size;
        }
      }
    }
  }
}

TEST(MeanVarianceNormalization, NormalisesOverItsAxes) {
  std::mt19937 rng(2);
  const ir::Tensor x = random_tensor(rng, {3, 4, 2, 5}, -3.0f, 3.0f);
  for (const std::vector<int64_t>& axes :
       std::vector<std::vector<int64_t>>{{0, 2, 3}, {1}, {-1, 1}, {0, 1, 2, 3}}) {
    const bool defaults = axes == std::vector<int64_t>{0, 2, 3};
    const ir::Node node = node_of("MeanVarianceNormalization",
                                    defaults ? std::vector<ir::Attribute>{}
                                             : std::vector<ir::Attribute>{attr_ints("axes", axes)});
    const ir::Tensor y = run_kernel(node, 13, {&x}, true, 3)[0];
    std::vector<bool> over(4, false);
    for (int64_t a : axes) over[static_cast<size_t>(a < 0 ? a + 4 : a)] = true;
    // Each element's group: the elements agreeing with it on every kept axis.
    const ir::Shape s = x.shape();
    for (int64_t e = 0; e < x.size(); ++e) {
      const int64_t idx[4] = {e / 40, e / 10 % 4, e / 5 % 2, e % 5};
      double sum = 0, sq = 0, count = 0;
      for (int64_t f = 0; f < x.size(); ++f) {
        const int64_t jdx[4] = {f / 40, f / 10 % 4, f / 5 % 2, f % 5};
        bool same = true;
        for (size_t d = 0; d < 4; ++d) same = same && (over[d] || idx[d] == jdx[d]);
        if (!same) continue;
        sum += x.data<float>()[f], sq += double(x.data<float>()[f]) * x.data<float>()[f];
        ++count;
      }
      const double mean = sum / count;
      const double want =
          (x.data<float>()[e] - mean) / (std::sqrt(sq / count - mean * mean) + 1e-9);
      ASSERT_NEAR(y.data<float>()[e], want, 1e-5) << e;
    }
    EXPECT_EQ(s, y.shape());
  }
}

TEST(LrnMvn, ThreadsGiveIdenticalBits) {
  std::mt19937 rng(3);
  const ir::Tensor x = random_tensor(rng, {3, 16, 9, 7});
  const ir::Node lrn = node_of("LRN", {attr_int("size", 5)});
  const ir::Node mvn = node_of("MeanVarianceNormalization");
  for (const ir::Node* node : {&lrn, &mvn}) {
    const ir::Tensor one = run_kernel(*node, 13, {&x}, true, 1)[0];
    for (int threads : {2, 3}) {
      EXPECT_TRUE(bit_identical(one, run_kernel(*node, 13, {&x}, true, threads)[0]))
          << node->op_type << " threads=" << threads;
    }
  }
}

TEST(LrnMvn, ErrorsNameTheNodeAndShape) {
  const ir::Tensor x(ir::DType::kFloat32, {4, 5});
  EXPECT_EQ(kernel_error(node_of("LRN", {attr_int("size", 3)}), 13, {&x}),
            "LRN node 'n': input [4, 5] must be N x C x D1 …");
  EXPECT_EQ(kernel_error(node_of("LRN"), 13, {&x}),
            "LRN node 'n': size 0 must be at least 1");
  const std::string e = kernel_error(node_of("MeanVarianceNormalization"), 13, {&x});
  EXPECT_NE(e.find("MeanVarianceNormalization node 'n'"), std::string::npos) << e;
}

}  // namespace
}  // namespace ptq::runtime::testing
