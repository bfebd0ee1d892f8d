// report::clipping_warnings: a symmetric activation Q whose range clips over 1 % of the
// calibration values is reported with the nodes reading it; others are not.
#include <gtest/gtest.h>

#include "qdq_builder.h"

namespace ptq::report::testing {
namespace {

// |x| histogram over [0, 4]: `low` values in bin 0, `high` in the last bin (above amax 1).
calib::TensorRange range_with(uint64_t low, uint64_t high) {
  calib::TensorRange r;
  r.amax = 1.0;
  r.hist_max = 4.0;
  r.histogram.assign(2048, 0);
  r.histogram[0] = low;
  r.histogram[2047] = high;
  return r;
}

// a ─► Q/DQ (amax 1) ─► Relu relu_a        b ─► Q/DQ (amax 1) ─► Relu relu_b
// c ─► Q/DQ (uint8, zero point 128) ─► Relu relu_c
TEST(Clipping, WarnsOfRangesThatClipOverOnePercent) {
  QdqBuilder b;
  for (const char* x : {"a", "b", "c"}) b.input(x, {1, 4});
  b.node("Relu", "relu_a", {b.qdq("a", 1.0f / 127.0f)}, {"ya"});
  b.node("Relu", "relu_b", {b.qdq("b", 1.0f / 127.0f)}, {"yb"});
  b.node("Relu", "relu_c", {b.qdq("c", 1.0f / 127.0f, 128, ir::DType::kUInt8)}, {"yc"});
  calib::CalibrationTable table;
  table.method = "entropy";
  table.tensors["a"] = range_with(90, 10);   // 10 % above amax
  table.tensors["b"] = range_with(995, 5);   // 0.5 %
  table.tensors["c"] = range_with(50, 50);   // asymmetric: not a |x| range
  const std::vector<std::string> w = clipping_warnings(b.model, table);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "the range of 'a' (amax 1, max |x| 4, entropy calibration) clips 10.0% of its values, "
            "so a spike in the data (e.g. a constant background) decided it; relu_a read it "
            "quantized and may lose accuracy (--exclude them, or use --method percentile or "
            "minmax)");
  table.tensors["a"].histogram.clear();  // no histogram: nothing to tell
  EXPECT_TRUE(clipping_warnings(b.model, table).empty());
}

}  // namespace
}  // namespace ptq::report::testing
