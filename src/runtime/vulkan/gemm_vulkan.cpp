// Gemm and MatMul on Vulkan through the tiled GEMM shader (gemm.comp).
#include "gemm_vulkan.h"

#include <algorithm>
#include <initializer_list>
#include <string>

namespace ptq::vulkan {

int64_t blocks_to_fill(const Context& ctx) {
  // A GPU wants a block per multiprocessor at least (132 on an H100; core Vulkan does not say
  // how many there are); a CPU device (lavapipe) runs a few blocks per core at a time.
  return ctx.info().type == "CPU" ? 4 : 132;
}

GemmTile gemm_tile(const Context& ctx, int64_t m, int64_t n, int64_t batch) {
  const int64_t enough = blocks_to_fill(ctx);
  auto blocks = [&](int64_t bm, int64_t bn) {
    return ((m + bm - 1) / bm) * ((n + bn - 1) / bn) * batch;
  };
  if (m >= 128 && n >= 128 && blocks(128, 128) >= enough) return {128, 128, "_l"};
  if (m >= 48 && m <= 64 && n >= 256 && blocks(64, 256) >= enough) return {64, 256, "_w"};
  if (m >= 48 && n >= 128 && blocks(64, 128) >= enough) return {64, 128, "_m"};
  return {64, 64, ""};
}

namespace {

bool aligned4(std::initializer_list<int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](int64_t v) { return v % 4 == 0; });
}

// Which operands gemm.comp may move as vec4: unit stride along the vector, every other stride,
// batch offset and the vector's extent multiples of 4 (binding offsets are 256-byte aligned).
uint32_t vec_flags(const GemmPush& p) {
  uint32_t f = 0;
  if (p.a_cs == 1 && aligned4({p.K, p.a_rs, p.a_bs0, p.a_bs1})) f |= kVecA;
  if (p.b_cs == 1 && aligned4({p.N, p.b_rs, p.b_bs0, p.b_bs1})) f |= kVecB;
  if (aligned4({p.N, p.c_rs, p.c_bs})) f |= kVecC;
  return f;
}

}  // namespace

Status record_gemm(Recorder& rec, const GemmPush& push, int64_t batch, const Binding& a,
                   const Binding& b, const Binding& bias, const Binding& c,
                   const GemmTile* forced) {
  const GemmTile tile =
      forced != nullptr ? *forced : gemm_tile(rec.context(), push.M, push.N, batch);
  GemmPush p = push;
  p.flags = vec_flags(push);
  const uint32_t gx = (p.N + tile.n - 1) / tile.n, gy = (p.M + tile.m - 1) / tile.m;
  return rec.dispatch(std::string("gemm") + tile.suffix, {a, b, bias, c}, p, gx, gy,
                      static_cast<uint32_t>(batch));
}

namespace {

class GemmOp final : public VulkanOp {
 public:
  GemmOp(GemmPush push, int64_t batch, bool has_bias)
      : push_(push), batch_(batch), has_bias_(has_bias) {}

  bool fuse(const Activation& act) override {
    if (push_.act != 0) return false;
    push_.act = act.kind;
    push_.act_min = act.min;
    push_.act_max = act.max;
    return true;
  }

  Status record(Recorder& rec, std::span<const DeviceTensor* const> in,
                std::span<const DeviceTensor> out) override {
    const Binding bias = has_bias_ ? Binding(*in[2]) : Binding(*in[0]);
    return record_gemm(rec, push_, batch_, *in[0], *in[1], bias, out[0]);
  }

 private:
  GemmPush push_;
  int64_t batch_;
  bool has_bias_;
};

bool float_io(const OpBuild& b) {
  for (const ValueDesc& v : b.inputs) {
    if (v.present && v.dtype != ir::DType::kFloat32) return false;
  }
  return b.outputs[0].dtype == ir::DType::kFloat32;
}

Status check_limits(int64_t m, int64_t n, int64_t k, int64_t batch) {
  const int64_t limit = int64_t{1} << 31;
  if (m * k >= limit || k * n >= limit || m * n * batch >= limit || batch > 65535) {
    return unsupported("a GEMM of {}x{}x{} (batch {}) exceeds the shader's 32-bit indexing", m, n,
                       k, batch);
  }
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<VulkanOp>> make_gemm_vulkan(const OpBuild& b) {
  if (!float_io(b)) return unsupported("only float32 runs on Vulkan");
  const ir::Shape& sa = b.in(0).shape;
  const ir::Shape& sb = b.in(1).shape;
  if (sa.size() != 2 || sb.size() != 2) return unsupported("Gemm of non-matrices");
  const bool ta = b.node.attr_int("transA", 0) != 0, tb = b.node.attr_int("transB", 0) != 0;
  GemmPush p;
  p.M = static_cast<uint32_t>(ta ? sa[1] : sa[0]);
  p.K = static_cast<uint32_t>(ta ? sa[0] : sa[1]);
  p.N = static_cast<uint32_t>(tb ? sb[0] : sb[1]);
  PTQ_RETURN_IF_ERROR(check_limits(p.M, p.N, p.K, 1));
  p.a_rs = ta ? 1 : static_cast<int32_t>(p.K);
  p.a_cs = ta ? static_cast<int32_t>(p.M) : 1;
  p.b_rs = tb ? 1 : static_cast<int32_t>(p.N);
  p.b_cs = tb ? static_cast<int32_t>(p.K) : 1;
  p.c_rs = static_cast<int32_t>(p.N);
  p.c_bs = static_cast<int32_t>(p.M * p.N);
  p.alpha = b.node.attr_float("alpha", 1.0f);
  p.beta = b.node.attr_float("beta", 1.0f);
  const bool has_bias = b.has_input(2) && p.beta != 0.0f;
  if (has_bias) {
    const ir::Shape& c = b.in(2).shape;
    const int64_t n = ir::num_elements(c);
    const int64_t rows = c.size() == 2 ? c[0] : 1;
    const int64_t cols = c.empty() ? 1 : c.back();
    if (n == 1) {
      p.bias_mode = 4;
    } else if (rows == 1 && cols == p.N) {
      p.bias_mode = 2;
    } else if (c.size() == 2 && rows == p.M && cols == 1) {
      p.bias_mode = 1;
    } else if (c.size() == 2 && rows == p.M && cols == p.N) {
      p.bias_mode = 3;
      p.bias_rs = static_cast<int32_t>(p.N);
      p.bias_cs = 1;
    } else {
      return unsupported("Gemm bias of shape {}", ir::shape_str(c));
    }
  }
  return std::unique_ptr<VulkanOp>(std::make_unique<GemmOp>(p, 1, has_bias));
}

Expected<std::unique_ptr<VulkanOp>> make_matmul_vulkan(const OpBuild& b) {
  if (!float_io(b)) return unsupported("only float32 runs on Vulkan");
  ir::Shape sa = b.in(0).shape, sb = b.in(1).shape;
  if (sa.empty() || sb.empty()) return unsupported("MatMul of scalars");
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) return unsupported("MatMul inner dims differ");
  // Batch dims, broadcast, with each operand's element stride per dim (0 when broadcast).
  const size_t rank = std::max(sa.size(), sb.size()) - 2;
  std::vector<int64_t> dims(rank, 1), st_a(rank, 0), st_b(rank, 0);
  auto fill = [&](const ir::Shape& s, int64_t matrix, std::vector<int64_t>& st) {
    int64_t stride = matrix;
    for (size_t i = 0; i + 2 < s.size(); ++i) {
      const size_t src = s.size() - 3 - i, dst = rank - 1 - i;
      dims[dst] = std::max(dims[dst], s[src]);
      st[dst] = s[src] == 1 ? 0 : stride;
      stride *= s[src];
    }
  };
  fill(sa, m * k, st_a);
  fill(sb, k * n, st_b);
  int64_t batch = 1;
  for (int64_t d : dims) batch *= d;
  GemmPush p;
  p.a_rs = static_cast<int32_t>(k);
  p.a_cs = 1;
  p.b_rs = static_cast<int32_t>(n);
  p.b_cs = 1;
  p.c_rs = static_cast<int32_t>(n);
  p.K = static_cast<uint32_t>(k);
  p.N = static_cast<uint32_t>(n);
  const bool b_shared = std::all_of(st_b.begin(), st_b.end(), [](int64_t s) { return s == 0; });
  bool a_contiguous = true;
  for (size_t i = rank, stride = static_cast<size_t>(m * k); i-- > 0;) {
    if (dims[i] == 1) continue;
    a_contiguous = a_contiguous && st_a[i] == static_cast<int64_t>(stride);
    stride *= static_cast<size_t>(dims[i]);
  }
  if (b_shared && a_contiguous) {
    // One B for every batch: fold the batch into M (a [batch*M, K] x [K, N] product).
    p.M = static_cast<uint32_t>(batch * m);
    p.c_bs = static_cast<int32_t>(batch * m * n);
    PTQ_RETURN_IF_ERROR(check_limits(batch * m, n, k, 1));
    return std::unique_ptr<VulkanOp>(std::make_unique<GemmOp>(p, 1, false));
  }
  PTQ_RETURN_IF_ERROR(check_limits(m, n, k, batch));
  // Collapse batch dims both operands walk contiguously; the shader takes two levels.
  std::vector<int64_t> d2, a2, b2;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] == 1) continue;
    if (!d2.empty() && a2.back() == st_a[i] * dims[i] && b2.back() == st_b[i] * dims[i]) {
      d2.back() *= dims[i];
      a2.back() = st_a[i];
      b2.back() = st_b[i];
      continue;
    }
    d2.push_back(dims[i]);
    a2.push_back(st_a[i]);
    b2.push_back(st_b[i]);
  }
  if (d2.size() > 2) return unsupported("MatMul batch broadcast over {} dims", d2.size());
  while (d2.size() < 2) {
    d2.insert(d2.begin(), 1);
    a2.insert(a2.begin(), 0);
    b2.insert(b2.begin(), 0);
  }
  p.M = static_cast<uint32_t>(m);
  p.batch1 = static_cast<uint32_t>(d2[1]);
  p.a_bs0 = static_cast<int32_t>(a2[0]);
  p.a_bs1 = static_cast<int32_t>(a2[1]);
  p.b_bs0 = static_cast<int32_t>(b2[0]);
  p.b_bs1 = static_cast<int32_t>(b2[1]);
  p.c_bs = static_cast<int32_t>(m * n);
  return std::unique_ptr<VulkanOp>(std::make_unique<GemmOp>(p, batch, false));
}

}  // namespace ptq::vulkan
