// The reference convolution: the truth the fast kernels are tested against.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "conv.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS::reference {

template <typename T>
void conv(const ConvParams& p, const T* x, const T* w, const T* b, T* y) {
  const size_t r = p.in.size();
  const int64_t cg = p.C / p.G, mg = p.M / p.G;
  const int64_t in_size = dims_product(p.in, 0, r), out_size = dims_product(p.out, 0, r);
  const int64_t k_size = dims_product(p.w.kernel, 0, r);
  std::vector<int64_t> o(r), k(r);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t m = 0; m < p.M; ++m) {
      const int64_t g = m / mg;
      for (int64_t oi = 0; oi < out_size; ++oi) {
        for (int64_t rem = oi, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
          o[d] = rem % p.out[d];
          rem /= p.out[d];
        }
        double acc = b != nullptr ? static_cast<double>(b[m]) : 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          const T* xc = x + (n * p.C + g * cg + c) * in_size;
          const T* wc = w + (m * cg + c) * k_size;
          for (int64_t ki = 0; ki < k_size; ++ki) {
            for (int64_t rem = ki, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
              k[d] = rem % p.w.kernel[d];
              rem /= p.w.kernel[d];
            }
            int64_t offset = 0;
            bool inside = true;
            for (size_t d = 0; d < r && inside; ++d) {
              const int64_t i = o[d] * p.w.strides[d] - p.w.pad_begin(d) + k[d] * p.w.dilations[d];
              inside = i >= 0 && i < p.in[d];
              offset = offset * p.in[d] + i;
            }
            if (inside) acc += static_cast<double>(xc[offset]) * static_cast<double>(wc[ki]);
          }
        }
        y[(n * p.M + m) * out_size + oi] = static_cast<T>(acc);
      }
    }
  }
}

template void conv<float>(const ConvParams&, const float*, const float*, const float*, float*);
template void conv<double>(const ConvParams&, const double*, const double*, const double*, double*);

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS::reference

#include "isa_end.h"
