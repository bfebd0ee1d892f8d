// qdq_to_table(): the activation ranges a Q/DQ model encodes, as a calibration table.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ptq/report.h"
#include "qdq_view.h"

namespace ptq::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The range one activation QuantizeLinear encodes.
Expected<calib::TensorRange> range_of(const QdqView& v, size_t q) {
  const ir::Node& node = v.node(q);
  const ir::Tensor* scale = v.scale_of(q);
  if (!scale || scale->size() != 1) {
    return invalid_input("{} '{}' has no per-tensor constant scale", node.op_type, v.node_name(q));
  }
  const double s = scale->as_double(0);
  if (!std::isfinite(s) || s <= 0.0) {
    return invalid_input("{} '{}' has scale {} (must be positive and finite)", node.op_type,
                         v.node_name(q), s);
  }
  const ir::Tensor* zp = v.zero_point_of(q);
  // No zero point means uint8 with zero point 0 (ONNX's default).
  const ir::DType type = zp ? zp->dtype() : ir::DType::kUInt8;
  const double z = zp && zp->size() > 0 ? zp->as_double(0) : 0.0;
  calib::TensorRange r;
  double lo = 0.0, hi = 0.0;
  switch (type) {
    case ir::DType::kInt8:
      lo = -128;
      hi = 127;
      break;
    case ir::DType::kUInt8:
      lo = 0;
      hi = 255;
      break;
    case ir::DType::kInt16:
      lo = -32768;
      hi = 32767;
      break;
    case ir::DType::kUInt16:
      lo = 0;
      hi = 65535;
      break;
    default:
      return invalid_input("{} '{}' has a {} zero point (int8/uint8/int16/uint16 expected)",
                           node.op_type, v.node_name(q), ir::dtype_name(type));
  }
  if (type == ir::DType::kInt8 && z == 0.0) {
    r.amax = s * 127.0;  // symmetric: the one range TensorRT caches describe
    r.min = r.max = kNaN;
  } else if (type == ir::DType::kInt16 && z == 0.0) {
    r.amax = s * 32767.0;
    r.min = r.max = kNaN;
  } else {
    r.min = (lo - z) * s;
    r.max = (hi - z) * s;
    r.amax = std::max(std::abs(r.min), std::abs(r.max));
  }
  return r;
}

}  // namespace

Expected<calib::CalibrationTable> qdq_to_table(const ir::Model& model,
                                               std::vector<std::string>* warnings) {
  const QdqView v(model);
  calib::CalibrationTable table;
  table.method = "qdq";
  table.provenance["source"] = "qdq-model";
  if (!model.producer_name.empty()) table.provenance["producer"] = model.producer_name;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (!is_q(node)) continue;
    const std::string& x = node.input(0);
    if (x.empty() || v.is_weight_like(x)) continue;  // weights keep their own scales
    PTQ_ASSIGN_OR_RETURN(calib::TensorRange r, range_of(v, n));
    auto [it, fresh] = table.tensors.emplace(x, r);
    if (fresh) continue;
    calib::TensorRange& old = it->second;
    if (std::abs(old.amax - r.amax) > 1e-6 * std::max(old.amax, r.amax) && warnings) {
      warnings->push_back(
          fmt::format("tensor '{}' is quantized with two ranges (amax {} and {}); "
                      "keeping the wider",
                      x, old.amax, r.amax));
    }
    if (r.amax > old.amax) old = r;
  }
  if (table.tensors.empty()) {
    return invalid_input("model has no QuantizeLinear on an activation: nothing to extract");
  }
  return table;
}

}  // namespace ptq::report
