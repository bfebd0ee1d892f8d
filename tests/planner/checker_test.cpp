// Every model the planner writes passes onnx::checker (full check with shape inference).
#include "builder.h"
#include "ptq/onnx.h"

namespace ptq::planner::testing {
namespace {

void expect_valid(ir::Model& m, const calib::CalibrationTable& t, const PlanOptions& o) {
  quantize_ok(m, t, o);
  const Status s = onnx::check_model(m);
  EXPECT_TRUE(s.is_ok()) << s.message();
}

TEST(Checker, QuantizedModelsPassTheOnnxChecker) {
  for (Target target : {Target::kTensorRT, Target::kOrt}) {
    SCOPED_TRACE(std::string(target_name(target)));
    PlanOptions o;
    o.target = target;
    Builder a = resnet_block();
    expect_valid(a.model, a.table(), o);
    Builder b = chain();
    expect_valid(b.model, b.table(), o);
  }
  PlanOptions f;
  f.weights_float = true;
  f.per_tensor_weights = true;
  Builder c = resnet_block();
  expect_valid(c.model, c.table(), f);
  PlanOptions u;
  u.target = Target::kOrt;
  u.activation_type = ActivationType::kUInt8;
  Builder d = chain();
  expect_valid(d.model, d.table(), u);
}

}  // namespace
}  // namespace ptq::planner::testing
