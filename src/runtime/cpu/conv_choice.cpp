// Which algorithm computes a float32 convolution: the order in which they are tried and what
// each needs. Each algorithm says in its own file when it applies (its measured reasons stay
// beside its code); this file alone decides among them, for the run path and for the packing
// of constant weights.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "conv.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

ConvAlgo choose_conv(const ConvParams& p, const ConvSetting& s) {
  if (!conv_fast_handles(p)) return ConvAlgo::kReference;
  if (s.packed && s.winograd && conv_winograd_applies(p)) return ConvAlgo::kWinograd;
  if (s.packed && conv_lanes_applies(p)) return ConvAlgo::kLanes;
  if (p.C / p.G == 1) {
    return depthwise3x3_applies(p) ? ConvAlgo::kDepthwise3x3 : ConvAlgo::kDepthwise;
  }
  return conv_shifted_applies(p, s.threads) ? ConvAlgo::kShifted : ConvAlgo::kGemm;
}

ConvForms conv_weight_forms(const ConvParams& p, bool winograd) {
  return ConvForms{winograd && conv_winograd_fits(p), conv_lanes_fits(p)};
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
