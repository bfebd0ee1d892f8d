#version 450
// y = f(x) for the activations and unary math ops; alpha/beta are the op's attributes.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
  uint op;
  float alpha;
  float beta;
} p;

#define kNaN uintBitsToFloat(0x7fc00000u)

// erf with < 2e-7 absolute error: Taylor series near 0, Numerical Recipes' erfc elsewhere.
float erf_approx(float v) {
  float z = abs(v);
  if (z < 0.5) {
    float z2 = v * v;
    float series = 1.0 / 216.0 + z2 * (-1.0 / 1320.0);
    series = 0.1 + z2 * (-1.0 / 42.0 + z2 * series);
    return 1.1283791671 * v * (1.0 + z2 * (-1.0 / 3.0 + z2 * series));
  }
  float t = 1.0 / (1.0 + 0.5 * z);
  float e = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  float r = 1.0 - e;
  return v >= 0.0 ? r : -r;
}

float tanh_safe(float v) {
  float e = exp(-2.0 * abs(v));
  float r = (1.0 - e) / (1.0 + e);
  return v >= 0.0 ? r : -r;
}

float softplus(float v) { return v > 20.0 ? v : log(1.0 + exp(v)); }

float apply(float v) {
  switch (p.op) {
    case 0: return max(v, 0.0) + (isnan(v) ? v : 0.0);                 // Relu
    case 1: return 1.0 / (1.0 + exp(-v));                               // Sigmoid
    case 2: return tanh_safe(v);                                        // Tanh
    case 3: return exp(v);                                              // Exp
    case 4: return v < 0.0 ? kNaN : log(v);                             // Log
    case 5: return v < 0.0 ? kNaN : sqrt(v);                            // Sqrt
    case 6: return abs(v);                                              // Abs
    case 7: return -v;                                                  // Neg
    case 8: return erf_approx(v);                                       // Erf
    case 9: return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118));     // Gelu
    case 10: return 0.5 * v * (1.0 + tanh_safe(0.79788456080 * (v + 0.044715 * v * v * v)));
    case 11: return v < 0.0 ? p.alpha * v : v;                          // LeakyRelu
    case 12: return v < 0.0 ? p.alpha * (exp(v) - 1.0) : v;             // Elu
    case 13: return isnan(v) ? v : min(max(v, p.alpha), p.beta);        // Clip
    case 14: return clamp(p.alpha * v + p.beta, 0.0, 1.0);              // HardSigmoid
    case 15: return v * clamp(v / 6.0 + 0.5, 0.0, 1.0);                 // HardSwish
    case 16: return softplus(v);                                        // Softplus
    case 17: return 1.0 / v;                                            // Reciprocal
    case 18: return floor(v);                                           // Floor
    case 19: return ceil(v);                                            // Ceil
    case 20: return roundEven(v);                                       // Round
    case 21: return sin(v);                                             // Sin
    case 22: return cos(v);                                             // Cos
    case 23: return v * tanh_safe(softplus(v));                         // Mish
    case 24: return v > 0.0 ? p.beta * v : p.beta * p.alpha * (exp(v) - 1.0);  // Selu
    case 25: return max(0.0, v) + min(0.0, p.alpha * (exp(v / p.alpha) - 1.0)); // Celu
    case 26: return sign(v);                                            // Sign
    case 27: return v / (1.0 + abs(v));                                 // Softsign
    case 28: return v > p.alpha ? v : 0.0;                              // ThresholdedRelu
    case 29: return v;                                                  // Identity (copy)
    case 30: return v * p.alpha + p.beta;                               // affine (Mean)
    default: return 0.0;
  }
}

void main() {
  GRID_STRIDE(i, p.n) { y[i] = apply(x[i]); }
}
