#version 450
// Tiled matrix multiply C = act(alpha * A·B + bias) with shared-memory tiles and register
// micro-tiles (16x16 threads, each TM x TN outputs strided by 16 so shared reads and global
// stores are conflict-free and coalesced), global loads for the next K step prefetched into
// registers while the current one is computed.
//   default: 64x64x16 block, 4x4 per thread;  LARGE: 128x128x8 block, 8x8 per thread.
//   CONV: implicit-GEMM convolution: A = weights [OC/g, IC/g*KH*KW], B = the im2col of the
//   input read on the fly through a table of per-k offsets, C = the NCHW output.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#ifdef LARGE
#define BM 128
#define BN 128
#define BK 8
#define TM 8
#define TN 8
#else
#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#endif
#define LOADS (BM * BK / 256)
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, binding = 1) readonly buffer BufB { float b[]; };
layout(std430, binding = 2) readonly buffer BufBias { float bias[]; };
layout(std430, binding = 3) writeonly buffer BufC { float c[]; };

#ifdef CONV
layout(std430, binding = 4) readonly buffer KTable { ivec2 ktab[]; };  // (offset, dh<<16 | dw)
layout(push_constant) uniform Params {
  uint M;  // output channels per group
  uint N;  // batch * output pixels
  uint K;  // input channels per group * KH * KW
  uint H, W, OW, P;
  int sh, sw, ph, pw;
  uint in_img, in_group;    // input elements per image, per group
  uint out_img, out_group;  // output elements per image, per group
  uint a_group;             // weight elements per group
  uint bias_mode;           // 0 none, 1 per output channel
  uint act;                 // 0 none, 1 relu, 2 clip
  float act_min, act_max;
} p;
#else
layout(push_constant) uniform Params {
  uint M, N, K;
  int a_rs, a_cs, b_rs, b_cs;  // element strides of A (m, k) and B (k, n)
  uint batch1;                 // inner batch count (z = outer * batch1 + inner)
  int a_bs0, a_bs1, b_bs0, b_bs1;
  int c_bs, c_rs;
  uint bias_mode;              // 0 none, 1 per row m, 2 per column n, 3 matrix, 4 scalar
  int bias_rs, bias_cs;
  float alpha, beta;
  uint act;
  float act_min, act_max;
} p;
#endif

shared float As[BK][BM + 4];
shared float Bs[BK][BN + 4];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % 16u, ty = tid / 16u;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint z = gl_WorkGroupID.z;

#ifdef CONV
  const uint a_base = z * p.a_group;
  const uint in_base = z * p.in_group;
  // Each thread loads B columns n = tid % BN (+0): its image and window origin are fixed.
  const uint ln = tid % BN;
  const uint n_col = n0 + ln;
  const bool n_ok = n_col < p.N;
  const uint img = n_ok ? n_col / p.P : 0u;
  const uint pix = n_ok ? n_col - img * p.P : 0u;
  const int oh = int(pix / p.OW), ow = int(pix % p.OW);
  const int ih0 = oh * p.sh - p.ph, iw0 = ow * p.sw - p.pw;
  const uint col_base = in_base + img * p.in_img;
#else
  const uint zo = z / p.batch1, zi = z % p.batch1;
  const int a_base = int(zo) * p.a_bs0 + int(zi) * p.a_bs1;
  const int b_base = int(zo) * p.b_bs0 + int(zi) * p.b_bs1;
  const bool a_kfast = p.a_cs == 1;
  const bool b_nfast = p.b_cs == 1 || p.b_rs != 1;
#endif

  float acc[TM][TN];
  [[unroll]] for (int i = 0; i < TM; ++i)
    [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] = 0.0;

  float ra[LOADS], rb[LOADS];

  // Global -> registers for the K step starting at k0 (issued before the current step is
  // computed, so the loads are in flight meanwhile).
#ifdef CONV
#define LOAD_TILES(k0)                                                              \
  [[unroll]] for (int r = 0; r < LOADS; ++r) {                                                 \
    uint i = tid + uint(r) * 256u;                                                  \
    uint gm = m0 + i / BK, gk = (k0) + i % BK;                                      \
    ra[r] = (gm < p.M && gk < p.K) ? a[a_base + gm * p.K + gk] : 0.0;               \
    uint bk = (k0) + i / BN;                                                        \
    float v = 0.0;                                                                  \
    if (n_ok && bk < p.K) {                                                         \
      ivec2 t = ktab[bk];                                                           \
      int ih = ih0 + (t.y >> 16), iw = iw0 + (t.y & 0xffff);                        \
      if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W))                     \
        v = b[int(col_base) + t.x + ih0 * int(p.W) + iw0];                          \
    }                                                                               \
    rb[r] = v;                                                                      \
  }
#define STORE_TILES()                                                               \
  [[unroll]] for (int r = 0; r < LOADS; ++r) {                                                 \
    uint i = tid + uint(r) * 256u;                                                  \
    As[i % BK][i / BK] = ra[r];                                                     \
    Bs[i / BN][i % BN] = rb[r];                                                     \
  }
#else
#define LOAD_TILES(k0)                                                              \
  [[unroll]] for (int r = 0; r < LOADS; ++r) {                                                 \
    uint i = tid + uint(r) * 256u;                                                  \
    uint lm, lk, kk, nn;                                                            \
    if (a_kfast) { lk = i % BK; lm = i / BK; } else { lm = i % BM; lk = i / BM; }   \
    uint gm = m0 + lm, gk = (k0) + lk;                                              \
    ra[r] = (gm < p.M && gk < p.K) ? a[a_base + int(gm) * p.a_rs + int(gk) * p.a_cs] : 0.0; \
    if (b_nfast) { nn = i % BN; kk = i / BN; } else { kk = i % BK; nn = i / BK; }   \
    uint bk = (k0) + kk, bn = n0 + nn;                                              \
    rb[r] = (bk < p.K && bn < p.N) ? b[b_base + int(bk) * p.b_rs + int(bn) * p.b_cs] : 0.0; \
  }
#define STORE_TILES()                                                               \
  [[unroll]] for (int r = 0; r < LOADS; ++r) {                                                 \
    uint i = tid + uint(r) * 256u;                                                  \
    uint lm, lk, kk, nn;                                                            \
    if (a_kfast) { lk = i % BK; lm = i / BK; } else { lm = i % BM; lk = i / BM; }   \
    As[lk][lm] = ra[r];                                                             \
    if (b_nfast) { nn = i % BN; kk = i / BN; } else { kk = i % BK; nn = i / BK; }   \
    Bs[kk][nn] = rb[r];                                                             \
  }
#endif

  LOAD_TILES(0u)
  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    barrier();  // the previous step is done reading the tiles
    STORE_TILES()
    barrier();
    if (k0 + BK < p.K) {
      LOAD_TILES(k0 + BK)
    }
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      float va[TM], vb[TN];
      [[unroll]] for (int i = 0; i < TM; ++i) va[i] = As[kk][ty + uint(i) * 16u];
      [[unroll]] for (int j = 0; j < TN; ++j) vb[j] = Bs[kk][tx + uint(j) * 16u];
      [[unroll]] for (int i = 0; i < TM; ++i)
        [[unroll]] for (int j = 0; j < TN; ++j) acc[i][j] += va[i] * vb[j];
    }
  }

  [[unroll]] for (int i = 0; i < TM; ++i) {
    uint m = m0 + ty + uint(i) * 16u;
    if (m >= p.M) continue;
    [[unroll]] for (int j = 0; j < TN; ++j) {
      uint n = n0 + tx + uint(j) * 16u;
      if (n >= p.N) continue;
#ifdef CONV
      float v = acc[i][j];
      if (p.bias_mode == 1u) v += bias[z * p.M + m];
      uint im = n / p.P;
      uint px = n - im * p.P;
      uint dst = im * p.out_img + z * p.out_group + m * p.P + px;
#else
      float v = p.alpha * acc[i][j];
      if (p.bias_mode == 1u) v += p.beta * bias[m];
      else if (p.bias_mode == 2u) v += p.beta * bias[n];
      else if (p.bias_mode == 3u) v += p.beta * bias[int(m) * p.bias_rs + int(n) * p.bias_cs];
      else if (p.bias_mode == 4u) v += p.beta * bias[0];
      uint dst = uint(int(z) * p.c_bs + int(m) * p.c_rs) + n;
#endif
      if (p.act == 1u) v = max(v, 0.0);
      else if (p.act == 2u) v = min(max(v, p.act_min), p.act_max);
      c[dst] = v;
    }
  }
}
