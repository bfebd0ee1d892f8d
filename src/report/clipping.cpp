// Calibrated ranges that clip much of their tensor's values: the spike snag of
// specs/quantization.md, reported after quantizing (see report.h).
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ptq/metrics.h"
#include "ptq/report.h"

namespace ptq::report {

namespace {

// A calibrated range that clips more than this fraction of a tensor's values is reported.
// Well-calibrated activations clip under 0.1 %; a spike (specs/quantization.md, "Known snags")
// makes entropy calibration clip several percent (the example's stem output: ~10 %).
constexpr double kClipWarning = 0.01;

}  // namespace

std::vector<std::string> clipping_warnings(const ir::Model& q,
                                           const calib::CalibrationTable& table) {
  std::vector<std::string> out;
  const ir::GraphIndex index(q.graph);
  for (const ir::Node& n : q.graph.nodes) {
    if (n.op_type != "QuantizeLinear" || n.inputs.size() < 2) continue;
    const calib::TensorRange* r = table.find(n.inputs[0]);
    const ir::Tensor* scale = q.graph.initializer(n.inputs[1]);
    if (r == nullptr || scale == nullptr || scale->size() != 1) continue;
    const ir::Tensor* zp = n.inputs.size() > 2 ? q.graph.initializer(n.inputs[2]) : nullptr;
    if (zp != nullptr && zp->as_int64(0) != 0) continue;  // asymmetric: not a |x| range
    const double amax = scale->as_double(0) * 127.0;
    const std::optional<double> clipped = metrics::clipped_fraction(*r, amax);
    if (!clipped || *clipped <= kClipWarning) continue;
    std::vector<std::string> readers;
    for (size_t dq : index.consumers(n.outputs[0])) {
      for (size_t c : index.consumers(q.graph.nodes[dq].outputs[0])) {
        readers.push_back(q.graph.nodes[c].name);
      }
    }
    out.push_back(fmt::format(
        "the range of '{}' (amax {:.4g}, max |x| {:.4g}, {} calibration) clips {:.1f}% of its "
        "values, so a spike in the data (e.g. a constant background) decided it; {} read it "
        "quantized and may lose accuracy (--exclude them, or use --method percentile or minmax)",
        n.inputs[0], amax, r->hist_max, table.method, 100.0 * *clipped, fmt::join(readers, ", ")));
  }
  return out;
}


}  // namespace ptq::report
