// Planning with symbolic input dims: the matrix-vector MatMul test needs M and N. With
// require_shapes an unresolved one is an error naming the node, tensor, dim and the inputs to
// bind; onnx::bind_input_shapes() resolves them; a decision that does not depend on the dim
// needs nothing.
#include "builder.h"
#include "ptq/onnx.h"

namespace ptq::planner::testing {
namespace {

// A small attention block, x: [1, seq, 16] (seq symbolic), no intermediate shapes declared:
//
//   x ─► attn/q (MatMul Wq) ─► q ───────────────────┐
//   x ─► attn/k (MatMul Wk) ─► k ─► Transpose ─► kt ─┴► attn/scores ─► s ─► Softmax ─► p ─┐
//   x ─► attn/v (MatMul Wv) ─► v ──────────────────────────────────────────────────────────┴►
//      attn/ctx ─► o ─► attn/out (MatMul Wo) ─► y
Builder attention() {
  Builder b;
  b.input_dims("x", {ir::Dim::of(1), ir::Dim::symbol("seq"), ir::Dim::of(16)});
  for (const char* w : {"q", "k", "v"}) {
    b.node("MatMul", std::string("attn/") + w, {"x", b.weight(std::string("W") + w, {16, 16})},
           {w});
  }
  Builder::set_ints(b.node("Transpose", "attn/kt", {"k"}, {"kt"}), "perm", {0, 2, 1});
  b.node("MatMul", "attn/scores", {"q", "kt"}, {"s"});
  Builder::set_int(b.node("Softmax", "attn/softmax", {"s"}, {"p"}), "axis", -1);
  b.node("MatMul", "attn/ctx", {"p", "v"}, {"o"});
  b.node("MatMul", "attn/out", {"o", b.weight("Wo", {16, 16})}, {"y"});
  ir::ValueInfo y = b.g().inputs[0];  // x's type
  y.name = "y";
  b.g().outputs.push_back(y);
  return b;
}

const std::vector<std::string> kMatMuls = {"attn/q",      "attn/k",   "attn/v",
                                           "attn/scores", "attn/ctx", "attn/out"};

PlanOptions strict() {
  PlanOptions o;
  o.require_shapes = true;
  return o;
}

PlanOptions bound(const ir::Model& m, std::vector<int64_t> x_shape) {
  PlanOptions o = strict();
  auto dims = onnx::bind_input_shapes(m, {{"x", std::move(x_shape)}});
  EXPECT_TRUE(dims.has_value()) << dims.status().message();
  if (dims) o.value_dims = std::move(*dims);
  return o;
}

TEST(Shapes, SymbolicDimIsAnErrorNamingNodeTensorDimAndInput) {
  Builder b = attention();
  auto p = plan(b.model, b.table(), strict());
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(p.status().message(),
            "MatMul node 'attn/q': dim M of input 'x' is symbolic ('seq'); bind the input shapes "
            "(PlanOptions::value_dims): x=1,<seq>,16");
  // Without require_shapes the dim is taken as not 1, as before.
  auto loose = plan(b.model, b.table(), {});
  ASSERT_TRUE(loose.has_value()) << loose.status().message();
  for (const std::string& n : kMatMuls) EXPECT_TRUE(loose->node(n)->quantized) << n;
}

TEST(Shapes, BoundInputsResolveEveryMatMulAndLeaveTheModelSymbolic) {
  Builder b = attention();
  const PlanOptions o = bound(b.model, {1, 8, 16});
  EXPECT_EQ(o.value_dims.at("kt"),
            (std::vector<ir::Dim>{ir::Dim::of(1), ir::Dim::of(16), ir::Dim::of(8)}));
  auto q = quantize(b.model, b.table(), o);
  ASSERT_TRUE(q.has_value()) << q.status().message();
  for (const std::string& n : kMatMuls) {
    EXPECT_NE(dq_at(b.model, n, 0), nullptr) << n;
  }
  EXPECT_EQ((*b.model.graph.inputs[0].type.dims)[1], ir::Dim::symbol("seq"));
  EXPECT_TRUE(onnx::check_model(b.model).is_ok());
}

TEST(Shapes, SeqOfOneKeepsTheMatrixVectorMatMulsFloat) {
  Builder b = attention();
  auto p = plan(b.model, b.table(), bound(b.model, {1, 1, 16}));
  ASSERT_TRUE(p.has_value()) << p.status().message();
  for (const std::string& n : kMatMuls) {
    EXPECT_FALSE(p->node(n)->quantized) << n;
    EXPECT_NE(p->node(n)->reason.find("matrix-vector MatMul (M = 1)"), std::string::npos)
        << n << ": " << p->node(n)->reason;
  }
}

TEST(Shapes, OnlyDecisionsThatNeedTheDimFail) {
  Builder b = attention();
  PlanOptions o = strict();
  o.exclude_op_types = {"MatMul"};
  EXPECT_TRUE(plan(b.model, b.table(), o).has_value());
  o = strict();
  o.quantize_matrix_vector = true;
  EXPECT_TRUE(plan(b.model, b.table(), o).has_value());
  o = strict();
  o.exclude_nodes = {"attn/[qkv]"};
  auto p = plan(b.model, b.table(), o);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.status().message().find("'attn/scores': dim M of input 'q' is unknown"),
            std::string::npos)
      << p.status().message();
  // No calibrated range for x: the three MatMuls reading it stay float whatever M is.
  o.exclude_nodes = {"attn/scores", "attn/ctx", "attn/out"};
  auto no_range = plan(b.model, b.table({"x"}), o);
  ASSERT_TRUE(no_range.has_value()) << no_range.status().message();
  EXPECT_FALSE(no_range->node("attn/q")->quantized);
}

TEST(Shapes, ConstantVectorOperandNeedsNoShape) {
  //   x [<seq>, 16] ─► mv (MatMul, B = vector [16]) ─► y
  Builder b;
  b.g().inputs.push_back(ir::ValueInfo{
      "x",
      {ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("seq"), ir::Dim::of(16)}, {}},
      {}});
  b.node("MatMul", "mv", {"x", b.weight("w", {16})}, {"y"});
  b.output("y");
  auto p = plan(b.model, b.table(), strict());
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_FALSE(p->node("mv")->quantized);
}

TEST(Shapes, UnknownAfterBindingAsksForExclusionNotShapes) {
  Builder b = attention();
  PlanOptions o = strict();
  o.value_dims["x"] = {ir::Dim::of(1), ir::Dim::of(8), ir::Dim::of(16)};  // x only: q unknown
  auto open = unresolved_dims(b.model, o);
  ASSERT_TRUE(open.has_value());
  ASSERT_FALSE(open->empty());
  EXPECT_EQ(open->front().tensor, "q");
  EXPECT_EQ(open->front().dim, "M");
  auto p = plan(b.model, b.table(), o);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.status().message(),
            "MatMul node 'attn/scores': dim M of input 'q' is unknown although every input shape "
            "is known (shape inference cannot follow it); exclude the node or quantize "
            "matrix-vector MatMuls too");
}

TEST(Shapes, BindRejectsWhatTheModelContradicts) {
  Builder b = attention();
  auto unknown = onnx::bind_input_shapes(b.model, {{"z", {1, 8, 16}}});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.status().message(), "'z' is not an input of the model (inputs: x)");
  auto rank = onnx::bind_input_shapes(b.model, {{"x", {8, 16}}});
  ASSERT_FALSE(rank.has_value());
  EXPECT_NE(rank.status().message().find("input 'x' has rank 3"), std::string::npos);
  auto fixed = onnx::bind_input_shapes(b.model, {{"x", {2, 8, 16}}});
  ASSERT_FALSE(fixed.has_value());
  EXPECT_NE(fixed.status().message().find("differs in dim 0"), std::string::npos)
      << fixed.status().message();
  // -1 leaves a dim open.
  auto open = onnx::bind_input_shapes(b.model, {{"x", {-1, -1, 16}}});
  ASSERT_TRUE(open.has_value());
  EXPECT_EQ(open->at("x")[1], ir::Dim::symbol("seq"));
}

}  // namespace
}  // namespace ptq::planner::testing
