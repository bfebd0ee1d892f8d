// estimated_cost() (src/sensitivity/cost.h), which balances a sweep's workers: multiply-adds of
// the weighted nodes and one per output element of the others, per sample.
#include <gtest/gtest.h>

#include <random>

#include "cost.h"
#include "outlier_model.h"
#include "ptq/ir/builders.h"

namespace ptq::sensitivity {
namespace {

ir::ValueInfo value(std::string name, std::vector<ir::Dim> dims) {
  ir::ValueInfo v;
  v.name = std::move(name);
  v.type.dtype = ir::DType::kFloat32;
  v.type.dims = std::move(dims);
  return v;
}

const ir::Dim kBatch = ir::Dim::symbol("N");

// Conv [N,16,8,8] -> [N,32,8,8] (3x3), Relu, then a MatMul [N,64] x [64,10] on another input.
ir::Model small_model() {
  ir::Model m;
  ir::Graph& g = m.graph;
  g.inputs = {value("x", {kBatch, ir::Dim::of(16), ir::Dim::of(8), ir::Dim::of(8)}),
              value("a", {kBatch, ir::Dim::of(64)})};
  g.set_initializer("w", ir::Tensor(ir::DType::kFloat32, {32, 16, 3, 3}));
  g.set_initializer("b", ir::Tensor(ir::DType::kFloat32, {64, 10}));
  g.nodes = {ir::make_node("Conv", "conv", {"x", "w"}, {"y"}),
             ir::make_node("Relu", "relu", {"y"}, {"r"}),
             ir::make_node("MatMul", "mm", {"a", "b"}, {"z"})};
  g.outputs = {value("r", {}), value("z", {})};
  g.outputs[0].type.dims.reset();  // rank unknown here: the types graph gives it
  g.outputs[1].type.dims.reset();
  return m;
}

TEST(EstimatedCost, CountsMultiplyAddsAndElements) {
  const ir::Model m = small_model();
  ir::Graph types;  // the shapes shape inference found, as a variant's graph holds them
  types.inferred = {value("y", {kBatch, ir::Dim::of(32), ir::Dim::of(8), ir::Dim::of(8)}),
                    value("r", {kBatch, ir::Dim::of(32), ir::Dim::of(8), ir::Dim::of(8)}),
                    value("z", {kBatch, ir::Dim::of(10)})};
  const double conv = 32.0 * 8 * 8 * (16 * 3 * 3), relu = 32.0 * 8 * 8, matmul = 10.0 * 64;
  EXPECT_DOUBLE_EQ(estimated_cost(m, types), conv + relu + matmul);
}

TEST(EstimatedCost, UnknownOutputsTakeTheirFirstInputsShape) {
  const ir::Model m = small_model();
  // Without the types, y, r and z have no declared shape: each takes its first input's (x's,
  // y's, a's), as a Q/DQ node a variant adds would; the conv's per-element cost still comes
  // from its weights, the MatMul's K from B.
  const double conv = 16.0 * 8 * 8 * (16 * 3 * 3), relu = 16.0 * 8 * 8, matmul = 64.0 * 64;
  EXPECT_DOUBLE_EQ(estimated_cost(m, ir::Graph{}), conv + relu + matmul);
}

TEST(EstimatedCost, UnknownRanksCountOneElement) {
  ir::Model m = small_model();
  for (ir::ValueInfo& v : m.graph.inputs) v.type.dims.reset();
  EXPECT_DOUBLE_EQ(estimated_cost(m, ir::Graph{}), 16.0 * 3 * 3 + 1.0 + 64.0);
}

TEST(EstimatedCost, ShapesSeenInARunComeBeforeDeclarations) {
  const ir::Model m = small_model();
  ir::Graph types;
  types.inferred = {value("y", {kBatch, ir::Dim::of(32), ir::Dim::of(8), ir::Dim::of(8)})};
  // A run at batch 4 saw y and z; r (not seen) takes y's seen shape.
  const SeenShapes seen = {{"y", {4, 32, 6, 6}}, {"z", {4, 10}}};
  const double conv = 4.0 * 32 * 6 * 6 * (16 * 3 * 3), relu = 4.0 * 32 * 6 * 6, matmul = 40.0 * 64;
  EXPECT_DOUBLE_EQ(estimated_cost(m, types, seen), conv + relu + matmul);
}

TEST(ShapeRecorder, RecordsEveryNodeOutputARunShows) {
  ir::Model m = small_model();
  m.set_opset("", 17);
  std::mt19937 gen(7);
  auto random = [&](ir::Shape shape) {
    return ptq::testing::normal_tensor(gen, std::move(shape), 1.0f);
  };
  m.graph.set_initializer("w", random({32, 16, 3, 3}));
  m.graph.set_initializer("b", random({64, 10}));
  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_TRUE(exec) << exec.status().message();
  ShapeRecorder recorder;
  runtime::Observer* observers[] = {&recorder};
  auto out = (*exec)->run({{"x", random({2, 16, 8, 8})}, {"a", random({2, 64})}}, observers);
  ASSERT_TRUE(out) << out.status().message();
  const SeenShapes seen = recorder.take();
  EXPECT_EQ(seen.size(), 3u);  // y, r and z; not the inputs or the weights
  EXPECT_EQ(seen.at("y"), (ir::Shape{2, 32, 6, 6}));  // 3x3, no padding
  EXPECT_EQ(seen.at("r"), (ir::Shape{2, 32, 6, 6}));
  EXPECT_EQ(seen.at("z"), (ir::Shape{2, 10}));
}

}  // namespace
}  // namespace ptq::sensitivity
