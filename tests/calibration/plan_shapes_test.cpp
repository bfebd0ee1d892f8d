// calibration::resolve_plan_shapes and fed_shapes: the input shapes the planner decides with,
// merged from their sources in order, bound only where a decision needs them.
#include <gtest/gtest.h>

#include "calib_test_util.h"
#include "planner/builder.h"
#include "ptq/calibration.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using planner::testing::Builder;
using testing::TempDir;

// x [1, seq, 16] (seq symbolic) ─► proj (MatMul W[16, 8]) ─► y: whether proj is a
// matrix-vector MatMul (M = seq = 1) depends on seq.
Builder projection() {
  Builder b;
  b.input_dims("x", {ir::Dim::of(1), ir::Dim::symbol("seq"), ir::Dim::of(16)});
  b.node("MatMul", "proj", {"x", b.weight("W", {16, 8})}, {"y"});
  b.output("y");
  return b;
}

Status resolve(const ir::Model& m, const std::vector<ShapeSource>& sources,
               planner::PlanOptions& plan) {
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  return resolve_plan_shapes(m, sources, *cpu, 1, plan);
}

TEST(PlanShapes, BindsTheSourcesWhereADecisionNeedsADim) {
  Builder b = projection();
  planner::PlanOptions plan;
  ASSERT_TRUE(resolve(b.model, {{"--data", {{"x", {1, 8, 16}}}}}, plan).is_ok());
  EXPECT_TRUE(plan.require_shapes);
  EXPECT_EQ(plan.value_dims.at("x"),
            (std::vector<ir::Dim>{ir::Dim::of(1), ir::Dim::of(8), ir::Dim::of(16)}));
  auto open = planner::unresolved_dims(b.model, plan);
  ASSERT_TRUE(open.has_value()) << open.status().message();
  EXPECT_TRUE(open->empty());
}

TEST(PlanShapes, WithoutShapesTheDimStaysOpen) {
  Builder b = projection();
  planner::PlanOptions plan;
  ASSERT_TRUE(resolve(b.model, {}, plan).is_ok());
  EXPECT_TRUE(plan.value_dims.empty());
  auto open = planner::unresolved_dims(b.model, plan);
  ASSERT_TRUE(open.has_value()) << open.status().message();
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ(open->front().symbol, "seq");
}

TEST(PlanShapes, ALaterSourceFillsOnlyOpenDims) {
  Builder b = projection();
  planner::PlanOptions plan;
  ASSERT_TRUE(resolve(b.model, {{"the cache c.json", {{"x", {1, -1, 16}}}},
                                {"--input-shape", {{"x", {1, 4, 16}}}}},
                      plan)
                  .is_ok());
  EXPECT_EQ(plan.value_dims.at("x")[1], ir::Dim::of(4));

  planner::PlanOptions clash;
  const Status s = resolve(b.model, {{"--data", {{"x", {1, 8, 16}}}},
                                     {"--input-shape", {{"x", {1, 4, 16}}}}},
                           clash);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "input 'x': --input-shape gives shape 1,4,16 but --data gave 1,8,16");
}

TEST(PlanShapes, ANameThatIsNoInputIsAnErrorUnlessUnchecked) {
  Builder b = projection();
  planner::PlanOptions plan;
  const Status s = resolve(b.model, {{"--input-shape", {{"z", {1, 8, 16}}}}}, plan);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "--input-shape: 'z' is not an input of the model (inputs: x)");
  // A cache used with --force may record another graph's inputs: they are dropped.
  planner::PlanOptions forced;
  ASSERT_TRUE(resolve(b.model, {{"the cache c.json", {{"z", {1, 8, 16}}}, false}}, forced).is_ok());
  EXPECT_TRUE(forced.value_dims.empty());
}

TEST(PlanShapes, FedShapesAreAFullBatch) {
  TempDir dir;
  const ir::Model model = testing::save_and_load(testing::residual_model(), dir / "m.onnx");
  const std::string npy = dir / "x.npy";
  ASSERT_TRUE(data::save_npy(npy, testing::residual_samples(10, 1)).is_ok());
  for (const auto& [batch, fed] : {std::pair<int64_t, int64_t>{4, 4}, {16, 10}}) {
    data::DatasetSpec spec;
    spec.sources.push_back({"", npy});
    spec.batch = batch;
    auto ds = data::Dataset::open(spec);
    ASSERT_TRUE(ds.has_value()) << ds.status().message();
    ASSERT_TRUE(ds->bind(model.graph).is_ok());
    EXPECT_EQ(fed_shapes(*ds), (onnx::InputShapes{{"x", {fed, 16, 4, 4}}})) << batch;
  }
}

}  // namespace
}  // namespace ptq::calibration
