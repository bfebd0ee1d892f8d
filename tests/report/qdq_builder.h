// Q/DQ graphs built by hand for the report tests: the planner tests' Builder plus Q/DQ pieces.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "planner/builder.h"
#include "ptq/lint.h"
#include "ptq/report.h"

namespace ptq::report::testing {

class QdqBuilder : public planner::testing::Builder {
 public:
  // x -> QuantizeLinear -> DequantizeLinear; returns the DQ output ("<x>_dq").
  std::string qdq(const std::string& x, float scale = 0.02f, int zp = 0,
                  ir::DType zp_type = ir::DType::kInt8) {
    g().set_initializer(x + "_s", ir::make_tensor<float>({}, {scale}));
    ir::Tensor z(zp_type, {});
    if (zp_type == ir::DType::kUInt8) {
      z.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
    } else {
      z.data<int8_t>()[0] = static_cast<int8_t>(zp);
    }
    g().set_initializer(x + "_z", std::move(z));
    node("QuantizeLinear", x + "_Q", {x, x + "_s", x + "_z"}, {x + "_q"});
    node("DequantizeLinear", x + "_DQ", {x + "_q", x + "_s", x + "_z"}, {x + "_dq"});
    return x + "_dq";
  }

  // A random int8 weight of `shape` behind a DequantizeLinear, per channel along `axis` (-1:
  // per-tensor); `write_axis` false leaves the attribute out. Returns the DQ output.
  std::string qweight(const std::string& name, ir::Shape shape, int64_t axis = 0,
                      bool write_axis = true) {
    ir::Tensor w = random_tensor(shape, 40.0f);
    ir::Tensor q(ir::DType::kInt8, shape);
    for (int64_t i = 0; i < w.size(); ++i) {
      q.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(w.data<float>()[i], -127.0f, 127.0f));
    }
    g().set_initializer(name + "_int8", std::move(q));
    const int64_t channels = axis >= 0 ? shape[static_cast<size_t>(axis)] : 1;
    std::vector<float> scales(static_cast<size_t>(channels), 0.01f);
    for (size_t c = 0; c < scales.size(); ++c) scales[c] += 0.001f * static_cast<float>(c);
    g().set_initializer(name + "_s", axis >= 0 ? ir::make_tensor<float>({channels}, scales)
                                               : ir::make_tensor<float>({}, {scales[0]}));
    g().set_initializer(name + "_z", axis >= 0 ? ir::Tensor(ir::DType::kInt8, {channels})
                                               : ir::Tensor(ir::DType::kInt8, {}));
    ir::Node& dq = node("DequantizeLinear", name + "_DQ",
                        {name + "_int8", name + "_s", name + "_z"}, {name + "_dq"});
    if (axis >= 0 && write_axis) set_int(dq, "axis", axis);
    return name + "_dq";
  }

  // Conv over `x` with weight value `w` (any form) and a float bias of `cout`; 3x3, same size.
  ir::Node& conv_with(const std::string& name, const std::string& x, const std::string& w,
                      const std::string& y, int64_t cout) {
    ir::Node& n = node("Conv", name, {x, w, weight(name + ".bias", {cout}, 0.1f)}, {y});
    set_ints(n, "pads", {1, 1, 1, 1});
    return n;
  }
};

// The set of rule ids among the findings.
inline std::set<std::string> rules_of(const std::vector<Finding>& findings) {
  std::set<std::string> out;
  for (const Finding& f : findings) out.insert(f.rule);
  return out;
}

inline std::string describe(const std::vector<Finding>& findings) {
  return findings_text(findings);
}

}  // namespace ptq::report::testing
