#version 450
// LayerNormalization over rows of length R: y = (x - mean) / sqrt(var + eps) * scale + bias,
// one workgroup per row; the variance is the mean squared deviation (two passes over the row).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer S { float scale[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint rows, R;
  float eps;
  uint has_bias;
  uint scale_len, bias_len;  // broadcast over the row: index i % len
} p;

shared float s_part[256];

float row_sum(float v) {
  uint t = gl_LocalInvocationID.x;
  s_part[t] = v;
  barrier();
  for (uint s = 128u; s > 0u; s >>= 1) {
    if (t < s) s_part[t] += s_part[t + s];
    barrier();
  }
  float r = s_part[0];
  barrier();
  return r;
}

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.R;
    float s = 0.0;
    for (uint i = t; i < p.R; i += 256u) s += x[base + i];
    float mean = row_sum(s) / float(p.R);
    float q = 0.0;
    for (uint i = t; i < p.R; i += 256u) {
      float d = x[base + i] - mean;
      q += d * d;
    }
    float rstd = 1.0 / sqrt(row_sum(q) / float(p.R) + p.eps);
    for (uint i = t; i < p.R; i += 256u) {
      float v = (x[base + i] - mean) * rstd * scale[i % p.scale_len];
      if (p.has_bias != 0u) v += bias[i % p.bias_len];
      y[base + i] = v;
    }
  }
}
