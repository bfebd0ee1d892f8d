// The zero-padded, stride-phase-split copy of a 2-D conv's input that the kernels without
// im2col read (conv_shifted.cpp, conv_lanes.cpp). Phase (a, b) of a channel holds padded rows
// a, a + SH, ... and columns b, b + SW, ... (one phase for stride 1), Hq x Wq floats, so output
// (oh, ow) of tap (ci, kh, kw) reads element (oh + kh * DH / SH) * Wq + ow + kw * DW / SW of
// phase (kh * DH % SH, kw * DW % SW) of channel ci: counting outputs over the phase width
// (p = oh * Wq + ow), every tap reads the copy shifted by a constant.
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <cstdint>
#include <vector>

#include "conv.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

// A 2-D conv's geometry with its phase sizes; P = OH * Wq sums an image.
struct Shifted {
  int64_t C, H, W, M, KH, KW, SH, SW, DH, DW, PT, PL, OH, OW, Hq, Wq, P;
};

Shifted shifted_geometry(const ConvParams& p);

// Where element (i, j) of phase `ph` of channel c of a padded copy lies: per image, phases of
// Hq x Wq floats (image_layout); conv_shifted's interleaved copy has N floats an element and
// padded pitches.
struct Layout {
  int64_t channel, phase, row, unit;
  int64_t at(int64_t c, int64_t ph, int64_t i, int64_t j) const {
    return c * channel + ph * phase + i * row + j * unit;
  }
};

Layout image_layout(const Shifted& g);

// Where row q = (ci, kh, kw) of the im2col matrix starts in a padded copy.
std::vector<int64_t> tap_offsets(const Shifted& g, const Layout& l);

// Channels [c0, c1) of one image into their zero-padded phases (image_layout).
void pad_planes(const Shifted& g, const float* x, int64_t c0, int64_t c1, float* xp);

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
