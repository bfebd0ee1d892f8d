// choose_conv (conv_choice.cpp), the one place a conv's algorithm is chosen: the algorithms of
// known layers, and on random geometries the rules every choice keeps: Winograd and lanes only
// for packed constant weights (and Winograd only where allowed), each algorithm only where it
// applies, and conv_weight_forms, which decides from the weights alone what a kernel packs
// ahead, never ruling out a form that some call then takes.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "common/isa_suite.h"
#include "isa_begin.h"
#include "conv.h"
#include "isa_end.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {
namespace {

PTQ_ISA_FIXTURE(ConvChoice);

constexpr bool kAvx512 =
#if PTQ_AVX512
    true;
#else
    false;
#endif

// An N x C x H x W input, M output channels in `groups` groups, a k x k kernel.
ConvParams conv(int64_t n, int64_t c, int64_t m, int64_t groups, int64_t h, int64_t w, int64_t k,
                int64_t stride, int64_t pad, int64_t dilation = 1) {
  ConvParams p;
  p.N = n, p.C = c, p.M = m, p.G = groups;
  p.in = {h, w};
  p.w.kernel = {k, k};
  p.w.strides = {stride, stride};
  p.w.dilations = {dilation, dilation};
  p.w.pads = {pad, pad, pad, pad};
  for (size_t i = 0; i < 2; ++i) {
    p.out.push_back((p.in[i] + 2 * pad - (k - 1) * dilation - 1) / stride + 1);
  }
  return p;
}

// What a kernel knows when it is prepared: the weights and attributes, no input.
ConvParams without_inputs(ConvParams p) {
  p.N = 0;
  p.in.assign(p.in.size(), 0);
  p.out = p.in;
  return p;
}

PTQ_ISA_TEST(ConvChoice, KnownLayers) {
  const ConvSetting packed{2, true, true};
  const ConvParams layer1 = conv(1, 64, 64, 1, 56, 56, 3, 1, 1);  // ResNet-18's 3x3 at 56x56
  EXPECT_EQ(choose_conv(layer1, packed), kAvx512 ? ConvAlgo::kWinograd : ConvAlgo::kGemm);
  EXPECT_EQ(choose_conv(layer1, ConvSetting{2, false, true}),
            kAvx512 ? ConvAlgo::kShifted : ConvAlgo::kGemm);
  const ConvParams expand = conv(1, 320, 1280, 1, 7, 7, 1, 1, 0);  // MobileNetV2's last 1x1
  EXPECT_EQ(choose_conv(expand, packed), kAvx512 ? ConvAlgo::kLanes : ConvAlgo::kGemm);
  EXPECT_EQ(choose_conv(expand, ConvSetting{2, true, false}), ConvAlgo::kGemm);
  const ConvParams depthwise = conv(1, 96, 96, 96, 56, 56, 3, 2, 1);
  EXPECT_EQ(choose_conv(depthwise, packed),
            kAvx512 ? ConvAlgo::kDepthwise3x3 : ConvAlgo::kDepthwise);
  EXPECT_EQ(choose_conv(conv(1, 96, 96, 96, 28, 28, 5, 1, 2), packed), ConvAlgo::kDepthwise);
  ConvParams volume = layer1;
  volume.in.push_back(8), volume.out.push_back(8), volume.w.kernel.push_back(1);
  EXPECT_EQ(choose_conv(volume, packed), ConvAlgo::kReference);
}

PTQ_ISA_TEST(ConvChoice, RandomGeometriesKeepTheRules) {
  std::mt19937 rng(29);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t channels[] = {1, 3, 16, 32, 64, 96, 128, 320};
  for (int rep = 0; rep < 4000; ++rep) {
    const int64_t c = channels[pick(0, 7)], m = channels[pick(0, 7)];
    const int64_t groups = pick(0, 3) == 0 ? c : 1;
    const int64_t k = pick(1, 5), stride = pick(1, 3), dilation = pick(0, 5) == 0 ? 2 : 1;
    const int64_t size = pick(k * dilation, 60);
    const ConvParams p = conv(pick(1, 40), c, groups == 1 ? m : c, groups, size, size + pick(0, 3),
                              k, stride, pick(0, k / 2), dilation);
    const ConvSetting s{static_cast<int>(pick(1, 3)), pick(0, 1) == 1, pick(0, 1) == 1};
    const ConvAlgo algo = choose_conv(p, s);
    const ConvForms forms = conv_weight_forms(without_inputs(p), s.winograd);
    switch (algo) {
      case ConvAlgo::kWinograd:
        EXPECT_TRUE(s.packed && s.winograd && conv_winograd_applies(p));
        EXPECT_TRUE(forms.winograd);
        break;
      case ConvAlgo::kLanes:
        EXPECT_TRUE(s.packed && conv_lanes_applies(p));
        EXPECT_TRUE(forms.lanes);
        break;
      case ConvAlgo::kDepthwise3x3:
        EXPECT_TRUE(p.C == p.G && depthwise3x3_applies(p));
        break;
      case ConvAlgo::kDepthwise:
        EXPECT_TRUE(p.C == p.G && !depthwise3x3_applies(p));
        break;
      case ConvAlgo::kShifted:
        EXPECT_TRUE(p.C != p.G && conv_shifted_applies(p, s.threads));
        break;
      case ConvAlgo::kGemm:
        EXPECT_TRUE(p.C != p.G && !conv_shifted_applies(p, s.threads));
        break;
      case ConvAlgo::kReference:
        ADD_FAILURE() << "a 2-D conv took the reference";
        break;
    }
    EXPECT_TRUE(!conv_winograd_applies(p) || conv_weight_forms(without_inputs(p), true).winograd);
    EXPECT_TRUE(!conv_lanes_applies(p) || forms.lanes);
    EXPECT_TRUE(!(s.packed && s.winograd && conv_winograd_applies(p)) ||
                algo == ConvAlgo::kWinograd);
  }
}

}  // namespace
}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
