// estimated_cost() (src/sensitivity/cost.h), which balances a sweep's workers: multiply-adds of
// the weighted nodes and one per output element of the others, per sample.
#include <gtest/gtest.h>

#include "cost.h"
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

TEST(EstimatedCost, UnknownShapesCountOneElement) {
  const ir::Model m = small_model();
  // Without the types, y, r and z have no shape: one element each, the conv's per-element cost
  // still read from its weights, the MatMul's K from B.
  EXPECT_DOUBLE_EQ(estimated_cost(m, ir::Graph{}), 16.0 * 3 * 3 + 1.0 + 64.0);
}

}  // namespace
}  // namespace ptq::sensitivity
