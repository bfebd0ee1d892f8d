// Data movement on Vulkan: Transpose, Slice, Concat, Split, Expand through one strided copy
// shader (copy.comp); Gather (gather.comp), Pad (pad.comp), Resize (resize.comp).
#include <algorithm>
#include <array>
#include <limits>
#include <numeric>

#include "op.h"

namespace ptq::vulkan {

namespace {

constexpr uint32_t kLocal = 256;

struct CopyPush {
  uint32_t n = 0, rank = 0;
  int32_t src_off = 0, dst_off = 0;
  uint32_t words = 1;
  std::array<uint32_t, 6> dims{};
  std::array<int32_t, 6> ss{};
  std::array<int32_t, 6> ds{};
};

std::vector<int64_t> contiguous_strides(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

Expected<uint32_t> words_of(ir::DType t) {
  const size_t size = ir::dtype_size(t);
  if (size == 4 || size == 8) return static_cast<uint32_t>(size / 4);
  return unsupported("{} elements do not move on Vulkan (4- and 8-byte types do)",
                     ir::dtype_name(t));
}

// Builds the push constants of one strided copy, merging dims both sides walk contiguously.
Expected<CopyPush> copy_layout(const ir::Shape& dims, const std::vector<int64_t>& ss,
                               const std::vector<int64_t>& ds, int64_t src_off, int64_t dst_off,
                               uint32_t words) {
  CopyPush p;
  p.n = static_cast<uint32_t>(ir::num_elements(dims));
  p.src_off = static_cast<int32_t>(src_off);
  p.dst_off = static_cast<int32_t>(dst_off);
  p.words = words;
  std::vector<int64_t> d, s, t;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && s.back() == ss[i] * dims[i] && t.back() == ds[i] * dims[i]) {
      d.back() *= dims[i];
      s.back() = ss[i];
      t.back() = ds[i];
      continue;
    }
    d.push_back(dims[i]);
    s.push_back(ss[i]);
    t.push_back(ds[i]);
  }
  if (d.size() > 6) return unsupported("a copy over {} dims (Vulkan handles 6)", d.size());
  p.rank = static_cast<uint32_t>(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    p.dims[i] = static_cast<uint32_t>(d[i]);
    p.ss[i] = static_cast<int32_t>(s[i]);
    p.ds[i] = static_cast<int32_t>(t[i]);
  }
  return p;
}

// One op made of strided copies: copy k reads input src[k] and writes output dst[k].
class CopyOp final : public VulkanOp {
 public:
  struct Piece {
    size_t src = 0, dst = 0;
    CopyPush push;
  };
  explicit CopyOp(std::vector<Piece> pieces) : pieces_(std::move(pieces)) {}
  bool reads_on_device(size_t i) const override {
    return std::any_of(pieces_.begin(), pieces_.end(), [&](const Piece& p) { return p.src == i; });
  }
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    for (size_t k = 0; k < pieces_.size(); ++k) {
      const Piece& piece = pieces_[k];
      // The pieces write disjoint ranges and read nothing another piece writes.
      if (k > 0) rec.no_barrier_needed();
      PTQ_RETURN_IF_ERROR(rec.dispatch("copy", {*in[piece.src], out[piece.dst]}, piece.push,
                                       groups_for(piece.push.n, kLocal)));
    }
    return Status::ok();
  }

 private:
  std::vector<Piece> pieces_;
};

Expected<std::unique_ptr<VulkanOp>> single_copy(const ir::Shape& dims,
                                                const std::vector<int64_t>& ss, int64_t src_off,
                                                ir::DType dtype) {
  PTQ_ASSIGN_OR_RETURN(uint32_t words, words_of(dtype));
  PTQ_ASSIGN_OR_RETURN(CopyPush push,
                       copy_layout(dims, ss, contiguous_strides(dims), src_off, 0, words));
  return std::unique_ptr<VulkanOp>(
      std::make_unique<CopyOp>(std::vector<CopyOp::Piece>{{0, 0, push}}));
}

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_transpose_vulkan(const OpBuild& b) {
  const ir::Shape& in = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = b.node.attr_ints("perm", perm);
  if (static_cast<int64_t>(perm.size()) != rank)
    return unsupported("Transpose perm does not match the rank");
  const std::vector<int64_t> st = contiguous_strides(in);
  ir::Shape dims(perm.size());
  std::vector<int64_t> ss(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    PTQ_ASSIGN_OR_RETURN(const int64_t p, normalize_axis(b.node, perm[d], rank));
    dims[d] = in[static_cast<size_t>(p)];
    ss[d] = st[static_cast<size_t>(p)];
  }
  return single_copy(dims, ss, 0, b.in(0).dtype);
}

Expected<std::unique_ptr<VulkanOp>> make_slice_vulkan(const OpBuild& b) {
  const ir::Shape& in = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (b.opset < 10) {
    starts = b.node.attr_ints("starts", {});
    ends = b.node.attr_ints("ends", {});
    axes = b.node.attr_ints("axes", {});
  } else {
    for (size_t i = 1; i < 5; ++i) {
      if (b.has_input(i) && b.constant(i) == nullptr)
        return unsupported("Slice input {} is not a constant", i);
    }
    starts = to_int64s(*b.constant(1));
    ends = to_int64s(*b.constant(2));
    if (b.has_input(3)) axes = to_int64s(*b.constant(3));
    if (b.has_input(4)) steps = to_int64s(*b.constant(4));
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  const std::vector<int64_t> st = contiguous_strides(in);
  std::vector<int64_t> ss = st;
  int64_t off = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    PTQ_ASSIGN_OR_RETURN(const int64_t a, normalize_axis(b.node, axes[k], rank));
    const int64_t dim = in[static_cast<size_t>(a)];
    const int64_t step = steps[k];
    if (step == 0) return unsupported("Slice step 0");
    int64_t s = starts[k];
    if (s < 0) s = std::max<int64_t>(s, -dim) + dim;
    s = step > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    off += s * st[static_cast<size_t>(a)];
    ss[static_cast<size_t>(a)] = step * st[static_cast<size_t>(a)];
  }
  return single_copy(b.outputs[0].shape, ss, off, b.in(0).dtype);
}

Expected<std::unique_ptr<VulkanOp>> make_expand_vulkan(const OpBuild& b) {
  const ir::Shape& in = b.in(0).shape;
  const ir::Shape& out = b.outputs[0].shape;
  std::vector<int64_t> ss(out.size(), 0);
  const std::vector<int64_t> st = contiguous_strides(in);
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t di = in.size() - 1 - k, dout = out.size() - 1 - k;
    ss[dout] = in[di] == 1 ? 0 : st[di];
  }
  PTQ_ASSIGN_OR_RETURN(uint32_t words, words_of(b.in(0).dtype));
  PTQ_ASSIGN_OR_RETURN(CopyPush push, copy_layout(out, ss, contiguous_strides(out), 0, 0, words));
  struct ExpandOp final : VulkanOp {
    CopyPush push;
    bool reads_on_device(size_t i) const override { return i == 0; }
    Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                  std::span<const DeviceTensor> out) override {
      return rec.dispatch("copy", {*in[0], out[0]}, push, groups_for(push.n, kLocal));
    }
  };
  auto op = std::make_unique<ExpandOp>();
  op->push = push;
  return std::unique_ptr<VulkanOp>(std::move(op));
}

Expected<std::unique_ptr<VulkanOp>> make_concat_vulkan(const OpBuild& b) {
  const ir::Shape& out = b.outputs[0].shape;
  PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(b.node, b.node.attr_int("axis", 0),
                                                         static_cast<int64_t>(out.size())));
  PTQ_ASSIGN_OR_RETURN(uint32_t words, words_of(b.outputs[0].dtype));
  const std::vector<int64_t> ds = contiguous_strides(out);
  std::vector<CopyOp::Piece> pieces;
  int64_t offset = 0;
  for (size_t k = 0; k < b.inputs.size(); ++k) {
    const ir::Shape& s = b.in(k).shape;
    if (ir::num_elements(s) > 0) {
      PTQ_ASSIGN_OR_RETURN(CopyPush push,
                           copy_layout(s, contiguous_strides(s), ds, 0,
                                       offset * ds[static_cast<size_t>(axis)], words));
      pieces.push_back({k, 0, push});
    }
    offset += s[static_cast<size_t>(axis)];
  }
  return std::unique_ptr<VulkanOp>(std::make_unique<CopyOp>(std::move(pieces)));
}

Expected<std::unique_ptr<VulkanOp>> make_split_vulkan(const OpBuild& b) {
  const ir::Shape& in = b.in(0).shape;
  PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(b.node, b.node.attr_int("axis", 0),
                                                         static_cast<int64_t>(in.size())));
  PTQ_ASSIGN_OR_RETURN(uint32_t words, words_of(b.in(0).dtype));
  const std::vector<int64_t> ss = contiguous_strides(in);
  std::vector<CopyOp::Piece> pieces;
  int64_t offset = 0;
  for (size_t k = 0; k < b.outputs.size(); ++k) {
    if (!b.outputs[k].present) return unsupported("Split with an omitted output");
    const ir::Shape& s = b.outputs[k].shape;
    if (ir::num_elements(s) > 0) {
      PTQ_ASSIGN_OR_RETURN(CopyPush push,
                           copy_layout(s, ss, contiguous_strides(s),
                                       offset * ss[static_cast<size_t>(axis)], 0, words));
      pieces.push_back({0, k, push});
    }
    offset += s[static_cast<size_t>(axis)];
  }
  return std::unique_ptr<VulkanOp>(std::make_unique<CopyOp>(std::move(pieces)));
}

namespace {

class GatherOp final : public VulkanOp {
 public:
  struct Push {
    uint32_t n, axis_len, inner, k, words, index_words;
  };
  GatherOp(Push push, Buffer indices) : push_(push), indices_(std::move(indices)) {}
  bool reads_on_device(size_t i) const override { return i == 0 || !indices_.valid(); }
  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const Binding idx = indices_.valid() ? Binding(indices_) : Binding(*in[1]);
    return rec.dispatch("gather", {*in[0], idx, out[0]}, push_, groups_for(push_.n, kLocal));
  }

 private:
  Push push_;
  Buffer indices_;
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_gather_vulkan(const OpBuild& b) {
  const ir::Shape& data = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(data.size());
  PTQ_ASSIGN_OR_RETURN(const int64_t axis,
                       normalize_axis(b.node, b.node.attr_int("axis", 0), rank));
  PTQ_ASSIGN_OR_RETURN(uint32_t words, words_of(b.in(0).dtype));
  const ir::DType it = b.in(1).dtype;
  if (it != ir::DType::kInt64 && it != ir::DType::kInt32)
    return unsupported("Gather indices of {}", ir::dtype_name(it));
  GatherOp::Push push{};
  push.n = static_cast<uint32_t>(ir::num_elements(b.outputs[0].shape));
  push.axis_len = static_cast<uint32_t>(data[static_cast<size_t>(axis)]);
  push.inner = static_cast<uint32_t>(dims_product(data, axis + 1, rank));
  push.k = static_cast<uint32_t>(ir::num_elements(b.in(1).shape));
  push.words = words;
  push.index_words = it == ir::DType::kInt64 ? 2 : 1;
  Buffer indices;
  if (const ir::Tensor* c = b.constant(1)) {
    std::vector<int32_t> v(static_cast<size_t>(c->size()));
    for (int64_t i = 0; i < c->size(); ++i)
      v[static_cast<size_t>(i)] = static_cast<int32_t>(c->as_int64(i));
    PTQ_ASSIGN_OR_RETURN(indices, upload_buffer(b.ctx, v.data(), v.size() * sizeof(int32_t)));
    push.index_words = 1;
  }
  return std::unique_ptr<VulkanOp>(std::make_unique<GatherOp>(push, std::move(indices)));
}

namespace {

struct PadPush {
  uint32_t n = 0, rank = 0, mode = 0, value = 0;
  std::array<uint32_t, 6> out_dims{};
  std::array<uint32_t, 6> in_dims{};
  std::array<int32_t, 6> begin{};
};

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_pad_vulkan(const OpBuild& b) {
  if (ir::dtype_size(b.in(0).dtype) != 4)
    return unsupported("Pad of {}", ir::dtype_name(b.in(0).dtype));
  const ir::Shape& in = b.in(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  if (rank > 6) return unsupported("Pad of rank {}", rank);
  std::vector<int64_t> pads;
  float value = 0.0f;
  if (b.opset < 11) {
    pads = b.node.attr_ints("pads", {});
    value = b.node.attr_float("value", 0.0f);
  } else {
    for (size_t i = 1; i < 4; ++i) {
      if (b.has_input(i) && b.constant(i) == nullptr)
        return unsupported("Pad input {} is not a constant", i);
    }
    pads = to_int64s(*b.constant(1));
    if (b.has_input(2) && b.constant(2)->size() > 0)
      value = static_cast<float>(b.constant(2)->as_double(0));
  }
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (b.has_input(3)) axes = to_int64s(*b.constant(3));
  if (pads.size() != 2 * axes.size()) return unsupported("Pad pads do not match the axes");
  PadPush p;
  const std::string mode = b.node.attr_string("mode", "constant");
  p.mode = mode == "constant"  ? 0
           : mode == "reflect" ? 1
           : mode == "edge"    ? 2
           : mode == "wrap"    ? 3
                               : 9;
  if (p.mode == 9) return unsupported("Pad mode '{}'", mode);
  p.n = static_cast<uint32_t>(ir::num_elements(b.outputs[0].shape));
  p.rank = static_cast<uint32_t>(rank);
  if (b.in(0).dtype == ir::DType::kFloat32) {
    std::memcpy(&p.value, &value, 4);
  } else {
    p.value = static_cast<uint32_t>(static_cast<int32_t>(value));
  }
  for (int64_t d = 0; d < rank; ++d) {
    p.out_dims[static_cast<size_t>(d)] =
        static_cast<uint32_t>(b.outputs[0].shape[static_cast<size_t>(d)]);
    p.in_dims[static_cast<size_t>(d)] = static_cast<uint32_t>(in[static_cast<size_t>(d)]);
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(b.node, axes[k], rank));
    p.begin[static_cast<size_t>(axis)] = static_cast<int32_t>(pads[k]);
  }
  if (p.mode != 0 && ir::num_elements(in) == 0) return unsupported("Pad of an empty tensor");
  struct PadOp final : VulkanOp {
    PadPush push;
    bool reads_on_device(size_t i) const override { return i == 0; }
    Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                  std::span<const DeviceTensor> out) override {
      return rec.dispatch("pad", {*in[0], out[0]}, push, groups_for(push.n, kLocal));
    }
  };
  auto op = std::make_unique<PadOp>();
  op->push = p;
  return std::unique_ptr<VulkanOp>(std::move(op));
}

Expected<std::unique_ptr<VulkanOp>> make_resize_vulkan(const OpBuild& b) {
  if (b.in(0).dtype != ir::DType::kFloat32)
    return unsupported("Resize of {}", ir::dtype_name(b.in(0).dtype));
  const ir::Shape& in = b.in(0).shape;
  const ir::Shape& out = b.outputs[0].shape;
  const size_t r = in.size();
  if (r < 2) return unsupported("Resize of rank {}", r);
  for (size_t d = 0; d + 2 < r; ++d) {
    if (in[d] != out[d]) return unsupported("Resize of a dim other than the last two");
  }
  if (b.node.attr_int("antialias", 0) != 0 || b.node.has_attr("axes"))
    return unsupported("Resize with antialias or axes");
  struct Push {
    uint32_t n, in_h, in_w, out_h, out_w;
    float scale_h, scale_w;
    uint32_t linear, coord, nearest;
  } p{};
  p.n = static_cast<uint32_t>(ir::num_elements(out));
  p.in_h = static_cast<uint32_t>(in[r - 2]);
  p.in_w = static_cast<uint32_t>(in[r - 1]);
  p.out_h = static_cast<uint32_t>(out[r - 2]);
  p.out_w = static_cast<uint32_t>(out[r - 1]);
  p.scale_h = static_cast<float>(p.out_h) / static_cast<float>(p.in_h);
  p.scale_w = static_cast<float>(p.out_w) / static_cast<float>(p.in_w);
  const size_t scales_input = b.opset < 11 ? 1 : 2;
  if (b.has_input(scales_input)) {
    const ir::Tensor* s = b.constant(scales_input);
    if (s == nullptr) return unsupported("Resize scales are not a constant");
    if (s->size() == static_cast<int64_t>(r)) {
      p.scale_h = static_cast<float>(s->as_double(static_cast<int64_t>(r) - 2));
      p.scale_w = static_cast<float>(s->as_double(static_cast<int64_t>(r) - 1));
    }
  }
  const std::string mode = b.node.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return unsupported("Resize mode '{}'", mode);
  p.linear = mode == "linear" ? 1 : 0;
  const std::string coord = b.node.attr_string(
      "coordinate_transformation_mode", b.opset < 11 ? "asymmetric" : "half_pixel");
  if (coord == "half_pixel") p.coord = 0;
  else if (coord == "asymmetric") p.coord = 1;
  else if (coord == "align_corners") p.coord = 2;
  else if (coord == "pytorch_half_pixel") p.coord = 3;
  else return unsupported("Resize coordinate_transformation_mode '{}'", coord);
  const std::string nearest = b.node.attr_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") p.nearest = 0;
  else if (nearest == "round_prefer_ceil") p.nearest = 1;
  else if (nearest == "floor") p.nearest = 2;
  else if (nearest == "ceil") p.nearest = 3;
  else return unsupported("Resize nearest_mode '{}'", nearest);
  struct ResizeOp final : VulkanOp {
    Push push;
    bool reads_on_device(size_t i) const override { return i == 0; }
    Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                  std::span<const DeviceTensor> out) override {
      return rec.dispatch("resize", {*in[0], out[0]}, push, groups_for(push.n, kLocal));
    }
  };
  auto op = std::make_unique<ResizeOp>();
  op->push = p;
  return std::unique_ptr<VulkanOp>(std::move(op));
}

}  // namespace ptq::vulkan
