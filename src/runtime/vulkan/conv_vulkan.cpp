// Conv and ConvTranspose on Vulkan. Conv picks one of three kernels at build time:
//   1x1, stride 1, no padding, one group -> the plain GEMM (weights x each image's [IC, HW]);
//   enough work per group                 -> implicit GEMM (gemm.comp with CONV), optionally
//                                            split along K (SPLIT_K + conv_splitk_reduce);
//   few channels per group (depthwise)    -> direct convolution (conv_direct.comp).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "gemm_vulkan.h"
#include "op.h"
#include "split_k.h"

namespace ptq::vulkan {

namespace {

constexpr uint32_t kLocal = 256;

// The geometry of a 2-D convolution (1-D ones are 2-D with H = KH = 1).
struct ConvGeometry {
  int64_t n = 0, ic = 0, h = 0, w = 0, oc = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, ph_end = 0, pw_end = 0;
  int64_t groups = 1;
};

Expected<ConvGeometry> geometry(const OpBuild& b, bool transposed) {
  const ir::Shape& x = b.in(0).shape;
  const ir::Shape& wt = b.in(1).shape;
  const ir::Shape& y = b.outputs[0].shape;
  if (x.size() != 3 && x.size() != 4)
    return unsupported("{}-D convolution", static_cast<int64_t>(x.size()) - 2);
  if (wt.size() != x.size()) return unsupported("weights of rank {}", wt.size());
  const bool is_1d = x.size() == 3;
  ConvGeometry g;
  g.n = x[0];
  g.ic = x[1];
  g.h = is_1d ? 1 : x[2];
  g.w = x.back();
  g.oc = y[1];
  g.oh = is_1d ? 1 : y[2];
  g.ow = y.back();
  g.kh = is_1d ? 1 : wt[2];
  g.kw = wt.back();
  g.groups = b.node.attr_int("group", 1);
  // Strides, dilations and pads as the CPU kernels read them (auto_pad and ConvTranspose's
  // output_shape resolved); the output dims themselves come from the output's shape.
  std::vector<int64_t> kernel(wt.begin() + 2, wt.end());
  PTQ_ASSIGN_OR_RETURN(runtime::Window win, runtime::read_window(b.node, std::move(kernel)));
  const std::vector<int64_t> in(x.begin() + 2, x.end());
  const Expected<std::vector<int64_t>> out = transposed
                                                ? runtime::transpose_output_dims(b.node, win, in)
                                                : runtime::forward_output_dims(b.node, win, in);
  if (!out) return out.status();
  const size_t w_at = win.rank() - 1;  // the W dim (the only one of a 1-D op)
  g.sh = is_1d ? 1 : win.strides[0];
  g.sw = win.strides[w_at];
  g.dh = is_1d ? 1 : win.dilations[0];
  g.dw = win.dilations[w_at];
  g.ph = is_1d ? 0 : win.pad_begin(0);
  g.pw = win.pad_begin(w_at);
  g.ph_end = is_1d ? 0 : win.pad_end(0);
  g.pw_end = win.pad_end(w_at);
  if (g.groups <= 0 || g.ic % g.groups != 0 || g.oc % g.groups != 0)
    return unsupported("bad group count");
  if (g.dh > 32767 || g.dw > 32767 || g.kh * g.dh > 32767 || g.kw * g.dw > 32767) {
    return unsupported("convolution window too large");
  }
  return g;
}

bool float_io(const OpBuild& b) {
  for (const ValueDesc& v : b.inputs) {
    if (v.present && v.dtype != ir::DType::kFloat32) return false;
  }
  return b.outputs[0].dtype == ir::DType::kFloat32;
}

struct ConvGemmPush {
  uint32_t M, N, K, H, W, OW, P;
  int32_t sh, sw, ph, pw;
  uint32_t in_img, in_group, out_img, out_group, a_group;
  uint32_t bias_mode, act;
  float act_min, act_max;
  uint32_t flags;  // kVecA: weight rows (K) vec4-aligned; kVecC: output planes (P) too
};

// gemm.comp's SPLIT_K push constants: the CONV ones, then the slice length and count.
struct ConvSplitPush {
  ConvGemmPush conv;
  uint32_t k_split, splits;
};

struct SplitReducePush {
  uint32_t total, M, N, P, splits, out_img, out_group, has_bias, act;
  float act_min, act_max;
};

struct DirectPush {
  uint32_t n, OC, OH, OW, IC, H, W, KH, KW;
  int32_t sh, sw, ph, pw, dh, dw;
  uint32_t icg, ocg, has_bias, act;
  float act_min, act_max;
};

class ConvOp final : public VulkanOp {
 public:
  enum class Kind { kGemm1x1, kImplicit, kDirect };

  ConvOp(Kind kind, const ConvGeometry& g, bool has_bias, Buffer ktable, SplitK split,
         Buffer partial)
      : kind_(kind),
        g_(g),
        has_bias_(has_bias),
        ktable_(std::move(ktable)),
        split_(split),
        partial_(std::move(partial)) {}

  bool fuse(const Activation& act) override {
    if (act_.kind != 0) return false;
    act_ = act;
    return true;
  }

  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const Binding bias = has_bias_ ? Binding(*in[2]) : Binding(*in[1]);
    const int64_t icg = g_.ic / g_.groups, ocg = g_.oc / g_.groups;
    const int64_t p = g_.oh * g_.ow;
    switch (kind_) {
      case Kind::kGemm1x1: {
        GemmPush gp;
        gp.M = static_cast<uint32_t>(g_.oc);
        gp.N = static_cast<uint32_t>(p);
        gp.K = static_cast<uint32_t>(g_.ic);
        gp.a_rs = static_cast<int32_t>(g_.ic);
        gp.a_cs = 1;
        gp.b_rs = static_cast<int32_t>(p);
        gp.b_cs = 1;
        gp.b_bs1 = static_cast<int32_t>(g_.ic * p);
        gp.batch1 = static_cast<uint32_t>(g_.n);
        gp.c_bs = static_cast<int32_t>(g_.oc * p);
        gp.c_rs = static_cast<int32_t>(p);
        gp.bias_mode = has_bias_ ? 1 : 0;
        gp.act = act_.kind;
        gp.act_min = act_.min;
        gp.act_max = act_.max;
        return record_gemm(rec, gp, g_.n, *in[1], *in[0], bias, out[0]);
      }
      case Kind::kImplicit: {
        ConvGemmPush cp{};
        cp.M = static_cast<uint32_t>(ocg);
        cp.N = static_cast<uint32_t>(g_.n * p);
        cp.K = static_cast<uint32_t>(icg * g_.kh * g_.kw);
        cp.H = static_cast<uint32_t>(g_.h);
        cp.W = static_cast<uint32_t>(g_.w);
        cp.OW = static_cast<uint32_t>(g_.ow);
        cp.P = static_cast<uint32_t>(p);
        cp.sh = static_cast<int32_t>(g_.sh);
        cp.sw = static_cast<int32_t>(g_.sw);
        cp.ph = static_cast<int32_t>(g_.ph);
        cp.pw = static_cast<int32_t>(g_.pw);
        cp.in_img = static_cast<uint32_t>(g_.ic * g_.h * g_.w);
        cp.in_group = static_cast<uint32_t>(icg * g_.h * g_.w);
        cp.out_img = static_cast<uint32_t>(g_.oc * p);
        cp.out_group = static_cast<uint32_t>(ocg * p);
        cp.a_group = static_cast<uint32_t>(ocg * cp.K);
        cp.bias_mode = has_bias_ ? 1 : 0;
        cp.act = act_.kind;
        cp.act_min = act_.min;
        cp.act_max = act_.max;
        cp.flags = (cp.K % 4 == 0 ? kVecA : 0) | (cp.P % 4 == 0 ? kVecC : 0);
        if (split_.splits > 1) return record_split(rec, cp, *in[0], *in[1], bias, out[0]);
        const GemmTile tile = gemm_tile(rec.context(), cp.M, cp.N, g_.groups);
        const uint32_t gx = (cp.N + tile.n - 1) / tile.n, gy = (cp.M + tile.m - 1) / tile.m;
        return rec.dispatch(std::string("conv_gemm") + tile.suffix,
                            {*in[1], *in[0], bias, out[0], ktable_}, cp, gx, gy,
                            static_cast<uint32_t>(g_.groups));
      }
      case Kind::kDirect: {
        DirectPush dp{};
        dp.n = static_cast<uint32_t>(g_.n * g_.oc * p);
        dp.OC = static_cast<uint32_t>(g_.oc);
        dp.OH = static_cast<uint32_t>(g_.oh);
        dp.OW = static_cast<uint32_t>(g_.ow);
        dp.IC = static_cast<uint32_t>(g_.ic);
        dp.H = static_cast<uint32_t>(g_.h);
        dp.W = static_cast<uint32_t>(g_.w);
        dp.KH = static_cast<uint32_t>(g_.kh);
        dp.KW = static_cast<uint32_t>(g_.kw);
        dp.sh = static_cast<int32_t>(g_.sh);
        dp.sw = static_cast<int32_t>(g_.sw);
        dp.ph = static_cast<int32_t>(g_.ph);
        dp.pw = static_cast<int32_t>(g_.pw);
        dp.dh = static_cast<int32_t>(g_.dh);
        dp.dw = static_cast<int32_t>(g_.dw);
        dp.icg = static_cast<uint32_t>(icg);
        dp.ocg = static_cast<uint32_t>(ocg);
        dp.has_bias = has_bias_ ? 1 : 0;
        dp.act = act_.kind;
        dp.act_min = act_.min;
        dp.act_max = act_.max;
        return rec.dispatch("conv_direct", {*in[0], *in[1], bias, out[0]}, dp,
                            groups_for(dp.n, kLocal));
      }
    }
    return Status::ok();
  }

 private:
  // The K slices into partial_, then their sum (+ bias, activation) into the output.
  Status record_split(Recorder& rec, const ConvGemmPush& cp, const Binding& x, const Binding& w,
                      const Binding& bias, const Binding& y) {
    const ConvSplitPush sp{cp, static_cast<uint32_t>(split_.k_split),
                           static_cast<uint32_t>(split_.splits)};
    const int64_t slots = g_.groups * split_.splits;
    const GemmTile tile = gemm_tile(rec.context(), cp.M, cp.N, slots);
    const uint32_t gx = (cp.N + tile.n - 1) / tile.n, gy = (cp.M + tile.m - 1) / tile.m;
    PTQ_RETURN_IF_ERROR(rec.dispatch(std::string("conv_gemm") + tile.suffix + "_sk",
                                     {w, x, bias, y, ktable_, partial_}, sp, gx, gy,
                                     static_cast<uint32_t>(slots)));
    SplitReducePush rp{};
    rp.total = static_cast<uint32_t>(g_.groups) * cp.M * cp.N;
    rp.M = cp.M;
    rp.N = cp.N;
    rp.P = cp.P;
    rp.splits = sp.splits;
    rp.out_img = cp.out_img;
    rp.out_group = cp.out_group;
    rp.has_bias = has_bias_ ? 1 : 0;
    rp.act = act_.kind;
    rp.act_min = act_.min;
    rp.act_max = act_.max;
    return rec.dispatch("conv_splitk_reduce", {partial_, bias, y}, rp,
                        groups_for(rp.total, kLocal));
  }

  Kind kind_;
  ConvGeometry g_;
  bool has_bias_;
  Buffer ktable_;
  SplitK split_;
  Buffer partial_;  // [split][group][M][N] partial sums when split_.splits > 1
  Activation act_;
};

// Per k = (ic, kh, kw) of a group: the input offset and the window step (dh<<16 | dw).
Expected<Buffer> conv_ktable(Context& ctx, const ConvGeometry& g) {
  const int64_t icg = g.ic / g.groups;
  std::vector<int32_t> t;
  t.reserve(static_cast<size_t>(icg * g.kh * g.kw * 2));
  for (int64_t c = 0; c < icg; ++c) {
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        t.push_back(static_cast<int32_t>(c * g.h * g.w + kh * g.dh * g.w + kw * g.dw));
        t.push_back(static_cast<int32_t>(((kh * g.dh) << 16) | (kw * g.dw)));
      }
    }
  }
  return upload_buffer(ctx, t.data(), t.size() * sizeof(int32_t));
}

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_conv_vulkan(const OpBuild& b) {
  if (!float_io(b)) return unsupported("only float32 runs on Vulkan");
  PTQ_ASSIGN_OR_RETURN(ConvGeometry g, geometry(b, false));
  const bool has_bias = b.has_input(2);
  const int64_t icg = g.ic / g.groups, ocg = g.oc / g.groups;
  const int64_t k = icg * g.kh * g.kw;
  const int64_t p = g.oh * g.ow;
  if (g.n * g.ic * g.h * g.w >= (int64_t{1} << 31) || g.n * g.oc * p >= (int64_t{1} << 31)) {
    return unsupported("a convolution too large for 32-bit indexing");
  }
  ConvOp::Kind kind = ConvOp::Kind::kImplicit;
  if (g.groups == 1 && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 &&
      g.pw == 0 && g.ph_end == 0 && g.pw_end == 0 && g.n <= 65535) {
    kind = ConvOp::Kind::kGemm1x1;
  } else if (k < 16 || ocg < 8 || g.groups > 65535) {
    kind = ConvOp::Kind::kDirect;
  }
  Buffer ktable, partial;
  SplitK split;
  if (kind == ConvOp::Kind::kImplicit) {
    PTQ_ASSIGN_OR_RETURN(ktable, conv_ktable(b.ctx, g));
    split = split_k(blocks_to_fill(b.ctx), ocg, g.n * p, g.groups, k, b.conv_split_k);
    if (split.splits > 1) {
      const int64_t bytes = split.splits * g.oc * g.n * p * static_cast<int64_t>(sizeof(float));
      PTQ_ASSIGN_OR_RETURN(
          partial, Buffer::create(b.ctx, static_cast<size_t>(bytes), Buffer::Kind::kDevice));
    }
  }
  return std::unique_ptr<VulkanOp>(
      std::make_unique<ConvOp>(kind, g, has_bias, std::move(ktable), split, std::move(partial)));
}

namespace {

struct TransposePush {
  uint32_t n, OC, OH, OW, IC, H, W, KH, KW;
  int32_t sh, sw, ph, pw, dh, dw;
  uint32_t icg, ocg, has_bias;
};

class ConvTransposeOp final : public VulkanOp {
 public:
  ConvTransposeOp(TransposePush push, bool has_bias) : push_(push), has_bias_(has_bias) {}
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const Binding bias = has_bias_ ? Binding(*in[2]) : Binding(*in[1]);
    return rec.dispatch("conv_transpose", {*in[0], *in[1], bias, out[0]}, push_,
                        groups_for(push_.n, kLocal));
  }

 private:
  TransposePush push_;
  bool has_bias_;
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_conv_transpose_vulkan(const OpBuild& b) {
  if (!float_io(b)) return unsupported("only float32 runs on Vulkan");
  PTQ_ASSIGN_OR_RETURN(ConvGeometry g, geometry(b, true));
  TransposePush p{};
  p.n = static_cast<uint32_t>(g.n * g.oc * g.oh * g.ow);
  p.OC = static_cast<uint32_t>(g.oc);
  p.OH = static_cast<uint32_t>(g.oh);
  p.OW = static_cast<uint32_t>(g.ow);
  p.IC = static_cast<uint32_t>(g.ic);
  p.H = static_cast<uint32_t>(g.h);
  p.W = static_cast<uint32_t>(g.w);
  p.KH = static_cast<uint32_t>(g.kh);
  p.KW = static_cast<uint32_t>(g.kw);
  p.sh = static_cast<int32_t>(g.sh);
  p.sw = static_cast<int32_t>(g.sw);
  p.ph = static_cast<int32_t>(g.ph);
  p.pw = static_cast<int32_t>(g.pw);
  p.dh = static_cast<int32_t>(g.dh);
  p.dw = static_cast<int32_t>(g.dw);
  p.icg = static_cast<uint32_t>(g.ic / g.groups);
  p.ocg = static_cast<uint32_t>(g.oc / g.groups);
  p.has_bias = b.has_input(2) ? 1 : 0;
  return std::unique_ptr<VulkanOp>(std::make_unique<ConvTransposeOp>(p, b.has_input(2)));
}

}  // namespace ptq::vulkan
