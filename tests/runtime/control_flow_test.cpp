// If, Loop and Scan: subgraphs reading values of the graph around them, built in code, written
// by the writer and read back (the graph attributes' bytes survive a second round trip), run
// against values computed by hand; and the errors of a body that does not fit its node.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/files.h"
#include "ptq/ir/builders.h"
#include "ptq/ir/subgraph.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq {
namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;

// A value of fixed dims (the checker wants every graph's inputs and outputs shaped).
ir::ValueInfo value(std::string name, ir::DType dtype, std::vector<int64_t> dims = {2}) {
  std::vector<ir::Dim> shape;
  for (int64_t d : dims) shape.push_back(ir::Dim::of(d));
  return ir::ValueInfo{std::move(name), ir::TypeInfo{dtype, std::move(shape), {}}, {}};
}

// then: x + w, else: x * w (both read x and w from the main graph).
ir::Graph branch(const char* op, const char* out) {
  ir::Graph g;
  g.name = out;
  g.nodes.push_back(ir::make_node(op, std::string(out) + "_node", {"x", "w"}, {out}));
  g.outputs.push_back(value(out, ir::DType::kFloat32));
  return g;
}

// (i, c, acc) -> (c, acc + x, acc + x): adds x (from the main graph) per iteration and stacks
// the running sums.
ir::Graph loop_body() {
  ir::Graph g;
  g.name = "body";
  g.inputs = {value("i", ir::DType::kInt64, {}), value("c", ir::DType::kBool, {}),
              value("acc", ir::DType::kFloat32)};
  g.nodes.push_back(ir::make_node("Identity", "keep_going", {"c"}, {"c_out"}));
  g.nodes.push_back(ir::make_node("Add", "accumulate", {"acc", "x"}, {"acc_out"}));
  g.nodes.push_back(ir::make_node("Identity", "record", {"acc_out"}, {"scan_out"}));
  g.outputs = {value("c_out", ir::DType::kBool, {}), value("acc_out", ir::DType::kFloat32),
               value("scan_out", ir::DType::kFloat32)};
  return g;
}

// x[2], flag (bool scalar) -> If(flag) -> y -> Loop(3 trips, y) -> (total, sums[3, 2]).
ir::Model if_loop_model(ir::Graph body = loop_body()) {
  ir::Model m;
  m.ir_version = 8;
  m.set_opset("", 13);
  m.graph.name = "if_loop";
  m.graph.inputs = {value("x", ir::DType::kFloat32), value("flag", ir::DType::kBool, {})};
  m.graph.set_initializer("w", ir::make_tensor<float>({2}, {10.0f, 20.0f}));
  m.graph.set_initializer("trips", ir::make_tensor<int64_t>({}, {3}));
  ir::Node choose = ir::make_node("If", "choose", {"flag"}, {"y"});
  choose.attributes = {ir::graph_attr("then_branch", branch("Add", "sum")),
                       ir::graph_attr("else_branch", branch("Mul", "product"))};
  ir::Node repeat = ir::make_node("Loop", "repeat", {"trips", "", "y"}, {"total", "sums"});
  repeat.attributes = {ir::graph_attr("body", std::move(body))};
  m.graph.nodes = {choose, repeat};
  m.graph.outputs = {value("total", ir::DType::kFloat32),
                     value("sums", ir::DType::kFloat32, {3, 2})};
  return m;
}

fs::path temp_path(const std::string& name) {
  return fs::path(::testing::TempDir()) / ("ptq_control_flow_" + name);
}

runtime::NamedTensors feed(bool flag) {
  return {{"x", ir::make_tensor<float>({2}, {1.0f, 2.0f})},
          {"flag", ir::make_tensor<bool>({}, {flag})}};
}

TEST(ControlFlow, IfAndLoopRoundTripThroughTheWriterAndRun) {
  const fs::path first = temp_path("first.onnx"), second = temp_path("second.onnx");
  ASSERT_TRUE(onnx::save_model(if_loop_model(), first).is_ok());
  auto loaded = onnx::load_model(first);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().message();
  const ir::Attribute* body = loaded->graph.nodes[1].attr("body");
  ASSERT_NE(body, nullptr);
  ASSERT_NE(body->g, nullptr);
  EXPECT_EQ(body->g->nodes.size(), 3u);
  EXPECT_FALSE(body->opaque.empty());
  // Read back, the attributes are written from their bytes: a second round trip is exact.
  ASSERT_TRUE(onnx::save_model(*loaded, second).is_ok());
  EXPECT_EQ(read_file(first), read_file(second));
  const Status checked = onnx::check_model(*loaded);
  EXPECT_TRUE(checked.is_ok()) << checked.message();

  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(*loaded, *backend);
  ASSERT_TRUE(exec.has_value()) << exec.status().message();
  for (bool flag : {true, false}) {
    auto out = (*exec)->run(feed(flag));
    ASSERT_TRUE(out.has_value()) << out.status().message();
    // y = x + w = [11, 22] or x * w = [10, 40]; then three times + x.
    const std::vector<float> y = flag ? std::vector<float>{11, 22} : std::vector<float>{10, 40};
    const ir::Tensor& total = (*out)[0].second;
    const ir::Tensor& sums = (*out)[1].second;
    ASSERT_EQ(sums.shape(), (ir::Shape{3, 2}));
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(sums.data<float>()[2 * k], y[0] + 1.0f * (k + 1));
      EXPECT_EQ(sums.data<float>()[2 * k + 1], y[1] + 2.0f * (k + 1));
    }
    EXPECT_EQ(total.data<float>()[0], y[0] + 3.0f);
    EXPECT_EQ(total.data<float>()[1], y[1] + 6.0f);
  }
  fs::remove(first);
  fs::remove(second);
}

TEST(ControlFlow, ValuesSubgraphsReadCountAsTheirNodesInputs) {
  ir::Model m = if_loop_model();
  EXPECT_EQ(ir::outer_scope_values(m.graph.nodes[0]), (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(ir::outer_scope_values(m.graph.nodes[1]), (std::vector<std::string>{"x"}));
  // The Loop first in the file still runs after the If whose output it reads.
  std::swap(m.graph.nodes[0], m.graph.nodes[1]);
  auto order = ir::topological_order(m.graph);
  ASSERT_TRUE(order.has_value()) << order.status().message();
  EXPECT_EQ(*order, (std::vector<size_t>{1, 0}));
  // x is read by both nodes, through their subgraphs.
  EXPECT_EQ(ir::GraphIndex(m.graph).consumers("x"), (std::vector<size_t>{0, 1}));
}

TEST(ControlFlow, OpsInsideSubgraphsAreListedWhenUnsupported) {
  ir::Model m = if_loop_model();
  ir::Graph odd = branch("Add", "sum");
  odd.nodes[0].op_type = "NoSuchOp";
  m.graph.nodes[0].attributes[0] = ir::graph_attr("then_branch", std::move(odd));
  auto backend = runtime::make_cpu_backend();
  EXPECT_EQ(runtime::unsupported_ops(m, *backend), (std::vector<std::string>{"NoSuchOp"}));
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_FALSE(exec.has_value());
  EXPECT_EQ(exec.status().message(), "the cpu backend cannot run these ops of the model: NoSuchOp");
}

TEST(ControlFlow, LoopBodyWhoseOutputsDoNotFitIsRefused) {
  ir::Graph body = loop_body();
  body.outputs.pop_back();  // no scan output, but the Loop has one
  const ir::Model m = if_loop_model(std::move(body));
  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_FALSE(exec.has_value());
  EXPECT_EQ(
      exec.status().message(),
      "Loop node 'repeat': its body gives 2 outputs but the Loop's 2 outputs (1 loop-carried) "
      "need 3 (the condition, then those)");
}

TEST(ControlFlow, ScanOutputThatChangesShapeIsRefusedNamingIt) {
  ir::Graph body = loop_body();
  // The stacked value grows each iteration: acc_out's shape does not change, but a Concat does.
  body.nodes[2] = ir::make_node("Concat", "record", {"acc_out", "acc"}, {"scan_out"});
  body.nodes[2].attributes = {ir::int_attr("axis", 0)};
  body.nodes[1] = ir::make_node("Concat", "accumulate", {"acc", "x"}, {"acc_out"});
  body.nodes[1].attributes = {ir::int_attr("axis", 0)};
  const ir::Model m = if_loop_model(std::move(body));
  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_TRUE(exec.has_value()) << exec.status().message();
  auto out = (*exec)->run(feed(true));
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.status().message(),
            "Loop node 'repeat': scan output 'scan_out' is float32 [10] at iteration 1 but "
            "float32 [6] at iteration 0");
}

// Scan over axis 1 of x[2, 3], last column first, its scan output stacked on axis 1 in reverse:
// running sums of the columns from the right, back in the columns' order.
TEST(ControlFlow, ScanTakesItsAxesAndDirections) {
  ir::Graph body;
  body.name = "body";
  body.inputs = {value("s", ir::DType::kFloat32), value("column", ir::DType::kFloat32)};
  body.nodes.push_back(ir::make_node("Add", "add", {"s", "column"}, {"s_out"}));
  body.nodes.push_back(ir::make_node("Identity", "record", {"s_out"}, {"scan_out"}));
  body.outputs = {value("s_out", ir::DType::kFloat32), value("scan_out", ir::DType::kFloat32)};
  ir::Model m;
  m.set_opset("", 11);
  m.graph.inputs = {value("s0", ir::DType::kFloat32), value("x", ir::DType::kFloat32, {2, 3})};
  ir::Node scan = ir::make_node("Scan", "scan", {"s0", "x"}, {"s", "sums"});
  scan.attributes = {ir::graph_attr("body", std::move(body)), ir::int_attr("num_scan_inputs", 1),
                     ir::ints_attr("scan_input_axes", {1}),
                     ir::ints_attr("scan_input_directions", {1}),
                     ir::ints_attr("scan_output_axes", {1}),
                     ir::ints_attr("scan_output_directions", {1})};
  m.graph.nodes = {scan};
  m.graph.outputs = {value("s", ir::DType::kFloat32), value("sums", ir::DType::kFloat32, {2, 3})};
  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_TRUE(exec.has_value()) << exec.status().message();
  auto out = (*exec)->run({{"s0", ir::make_tensor<float>({2}, {0, 0})},
                           {"x", ir::make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(out.has_value()) << out.status().message();
  const ir::Tensor& final_sum = (*out)[0].second;
  const ir::Tensor& sums = (*out)[1].second;
  EXPECT_EQ(std::vector<float>(final_sum.span<float>().begin(), final_sum.span<float>().end()),
            (std::vector<float>{6, 15}));
  ASSERT_EQ(sums.shape(), (ir::Shape{2, 3}));
  EXPECT_EQ(std::vector<float>(sums.span<float>().begin(), sums.span<float>().end()),
            (std::vector<float>{6, 5, 3, 15, 11, 6}));
}

}  // namespace
}  // namespace ptq
