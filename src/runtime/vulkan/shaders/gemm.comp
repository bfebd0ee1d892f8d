#version 450
// Tiled fp32 matrix multiply C = act(alpha * A·B + bias), and (CONV) implicit-GEMM convolution.
//
// A block of 256 threads (16 x 16) computes a BM x BN tile of C; each thread a TM x TN
// micro-tile held in vec4 registers: rows ty*4 + {0..3} (+64), columns tx*4 + {0..3} (+64), so
// every shared-memory read is a conflict-free (or broadcast) 128-bit load and each loaded value
// feeds 4-8 FMAs. The K loop is double-buffered: the next BK slice is loaded from global memory
// into registers while the current one is multiplied out of shared memory, one barrier a step.
// All accumulator indices are compile-time constants (fully unrolled loops), so nothing spills.
//   TILE_L: 128x128x8 (8x8 per thread)  TILE_W: 64x256x16 (4x16, for 64-channel convolutions)
//   TILE_M: 64x128x16 (4x8)             default: 64x64x16 (4x4)
// Global loads are vec4 when the host says the operand is contiguous and 16-byte aligned
// (flags), else 4 scalar loads with bounds checks; bounds are only checked on loads and stores,
// never in the multiply loop (out-of-range elements are loaded as 0).
//   CONV: A = weights [OC/g, IC/g*KH*KW], B = the im2col of the input gathered on the fly
//   through a table of per-k offsets, C = the NCHW output; z = the group.
//   CONV + SPLIT_K: z = group * splits + split; each split sums its own k_split-long slice of
//   K and stores the raw sums to P[split][group][m][n]; conv_splitk_reduce.comp adds the
//   slices in split order, then bias and activation. For convolutions whose output tiles are
//   too few to fill the GPU (ResNet's layer3/layer4 at batch 32) but whose K is long.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable

#if defined(TILE_L)
#define BM 128
#define BN 128
#define BK 8
#elif defined(TILE_M)
#define BM 64
#define BN 128
#define BK 16
#elif defined(TILE_W)
#define BM 64
#define BN 256
#define BK 16
#else
#define BM 64
#define BN 64
#define BK 16
#endif
#define TM (BM / 16)                 // rows per thread: 8 or 4
#define RM (BM / 64)                 // vec4 row groups per thread
#define RN (BN / 64)                 // vec4 column groups per thread
#define A_VECS (BM * BK / 1024)      // vec4 loads of A per thread and K step
#define B_VECS (BN * BK / 1024)      // vec4 loads of B per thread (GEMM)
#define B_GATHERS (BN * BK / 256)    // scalar gathers of B per thread (CONV)
#define FLAG_VEC_A 1u
#define FLAG_VEC_B 2u
#define FLAG_VEC_C 4u

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer BufA { float a[]; };
layout(std430, binding = 0) readonly buffer BufA4 { vec4 a4[]; };
layout(std430, binding = 1) readonly buffer BufB { float b[]; };
layout(std430, binding = 1) readonly buffer BufB4 { vec4 b4[]; };
layout(std430, binding = 2) readonly buffer BufBias { float bias[]; };
layout(std430, binding = 3) writeonly buffer BufC { float cm[]; };
layout(std430, binding = 3) writeonly buffer BufC4 { vec4 cm4[]; };

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
  uint flags;               // FLAG_VEC_A: K % 4 == 0; FLAG_VEC_C: P % 4 == 0
#ifdef SPLIT_K
  uint k_split;             // K elements per split, a multiple of BK
  uint splits;
#endif
} p;
#ifdef SPLIT_K
layout(std430, binding = 5) writeonly buffer BufP { float part[]; };
layout(std430, binding = 5) writeonly buffer BufP4 { vec4 part4[]; };
#endif
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
  // FLAG_VEC_*: that operand is k- (A) or n-contiguous (B, C) and aligned
  uint flags;
} p;
#endif

// A transposed (k-major); +1 vec4 keeps its stores conflict-free
shared vec4 As[2][BK][BM / 4 + 1];
shared vec4 Bs[2][BK][BN / 4];

uint k_lim;  // loads at k >= k_lim read 0 (the end of K, or of this split's slice)

#define tid gl_LocalInvocationID.x
#define tx (gl_LocalInvocationID.x % 16u)
#define ty (gl_LocalInvocationID.x / 16u)

// ---- A: rows m0 + v / (BK/4), columns k0 + 4 * (v % (BK/4)), one vec4 per v ----------------
uint a_row(int v) { return (tid + uint(v) * 256u) / (BK / 4); }
uint a_col(int v) { return (tid + uint(v) * 256u) % (BK / 4) * 4u; }

#ifdef CONV
vec4 load_a(int base, uint m, uint k) {
  if (m >= p.M) return vec4(0.0);
  const int at = base + int(m * p.K + k);
  if ((p.flags & FLAG_VEC_A) != 0u) return k < k_lim ? a4[at / 4] : vec4(0.0);
  vec4 v;
  [[unroll]] for (int c = 0; c < 4; ++c) v[c] = k + uint(c) < k_lim ? a[at + c] : 0.0;
  return v;
}
#else
vec4 load_a(int base, uint m, uint k) {
  if (m >= p.M) return vec4(0.0);
  const int at = base + int(m) * p.a_rs + int(k) * p.a_cs;
  if ((p.flags & FLAG_VEC_A) != 0u) return k < p.K ? a4[at / 4] : vec4(0.0);
  vec4 v;
  [[unroll]] for (int c = 0; c < 4; ++c) v[c] = k + uint(c) < p.K ? a[at + c * p.a_cs] : 0.0;
  return v;
}

// ---- B (GEMM): rows k0 + v / (BN/4), columns n0 + 4 * (v % (BN/4)) --------------------------
uint b_row(int v) { return (tid + uint(v) * 256u) / (BN / 4); }
uint b_col(int v) { return (tid + uint(v) * 256u) % (BN / 4) * 4u; }

vec4 load_b(int base, uint k, uint n) {
  if (k >= p.K) return vec4(0.0);
  const int at = base + int(k) * p.b_rs + int(n) * p.b_cs;
  if ((p.flags & FLAG_VEC_B) != 0u) return n < p.N ? b4[at / 4] : vec4(0.0);
  vec4 v;
  [[unroll]] for (int c = 0; c < 4; ++c) v[c] = n + uint(c) < p.N ? b[at + c * p.b_cs] : 0.0;
  return v;
}
#endif

#ifdef SPLIT_K
// Raw partial sums of split s for group g: P[s][g][m][n], n contiguous.
void store_tile(vec4 v, uint m, uint n, uint z) {
  const uint at = (z * p.M + m) * p.N + n;
  if ((p.flags & FLAG_VEC_C) != 0u) {
    part4[at / 4u] = v;
    return;
  }
  [[unroll]] for (int e = 0; e < 4; ++e) {
    if (n + uint(e) < p.N) part[at + uint(e)] = v[e];
  }
}
#elif defined(CONV)
void store_tile(vec4 v, uint m, uint n, uint z) {
  if (p.bias_mode == 1u) v += bias[z * p.M + m];
  if (p.act == 1u) v = max(v, vec4(0.0));
  else if (p.act == 2u) v = min(max(v, vec4(p.act_min)), vec4(p.act_max));
  if ((p.flags & FLAG_VEC_C) != 0u) {
    const uint img = n / p.P;
    cm4[(img * p.out_img + z * p.out_group + m * p.P + (n - img * p.P)) / 4u] = v;
    return;
  }
  [[unroll]] for (int e = 0; e < 4; ++e) {
    const uint ne = n + uint(e);
    const uint img = ne / p.P;
    if (ne < p.N) cm[img * p.out_img + z * p.out_group + m * p.P + (ne - img * p.P)] = v[e];
  }
}
#else
void store_tile(vec4 v, uint m, uint n, uint z) {
  v *= p.alpha;
  if (p.bias_mode == 1u) {
    v += p.beta * bias[m];
  } else if (p.bias_mode == 4u) {
    v += p.beta * bias[0];
  } else if (p.bias_mode == 2u || p.bias_mode == 3u) {
    [[unroll]] for (int e = 0; e < 4; ++e) {
      const uint ne = min(n + uint(e), p.N - 1u);
      v[e] += p.beta * (p.bias_mode == 2u ? bias[ne]
                                          : bias[int(m) * p.bias_rs + int(ne) * p.bias_cs]);
    }
  }
  if (p.act == 1u) v = max(v, vec4(0.0));
  else if (p.act == 2u) v = min(max(v, vec4(p.act_min)), vec4(p.act_max));
  const int dst = int(z) * p.c_bs + int(m) * p.c_rs + int(n);
  if ((p.flags & FLAG_VEC_C) != 0u) {
    cm4[dst / 4] = v;
    return;
  }
  [[unroll]] for (int e = 0; e < 4; ++e) {
    if (n + uint(e) < p.N) cm[dst + e] = v[e];
  }
}
#endif

void main() {
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
#ifdef SPLIT_K
  // The partial-sum slot is gl_WorkGroupID.z itself read as (split, group): z = split * G + g.
  const uint groups = gl_NumWorkGroups.z / p.splits;
  const uint z = gl_WorkGroupID.z % groups;
  const uint k_begin = gl_WorkGroupID.z / groups * p.k_split;
  k_lim = min(p.K, k_begin + p.k_split);
#else
  const uint z = gl_WorkGroupID.z;
  const uint k_begin = 0u;
  k_lim = p.K;
#endif

#ifdef CONV
  const int a_base = int(z * p.a_group);
  // Each thread gathers B column n0 + tid % BN, rows tid / BN + j * (256 / BN): its image and
  // window origin are fixed for the whole K loop.
  const uint gn = tid % BN, gk = tid / BN;
  const uint n_col = n0 + gn;
  const bool n_ok = n_col < p.N;
  const uint img = n_ok ? n_col / p.P : 0u;
  const uint pix = n_ok ? n_col - img * p.P : 0u;
  const int ih0 = int(pix / p.OW) * p.sh - p.ph, iw0 = int(pix % p.OW) * p.sw - p.pw;
  const int pix_base = int(z * p.in_group + img * p.in_img) + ih0 * int(p.W) + iw0;
  float rb[B_GATHERS];
#else
  const uint zo = z / p.batch1, zi = z % p.batch1;
  const int a_base = int(zo) * p.a_bs0 + int(zi) * p.a_bs1;
  const int b_base = int(zo) * p.b_bs0 + int(zi) * p.b_bs1;
  vec4 rb[B_VECS];
#endif
  vec4 ra[A_VECS];

  vec4 acc[TM][RN];
  [[unroll]] for (int i = 0; i < TM; ++i)
    [[unroll]] for (int j = 0; j < RN; ++j) acc[i][j] = vec4(0.0);

  // Global memory -> registers for the K step starting at k0.
#ifdef CONV
#define LOAD_B(k0)                                                                        \
  [[unroll]] for (int j = 0; j < B_GATHERS; ++j) {                                        \
    const uint k = (k0) + gk + uint(j) * (256u / BN);                                     \
    float v = 0.0;                                                                        \
    if (n_ok && k < k_lim) {                                                              \
      const ivec2 t = ktab[k];                                                            \
      const int ih = ih0 + (t.y >> 16), iw = iw0 + (t.y & 0xffff);                        \
      if (uint(ih) < p.H && uint(iw) < p.W) v = b[pix_base + t.x];                        \
    }                                                                                     \
    rb[j] = v;                                                                            \
  }
#define STORE_B(buf)                                                                      \
  [[unroll]] for (int j = 0; j < B_GATHERS; ++j) {                                        \
    const uint k = gk + uint(j) * (256u / BN);                                            \
    Bs[buf][k][gn / 4u][gn % 4u] = rb[j];                                                 \
  }
#else
#define LOAD_B(k0)                                                                        \
  [[unroll]] for (int v = 0; v < B_VECS; ++v) {                                           \
    rb[v] = load_b(b_base, (k0) + b_row(v), n0 + b_col(v));                               \
  }
#define STORE_B(buf)                                                                      \
  [[unroll]] for (int v = 0; v < B_VECS; ++v) Bs[buf][b_row(v)][b_col(v) / 4u] = rb[v];
#endif
#define LOAD_A(k0)                                                                        \
  [[unroll]] for (int v = 0; v < A_VECS; ++v) {                                           \
    ra[v] = load_a(a_base, m0 + a_row(v), (k0) + a_col(v));                               \
  }
#define STORE_A(buf)                                                                      \
  [[unroll]] for (int v = 0; v < A_VECS; ++v) {                                           \
    const uint r = a_row(v), kc = a_col(v);                                               \
    [[unroll]] for (int c = 0; c < 4; ++c) As[buf][kc + uint(c)][r / 4u][r % 4u] = ra[v][c]; \
  }

  const uint steps = (k_lim - k_begin + BK - 1u) / BK;
  LOAD_A(k_begin)
  LOAD_B(k_begin)
  STORE_A(0)
  STORE_B(0)
  barrier();
  for (uint s = 0u; s < steps; ++s) {
    const uint cur = s & 1u;
    const bool more = s + 1u < steps;
    if (more) {
      LOAD_A(k_begin + (s + 1u) * BK)
      LOAD_B(k_begin + (s + 1u) * BK)
    }
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      vec4 va[RM], vb[RN];
      [[unroll]] for (int r = 0; r < RM; ++r) va[r] = As[cur][kk][ty + uint(r) * 16u];
      [[unroll]] for (int j = 0; j < RN; ++j) vb[j] = Bs[cur][kk][tx + uint(j) * 16u];
      [[unroll]] for (int r = 0; r < RM; ++r)
        [[unroll]] for (int c = 0; c < 4; ++c)
          [[unroll]] for (int j = 0; j < RN; ++j) acc[r * 4 + c][j] += va[r][c] * vb[j];
    }
    if (more) {
      STORE_A(cur ^ 1u)
      STORE_B(cur ^ 1u)
    }
    barrier();
  }

  // Epilogue: bias, activation, store (vec4 when the host says C rows are aligned). No early
  // exits: the loops must unroll so that acc is only ever indexed by constants.
  [[unroll]] for (int r = 0; r < RM; ++r) {
    [[unroll]] for (int c = 0; c < 4; ++c) {
      [[unroll]] for (int j = 0; j < RN; ++j) {
        const uint m = m0 + uint(r) * 64u + ty * 4u + uint(c);
        const uint n = n0 + uint(j) * 64u + tx * 4u;
        if (m < p.M && n < p.N) store_tile(acc[r * 4 + c][j], m, n, gl_WorkGroupID.z);
      }
    }
  }
}
