// Weight ranges: per output channel (or per tensor) max |W_c|, or percentile / mse over the
// channel's own histogram. Weights are constants, so one pass suffices for each statistic.
#include <cmath>
#include <functional>

#include "ptq/calibrators.h"

namespace ptq::calib {

namespace {

Expected<std::function<double(int64_t)>> element_reader(const ir::Tensor& w,
                                                        std::string_view name) {
  switch (w.dtype()) {
    case ir::DType::kFloat32: {
      const float* p = w.data<float>();
      return std::function<double(int64_t)>([p](int64_t i) { return static_cast<double>(p[i]); });
    }
    case ir::DType::kFloat64: {
      const double* p = w.data<double>();
      return std::function<double(int64_t)>([p](int64_t i) { return p[i]; });
    }
    case ir::DType::kFloat16: {
      const uint16_t* p = w.data<uint16_t>();
      return std::function<double(int64_t)>(
          [p](int64_t i) { return static_cast<double>(ir::half_to_float(p[i])); });
    }
    case ir::DType::kBFloat16: {
      const uint16_t* p = w.data<uint16_t>();
      return std::function<double(int64_t)>(
          [p](int64_t i) { return static_cast<double>(ir::bfloat16_to_float(p[i])); });
    }
    default:
      return invalid_input("weight '{}' is {}: only float weights have ranges", name,
                           ir::dtype_name(w.dtype()));
  }
}

}  // namespace

Expected<std::vector<double>> weight_amax(const ir::Tensor& weight, std::optional<int64_t> axis,
                                          const MethodConfig& config, std::string_view name) {
  PTQ_RETURN_IF_ERROR(config.validate());
  if (!find_calibrator(config.name)->weights) {
    return usage_error("weight method must be {}, not '{}'", calibrator_choices(true), config.name);
  }
  PTQ_ASSIGN_OR_RETURN(auto at, element_reader(weight, name));
  // Element (o, c, i) lives at (o * channels + c) * inner + i.
  int64_t outer = 1, channels = 1, inner = weight.size();
  if (axis) {
    int64_t a = *axis < 0 ? *axis + weight.rank() : *axis;
    if (a < 0 || a >= weight.rank()) {
      return invalid_input("weight '{}': axis {} is out of range for rank {}", name, *axis,
                           weight.rank());
    }
    outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= weight.dim(d);
    channels = weight.dim(a);
    inner = 1;
    for (int64_t d = a + 1; d < weight.rank(); ++d) inner *= weight.dim(d);
  }
  std::vector<double> amax(static_cast<size_t>(channels), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t flat = (o * channels + c) * inner + i;
        const double v = at(flat);
        if (!std::isfinite(v)) {
          return invalid_input("weight '{}': non-finite value at element {}", name, flat);
        }
        amax[static_cast<size_t>(c)] = std::max(amax[static_cast<size_t>(c)], std::fabs(v));
      }
    }
  }
  if (config.name == "minmax") return amax;
  for (int64_t c = 0; c < channels; ++c) {
    const double T = amax[static_cast<size_t>(c)];
    HistogramCounts counts{};
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const double v = std::fabs(at((o * channels + c) * inner + i));
        ++counts[static_cast<size_t>(histogram_bin(v, T))];
      }
    }
    PTQ_ASSIGN_OR_RETURN(amax[static_cast<size_t>(c)],
                         compute_amax(HistogramView{T, counts}, config));
  }
  return amax;
}

}  // namespace ptq::calib
