// Calibrating and quantizing a model with an If: its tensors in the main graph are calibrated
// (the If's output like any other), nothing inside its branches is observed or quantized, and
// the quantized model keeps the branches byte for byte (docs/QUANTIZED_OPS.md).
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "calib_test_util.h"
#include "ptq/calibration.h"
#include "ptq/ir/builders.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using testing::TempDir;

ir::ValueInfo value(std::string name, ir::DType dtype,
                    std::optional<std::vector<ir::Dim>> dims) {
  return ir::ValueInfo{std::move(name), ir::TypeInfo{dtype, std::move(dims), {}}, {}};
}

std::vector<ir::Dim> batch_by_4() { return {ir::Dim::symbol("N"), ir::Dim::of(4)}; }

// A branch reading h from the main graph: op(h) -> name.
ir::Graph branch(const std::string& op, const std::string& out) {
  ir::Graph g;
  g.name = out;
  g.nodes.push_back(ir::make_node(op, out + "_node", {"h"}, {out}));
  g.outputs.push_back(value(out, ir::DType::kFloat32, std::nullopt));
  return g;
}

//   x[N,4] -> MatMul(W) -> h -> ReduceSum -> s -> Greater(0) -> positive
//                          h -> If(positive) { then: Relu(h) / else: Neg(h) } -> y
ir::Model if_model() {
  ir::Model m;
  m.ir_version = 8;
  m.set_opset("", 13);
  m.graph.name = "if_model";
  m.graph.inputs = {value("x", ir::DType::kFloat32, batch_by_4())};
  m.graph.set_initializer("W", testing::random_tensor({4, 4}, 3));
  m.graph.set_initializer("zero", ir::make_tensor<float>({}, {0.0f}));
  m.graph.nodes.push_back(ir::make_node("MatMul", "project", {"x", "W"}, {"h"}));
  ir::Node sum = ir::make_node("ReduceSum", "total", {"h"}, {"s"});
  sum.attributes = {ir::int_attr("keepdims", 0)};
  m.graph.nodes.push_back(sum);
  m.graph.nodes.push_back(ir::make_node("Greater", "test", {"s", "zero"}, {"positive"}));
  ir::Node choose = ir::make_node("If", "choose", {"positive"}, {"y"});
  choose.attributes = {ir::graph_attr("then_branch", branch("Relu", "kept")),
                       ir::graph_attr("else_branch", branch("Neg", "flipped"))};
  m.graph.nodes.push_back(choose);
  m.graph.outputs = {value("y", ir::DType::kFloat32, batch_by_4())};
  return m;
}

Expected<calib::CalibrationTable> calibrate_if_model(const TempDir& dir, bool all_tensors) {
  ir::Model model = testing::save_and_load(if_model(), dir / "if.onnx");
  auto backend = runtime::make_cpu_backend();
  PTQ_ASSIGN_OR_RETURN(auto executor, runtime::Executor::create(model, *backend));
  const std::string npy = dir / "x.npy";
  PTQ_RETURN_IF_ERROR(data::save_npy(npy, testing::random_tensor({8, 4}, 5)));
  data::DatasetSpec spec;
  spec.sources.push_back({"", npy});
  spec.batch = 4;
  PTQ_ASSIGN_OR_RETURN(data::Dataset ds, data::Dataset::open(spec));
  PTQ_RETURN_IF_ERROR(ds.bind(model.graph));
  CalibrationOptions options;
  options.all_tensors = all_tensors;
  return calibrate(model, *executor, ds, options);
}

std::set<std::string> names(const calib::CalibrationTable& table) {
  std::set<std::string> out;
  for (const auto& [name, range] : table.tensors) out.insert(name);
  return out;
}

TEST(ControlFlowCalibration, MainGraphTensorsAreCalibratedNotTheBranches) {
  TempDir dir;
  auto all = calibrate_if_model(dir, true);
  ASSERT_TRUE(all.has_value()) << all.status().message();
  // The If's output is calibrated; 'kept' and 'flipped' (inside the branches) are not.
  EXPECT_EQ(names(*all), (std::set<std::string>{"h", "s", "x", "y"}));
  auto quantizable = calibrate_if_model(dir, false);
  ASSERT_TRUE(quantizable.has_value()) << quantizable.status().message();
  EXPECT_EQ(names(*quantizable), (std::set<std::string>{"x"}));
}

TEST(ControlFlowCalibration, QuantizingKeepsTheIfAndItsBranchesFloat) {
  TempDir dir;
  auto table = calibrate_if_model(dir, false);
  ASSERT_TRUE(table.has_value()) << table.status().message();
  ir::Model model = onnx::load_model(dir / "if.onnx").value();
  const std::string then_bytes = model.graph.nodes[3].attr("then_branch")->opaque;
  auto result = planner::quantize(model, *table, {});
  ASSERT_TRUE(result.has_value()) << result.status().message();
  EXPECT_EQ(result->quantized_nodes, (std::vector<std::string>{"project"}));
  ASSERT_EQ(result->float_nodes.size(), 1u);
  EXPECT_EQ(result->float_nodes[0].name, "choose");
  EXPECT_EQ(result->float_nodes[0].reason,
            "control flow: the node and its subgraphs stay float (docs/QUANTIZED_OPS.md)");
  const ir::Node* choose = nullptr;
  for (const ir::Node& n : model.graph.nodes) {
    if (n.op_type == "If") choose = &n;
  }
  ASSERT_NE(choose, nullptr);
  EXPECT_EQ(choose->attr("then_branch")->opaque, then_bytes);
  // Still valid ONNX after a round trip through the writer, and it runs.
  ir::Model written = testing::save_and_load(model, dir / "if_int8.onnx");
  const Status checked = onnx::check_model(written);
  EXPECT_TRUE(checked.is_ok()) << checked.message();
  auto backend = runtime::make_cpu_backend();
  auto executor = runtime::Executor::create(written, *backend);
  ASSERT_TRUE(executor.has_value()) << executor.status().message();
  auto out = (*executor)->run({{"x", testing::random_tensor({2, 4}, 9)}});
  ASSERT_TRUE(out.has_value()) << out.status().message();
  EXPECT_EQ((*out)[0].second.shape(), (ir::Shape{2, 4}));
}

}  // namespace
}  // namespace ptq::calibration
