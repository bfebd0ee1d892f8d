// DFT, STFT and the window generators: against float64 sums written here (std::complex), a
// round trip through the inverse, the opset-17 attributes (axis, onesided, inverse,
// dft_length), thread determinism and an error naming the node and the shapes.
#include <complex>
#include <numbers>
#include <random>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

using Complex = std::complex<double>;

ir::Tensor int_scalar(int64_t v) { return ir::make_tensor<int64_t>({}, {v}); }

// The DFT of `x` (n points, zero-padded or cut), in double.
std::vector<Complex> naive_dft(const std::vector<Complex>& x, int64_t n, bool inverse) {
  std::vector<Complex> y(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < std::min<int64_t>(n, static_cast<int64_t>(x.size())); ++j) {
      const double phase = (inverse ? 2 : -2) * std::numbers::pi * double(j * k) / double(n);
      y[static_cast<size_t>(k)] += x[static_cast<size_t>(j)] * std::polar(1.0, phase);
    }
    if (inverse) y[static_cast<size_t>(k)] /= double(n);
  }
  return y;
}

TEST(Dft, RealAndComplexLinesOnAnyAxisMatchTheSum) {
  std::mt19937 rng(1);
  const ir::Tensor real = random_tensor(rng, {2, 7, 3, 1});
  const ir::Tensor cplx = random_tensor(rng, {2, 7, 3, 2});
  for (const ir::Tensor* x : {&real, &cplx}) {
    for (int64_t axis : {1, 2, -2}) {
      for (int64_t length : {0, 5, 9}) {  // 0: the signal's own length
        for (int64_t onesided : {0, 1}) {
          const ir::Node node = make_node("DFT", length > 0 ? 2 : 1, 1,
                                          {attr_int("axis", axis), attr_int("onesided", onesided)});
          const ir::Tensor len = int_scalar(length);
          auto y = run_kernel(node, 17, {x, length > 0 ? &len : nullptr}, true, 2)[0];
          const int64_t ax = axis < 0 ? axis + 4 : axis;
          const int64_t n = length > 0 ? length : x->dim(static_cast<size_t>(ax));
          const int64_t bins = onesided ? n / 2 + 1 : n;
          ASSERT_EQ(y.dim(static_cast<size_t>(ax)), bins);
          ASSERT_EQ(y.dim(3), 2);
          // Line (b, other) along ax.
          const int64_t other_dim = ax == 1 ? 3 : 7;
          for (int64_t b = 0; b < 2; ++b) {
            for (int64_t o = 0; o < other_dim; ++o) {
              std::vector<Complex> line;
              for (int64_t j = 0; j < x->dim(static_cast<size_t>(ax)); ++j) {
                const int64_t at = ax == 1 ? ((b * 7 + j) * 3 + o) : ((b * 7 + o) * 3 + j);
                const int64_t c = x->dim(3);
                line.emplace_back(x->data<float>()[at * c],
                                  c == 2 ? x->data<float>()[at * c + 1] : 0);
              }
              const std::vector<Complex> want = naive_dft(line, n, false);
              for (int64_t k = 0; k < bins; ++k) {
                const int64_t at = ax == 1 ? ((b * bins + k) * 3 + o) : ((b * 7 + o) * bins + k);
                EXPECT_NEAR(y.data<float>()[at * 2], want[k].real(), 1e-5);
                EXPECT_NEAR(y.data<float>()[at * 2 + 1], want[k].imag(), 1e-5);
              }
            }
          }
        }
      }
    }
  }
}

TEST(Dft, InverseUndoesTheTransform) {
  std::mt19937 rng(2);
  const ir::Tensor x = random_tensor(rng, {3, 12, 2});
  auto y = run_kernel(make_node("DFT", 1, 1), 17, {&x}, true)[0];
  auto back = run_kernel(make_node("DFT", 1, 1, {attr_int("inverse", 1)}), 17, {&y}, true)[0];
  EXPECT_LE(rel_l2(back, x), 1e-6);
}

TEST(Stft, FramesAreWindowedTransforms) {
  std::mt19937 rng(3);
  const ir::Tensor x = random_tensor(rng, {2, 50, 1});
  const ir::Tensor window = random_tensor(rng, {12}, 0.0f, 1.0f);
  const ir::Tensor step = int_scalar(5);
  for (int64_t onesided : {0, 1}) {
    auto y = run_kernel(make_node("STFT", 3, 1, {attr_int("onesided", onesided)}), 17,
                        {&x, &step, &window}, true)[0];
    const int64_t frames = (50 - 12) / 5 + 1, bins = onesided ? 7 : 12;
    ASSERT_EQ(y.shape(), ir::Shape({2, frames, bins, 2}));
    for (int64_t b = 0; b < 2; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        std::vector<Complex> frame;
        for (int64_t j = 0; j < 12; ++j) {
          frame.emplace_back(double(x.data<float>()[b * 50 + f * 5 + j]) * window.data<float>()[j]);
        }
        const std::vector<Complex> want = naive_dft(frame, 12, false);
        for (int64_t k = 0; k < bins; ++k) {
          const int64_t at = ((b * frames + f) * bins + k) * 2;
          EXPECT_NEAR(y.data<float>()[at], want[k].real(), 1e-5);
          EXPECT_NEAR(y.data<float>()[at + 1], want[k].imag(), 1e-5);
        }
      }
    }
  }
  // frame_length without a window: a rectangular window.
  const ir::Tensor length = int_scalar(12);
  auto plain = run_kernel(make_node("STFT", 4, 1), 17, {&x, &step, nullptr, &length}, true)[0];
  ir::Tensor ones(ir::DType::kFloat32, {12});
  for (float& v : ones.span<float>()) v = 1.0f;
  auto rect = run_kernel(make_node("STFT", 3, 1), 17, {&x, &step, &ones}, true)[0];
  EXPECT_TRUE(bit_identical(plain, rect));
}

TEST(Window, HannHammingBlackmanFollowTheirFormulas) {
  const ir::Tensor five = ir::make_tensor<int32_t>({}, {5});
  auto hann = run_kernel(make_node("HannWindow", 1, 1, {attr_int("periodic", 0)}), 17, {&five},
                         true)[0];
  const std::vector<double> symmetric = {0.0, 0.5, 1.0, 0.5, 0.0};
  for (int64_t k = 0; k < 5; ++k) EXPECT_NEAR(hann.data<float>()[k], symmetric[k], 1e-7);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    auto w = run_kernel(make_node(op, 1, 1, {attr_int("output_datatype", 11)}), 17, {&five},
                        true)[0];
    ASSERT_EQ(w.dtype(), ir::DType::kFloat64);
    const std::string name = op;
    const double a0 = name == "HannWindow" ? 0.5 : name == "HammingWindow" ? 25.0 / 46 : 0.42;
    const double a1 = name == "BlackmanWindow" ? 0.5 : 1 - a0,
                 a2 = name == "BlackmanWindow" ? 0.08 : 0;
    for (int64_t k = 0; k < 5; ++k) {
      const double p = 2 * std::numbers::pi * double(k) / 5;  // periodic: N = size
      EXPECT_NEAR(w.data<double>()[k], a0 - a1 * std::cos(p) + a2 * std::cos(2 * p), 1e-12) << op;
    }
  }
}

TEST(Dft, ThreadsGiveIdenticalBits) {
  std::mt19937 rng(4);
  const ir::Tensor x = random_tensor(rng, {3, 40, 5, 2});
  const ir::Tensor s = random_tensor(rng, {3, 400, 1});
  const ir::Tensor step = int_scalar(7), length = int_scalar(64);
  const ir::Node dft = make_node("DFT", 1, 1, {attr_int("axis", 1)});
  const ir::Node stft = make_node("STFT", 4, 1);
  const auto d1 = run_kernel(dft, 17, {&x}, true, 1)[0];
  const auto s1 = run_kernel(stft, 17, {&s, &step, nullptr, &length}, true, 1)[0];
  for (int threads : {2, 3}) {
    EXPECT_TRUE(bit_identical(d1, run_kernel(dft, 17, {&x}, true, threads)[0]));
    EXPECT_TRUE(bit_identical(s1, run_kernel(stft, 17, {&s, &step, nullptr, &length}, true,
                                             threads)[0]));
  }
}

TEST(Dft, ErrorsNameTheNodeAndShapes) {
  const ir::Tensor x(ir::DType::kFloat32, {2, 8, 3});
  EXPECT_EQ(kernel_error(make_node("DFT", 1, 1), 17, {&x}),
            "DFT node 'n': input [2, 8, 3] must end in a dim of 1 (real) or 2 (complex)");
  const ir::Tensor s(ir::DType::kFloat32, {1, 10, 1});
  const ir::Tensor step = int_scalar(4), window(ir::DType::kFloat32, {16});
  EXPECT_EQ(kernel_error(make_node("STFT", 3, 1), 17, {&s, &step, &window}),
            "STFT node 'n': frame_length 16 and frame_step 4 do not frame a signal [1, 10, 1]");
}

}  // namespace
}  // namespace ptq::runtime::testing
