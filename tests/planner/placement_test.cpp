// Structural tests: Q/DQ counts and positions on small graphs (TensorRT target).
#include "builder.h"

namespace ptq::planner::testing {
namespace {

TEST(Placement, ResNetBasicBlock) {
  Builder b = resnet_block();
  const auto table = b.table();
  auto r = quantize_ok(b.model, table);
  const ir::Model& m = b.model;

  EXPECT_EQ(count_op(m, "QuantizeLinear"), 2);    // x, r1
  EXPECT_EQ(count_op(m, "DequantizeLinear"), 4);  // x, r1, conv1.weight, conv2.weight
  EXPECT_EQ(count_op(m, "BatchNormalization"), 0);
  EXPECT_EQ(r.folded_batchnorms, 2);
  EXPECT_EQ(quantized_source(m, "conv1", 0), "x");
  EXPECT_EQ(quantized_source(m, "conv2", 0), "r1");
  EXPECT_EQ(quantized_source(m, "add", 1), "x");  // the skip input
  EXPECT_EQ(dq_at(m, "add", 0), nullptr);         // the conv branch stays float for fusion
  EXPECT_EQ(find_node(m, "add")->inputs[0], "n2");  // conv2 now writes the BN's output
  EXPECT_EQ(producer_of(m, "n2")->name, "conv2");
  // One Q/DQ pair on x serves conv1 and the Add.
  EXPECT_EQ(dq_at(m, "conv1", 0), dq_at(m, "add", 1));
  EXPECT_EQ(find_node(m, "relu2")->inputs[0], "s");
  EXPECT_EQ(producer_of(m, "y")->op_type, "Relu");  // no output Q/DQ
  // Weights: int8 initializers, per output channel, axis written.
  for (const char* conv : {"conv1", "conv2"}) {
    const ir::Node* dq = dq_at(m, conv, 1);
    ASSERT_NE(dq, nullptr) << conv;
    EXPECT_EQ(dq->attr_int("axis", -1), 0);
    EXPECT_EQ(m.graph.initializer(dq->inputs[0])->dtype(), ir::DType::kInt8);
    EXPECT_EQ(m.graph.initializer(dq->inputs[1])->shape(), ir::Shape{16});
    EXPECT_EQ(m.graph.initializer(dq->inputs[2])->dtype(), ir::DType::kInt8);
    EXPECT_EQ(dq_at(m, conv, 2), nullptr);  // TensorRT: float bias
  }
  // Activation scale amax/127, zero point int8 0.
  const ir::Node* dqx = dq_at(m, "conv1", 0);
  EXPECT_FLOAT_EQ(scalar(m, dqx->inputs[1]), static_cast<float>(table.find("x")->amax / 127.0));
  EXPECT_EQ(m.graph.initializer(dqx->inputs[2])->dtype(), ir::DType::kInt8);
  EXPECT_EQ(scalar(m, dqx->inputs[2]), 0.0f);
  EXPECT_GE(m.opset(), 13);
  // The float weights and BN parameters are gone.
  EXPECT_EQ(m.graph.initializer("conv1.weight"), nullptr);
  EXPECT_EQ(m.graph.initializer("bn1.gamma"), nullptr);
  ASSERT_TRUE(ir::topological_order(m.graph).has_value());
}

//   x[1,32,8,8] ─► dw (3x3, group 32) ─► Clip(0,6) ─► pw (1x1, 32→64) ─► y
TEST(Placement, DepthwisePointwiseWithClip) {
  Builder b;
  b.input("x", {1, 32, 8, 8});
  b.conv("dw", "x", "d", 32, 32, 3, 32);
  b.g().set_initializer("lo", ir::make_tensor<float>({}, {0.0f}));
  b.g().set_initializer("hi", ir::make_tensor<float>({}, {6.0f}));
  b.node("Clip", "clip", {"d", "lo", "hi"}, {"c"});
  b.conv("pw", "c", "y", 32, 64, 1);
  b.output("y");
  quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "QuantizeLinear"), 2);
  EXPECT_EQ(count_op(m, "DequantizeLinear"), 4);
  EXPECT_EQ(quantized_source(m, "dw", 0), "x");
  EXPECT_EQ(quantized_source(m, "pw", 0), "c");
  EXPECT_EQ(find_node(m, "clip")->inputs, (std::vector<std::string>{"d", "lo", "hi"}));
  const ir::Node* dq = dq_at(m, "dw", 1);
  ASSERT_NE(dq, nullptr);
  EXPECT_EQ(m.graph.initializer(dq->inputs[1])->shape(), ir::Shape{32});
  EXPECT_EQ(dq->attr_int("axis", -1), 0);
}

//   x ─► convA ─► a ─┐
//                     Concat ─► c ─► convC ─► y
//   x ─► convB ─► b ─┘
TEST(Placement, ConcatSharesOneScale) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.conv("convA", "x", "a", 16, 16);
  b.conv("convB", "x", "b", 16, 16);
  ir::Node& cat = b.node("Concat", "cat", {"a", "b"}, {"c"});
  Builder::set_int(cat, "axis", 1);
  b.conv("convC", "c", "y", 32, 16);
  b.output("y");
  const auto table = b.table();
  auto p = plan(b.model, table, {});
  ASSERT_TRUE(p.has_value()) << p.status().message();
  const ScaleGroup* g = p->group_of("c");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->members, (std::vector<std::string>{"a", "b", "c"}));
  const double amax = std::max({table.find("a")->amax, table.find("b")->amax,
                                table.find("c")->amax});
  EXPECT_DOUBLE_EQ(g->range.amax, amax);

  quantize_ok(b.model, table);
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "QuantizeLinear"), 4);  // x, a, b, c
  EXPECT_EQ(quantized_source(m, "cat", 0), "a");
  EXPECT_EQ(quantized_source(m, "cat", 1), "b");
  EXPECT_EQ(quantized_source(m, "convC", 0), "c");
  const std::string scale = dq_at(m, "convC", 0)->inputs[1];
  EXPECT_EQ(dq_at(m, "cat", 0)->inputs[1], scale);
  EXPECT_EQ(dq_at(m, "cat", 1)->inputs[1], scale);
  EXPECT_NE(dq_at(m, "convA", 0)->inputs[1], scale);
  EXPECT_FLOAT_EQ(scalar(m, scale), static_cast<float>(amax / 127.0));
}

//   x ─► conv1 ─► relu1 ─► MaxPool ─► conv2 ─► relu2 ─► GlobalAveragePool ─► Flatten ─► Gemm ─► y
TEST(Placement, PoolingBetweenInt8Convs) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.conv("conv1", "x", "c1", 16, 16);
  b.node("Relu", "relu1", {"c1"}, {"r1"});
  ir::Node& mp = b.node("MaxPool", "maxpool", {"r1"}, {"p"});
  Builder::set_ints(mp, "kernel_shape", {2, 2});
  Builder::set_ints(mp, "strides", {2, 2});
  b.conv("conv2", "p", "c2", 16, 32);
  b.node("Relu", "relu2", {"c2"}, {"r2"});
  b.node("GlobalAveragePool", "gap", {"r2"}, {"g"});
  b.node("Flatten", "flatten", {"g"}, {"f"});
  ir::Node& fc = b.node("Gemm", "fc", {"f", b.weight("fc.w", {10, 32}), b.weight("fc.b", {10})},
                        {"y"});
  Builder::set_int(fc, "transB", 1);
  b.output("y");
  b.shape("f", {1, 32});
  quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "QuantizeLinear"), 5);  // x, r1, p, r2, f
  EXPECT_EQ(count_op(m, "DequantizeLinear"), 8);  // + 3 weights
  EXPECT_EQ(quantized_source(m, "maxpool", 0), "r1");
  EXPECT_EQ(quantized_source(m, "conv2", 0), "p");
  EXPECT_EQ(quantized_source(m, "gap", 0), "r2");
  EXPECT_EQ(quantized_source(m, "fc", 0), "f");
  EXPECT_EQ(dq_at(m, "flatten", 0), nullptr);
  // MaxPool moves data: its input and output share one scale; the average pool does not.
  EXPECT_EQ(dq_at(m, "maxpool", 0)->inputs[1], dq_at(m, "conv2", 0)->inputs[1]);
  EXPECT_NE(dq_at(m, "gap", 0)->inputs[1], dq_at(m, "fc", 0)->inputs[1]);
  EXPECT_EQ(dq_at(m, "fc", 1)->attr_int("axis", -1), 0);
}

//   x ─► LayerNorm ─► ln ─┬─► MatMul Wq ─► q ────────────────────────┐
//                         ├─► MatMul Wk ─► k ─► Transpose ─► kT ─► MatMul ─► Div ─► Softmax ─► p ─┐
//                         └─► MatMul Wv ─► v ──────────────────────────────────────────────► MatMul
//                         ─► a
//   a ─► MatMul Wo ─► o ─► Add(x) ─► y
TEST(Placement, TransformerBlock) {
  Builder b;
  b.input("x", {1, 8, 32});
  b.node("LayerNormalization", "ln", {"x", b.weight("ln.g", {32}), b.weight("ln.b", {32})},
         {"h"});
  for (const char* w : {"q", "k", "v"}) {
    b.node("MatMul", std::string("mm_") + w, {"h", b.weight(std::string("W") + w, {32, 32})}, {w});
    b.shape(w, {1, 8, 32});
  }
  ir::Node& t = b.node("Transpose", "kt", {"k"}, {"kT"});
  Builder::set_ints(t, "perm", {0, 2, 1});
  b.node("MatMul", "scores", {"q", "kT"}, {"s"});
  b.g().set_initializer("sqrt_d", ir::make_tensor<float>({}, {5.657f}));
  b.node("Div", "scale", {"s", "sqrt_d"}, {"sd"});
  b.node("Softmax", "softmax", {"sd"}, {"p"});
  b.node("MatMul", "context", {"p", "v"}, {"a"});
  b.node("MatMul", "mm_o", {"a", b.weight("Wo", {32, 32})}, {"o"});
  b.node("Add", "residual", {"x", "o"}, {"y"});
  b.output("y");
  b.shape("h", {1, 8, 32});
  b.shape("kT", {1, 32, 8});
  b.shape("s", {1, 8, 8});
  b.shape("p", {1, 8, 8});
  b.shape("a", {1, 8, 32});
  auto p = plan(b.model, b.table(), {});
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_FALSE(p->node("softmax")->quantized);
  EXPECT_FALSE(p->node("ln")->quantized);
  EXPECT_TRUE(p->node("scores")->quantized);

  quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "QuantizeLinear"), 7);  // h, q, kT, p, v, a, x
  EXPECT_EQ(count_op(m, "DequantizeLinear"), 11);
  for (const char* mm : {"mm_q", "mm_k", "mm_v", "mm_o"}) {
    ASSERT_NE(dq_at(m, mm, 1), nullptr) << mm;
    EXPECT_EQ(dq_at(m, mm, 1)->attr_int("axis", -1), 1) << mm;
  }
  EXPECT_EQ(dq_at(m, "mm_q", 0), dq_at(m, "mm_v", 0));  // one pair on h, three readers
  EXPECT_EQ(quantized_source(m, "scores", 0), "q");
  EXPECT_EQ(quantized_source(m, "scores", 1), "kT");
  EXPECT_EQ(quantized_source(m, "context", 0), "p");
  EXPECT_EQ(quantized_source(m, "context", 1), "v");
  EXPECT_EQ(quantized_source(m, "residual", 0), "x");
  EXPECT_EQ(dq_at(m, "residual", 1), nullptr);
  EXPECT_EQ(dq_at(m, "ln", 0), nullptr);
  EXPECT_EQ(dq_at(m, "softmax", 0), nullptr);
  EXPECT_EQ(dq_at(m, "scale", 0), nullptr);
  EXPECT_EQ(dq_at(m, "kt", 0), nullptr);
}

//   x[4,16] ─► Gemm(W[8,16], transB=1) ─► h ─► Gemm(W[8,24], transB=0) ─► y
TEST(Placement, GemmTransBZeroAndOne) {
  Builder b;
  b.input("x", {4, 16});
  ir::Node& g1 = b.node("Gemm", "g1", {"x", b.weight("w1", {8, 16}), b.weight("b1", {8})}, {"h"});
  Builder::set_int(g1, "transB", 1);
  b.node("Gemm", "g2", {"h", b.weight("w2", {8, 24}), b.weight("b2", {24})}, {"y"});
  b.output("y");
  b.shape("h", {4, 8});
  Builder copy = b;
  quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "QuantizeLinear"), 2);
  const ir::Node* d1 = dq_at(m, "g1", 1);
  const ir::Node* d2 = dq_at(m, "g2", 1);
  ASSERT_TRUE(d1 && d2);
  EXPECT_EQ(d1->attr_int("axis", -1), 0);
  EXPECT_EQ(d2->attr_int("axis", -1), 1);
  EXPECT_EQ(m.graph.initializer(d1->inputs[1])->shape(), ir::Shape{8});
  EXPECT_EQ(m.graph.initializer(d2->inputs[1])->shape(), ir::Shape{24});
  // Each column of w2 ([K=8, N=24]) has its own scale: max over the column / 127.
  const ir::Tensor& w2 = *copy.g().initializer("w2");
  const ir::Tensor& s2 = *m.graph.initializer(d2->inputs[1]);
  for (int64_t n = 0; n < 24; ++n) {
    double amax = 0;
    for (int64_t k = 0; k < 8; ++k)
      amax = std::max(amax, std::fabs(double(w2.data<float>()[k * 24 + n])));
    EXPECT_FLOAT_EQ(s2.data<float>()[n], static_cast<float>(amax / 127.0)) << n;
  }
}

//   x[1,32,8,8] ─► ConvTranspose(W[32,8,2,2], stride 2) ─► y[1,8,16,16]
TEST(Placement, ConvTransposeAxisOne) {
  Builder b;
  b.input("x", {1, 32, 8, 8});
  ir::Node& ct = b.node("ConvTranspose", "up", {"x", b.weight("up.w", {32, 8, 2, 2})}, {"y"});
  Builder::set_ints(ct, "strides", {2, 2});
  b.output("y");
  quantize_ok(b.model, b.table());
  const ir::Node* dq = dq_at(b.model, "up", 1);
  ASSERT_NE(dq, nullptr);
  EXPECT_EQ(dq->attr_int("axis", -1), 1);
  EXPECT_EQ(b.model.graph.initializer(dq->inputs[1])->shape(), ir::Shape{8});
  EXPECT_EQ(count_op(b.model, "QuantizeLinear"), 1);
}

//   x[1,3,8,8] ─► conv0 (3 input channels) ─► y ;  x2[1,64] ─► MatMul(W[64,1]) ─► z
TEST(Placement, SmallConvsAndMatrixVectorStayFloatByDefault) {
  Builder b;
  b.input("x", {1, 3, 8, 8});
  b.input("x2", {1, 64});
  b.conv("conv0", "x", "y", 3, 16);
  b.node("MatMul", "mv", {"x2", b.weight("wv", {64, 1})}, {"z"});
  b.output("y");
  b.output("z");
  auto p = plan(b.model, b.table(), {});
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->node("conv0")->quantized);
  EXPECT_NE(p->node("conv0")->reason.find("3 input channels"), std::string::npos);
  EXPECT_NE(p->node("mv")->reason.find("matrix-vector"), std::string::npos);
  EXPECT_TRUE(p->edges.empty());

  PlanOptions force;
  force.min_conv_channels = 0;
  force.quantize_matrix_vector = true;
  auto q = plan(b.model, b.table(), force);
  ASSERT_TRUE(q.has_value());
  EXPECT_TRUE(q->node("conv0")->quantized);
  EXPECT_TRUE(q->node("mv")->quantized);
}

//   x[4,2,8] ─► MatMul(W1) ─► h ─► LSTM(W, R, hidden 4) ─► Y[4,1,2,4] ─► MatMul(W2) ─► y
// Both targets: the LSTM stays float, no Q/DQ on its input or its W and R (ORT would otherwise
// put the first MatMul's output Q/DQ on it); the MatMul after it reads Y quantized.
TEST(Placement, RecurrentOpsStayFloat) {
  for (Target target : {Target::kTensorRT, Target::kOrt}) {
    Builder b;
    b.input("x", {4, 2, 8});
    b.node("MatMul", "mm1", {"x", b.weight("w1", {8, 8})}, {"h"});
    ir::Node& lstm = b.node("LSTM", "lstm", {"h", b.weight("W", {1, 16, 8}),
                                             b.weight("R", {1, 16, 4})}, {"Y"});
    lstm.set_attr(ir::int_attr("hidden_size", 4));
    b.node("MatMul", "mm2", {"Y", b.weight("w2", {4, 3})}, {"y"});
    b.output("y");
    b.shape("h", {4, 2, 8});
    b.shape("Y", {4, 1, 2, 4});
    PlanOptions options;
    options.target = target;
    auto p = plan(b.model, b.table(), options);
    ASSERT_TRUE(p.has_value()) << p.status().message();
    EXPECT_FALSE(p->node("lstm")->quantized);
    EXPECT_NE(p->node("lstm")->reason.find("recurrent op"), std::string::npos);
    EXPECT_TRUE(p->node("mm2")->quantized) << p->node("mm2")->reason;

    quantize_ok(b.model, b.table(), options);
    const ir::Model& m = b.model;
    for (size_t slot = 0; slot < 3; ++slot) EXPECT_EQ(dq_at(m, "lstm", slot), nullptr) << slot;
    EXPECT_EQ(m.graph.initializer("W")->dtype(), ir::DType::kFloat32);
    EXPECT_EQ(m.graph.initializer("R")->dtype(), ir::DType::kFloat32);
    EXPECT_EQ(quantized_source(m, "mm2", 0), "Y");
  }
}

//   x ─► conv1 ─► relu1 ─► r1 ─► GridSample(grid) ─► s ─► conv2 ─► y
// GridSample stays float (ir::float_reason): r1 and the grid reach it float, conv2 still
// reads s through its own Q/DQ.
TEST(Placement, GridSampleBetweenInt8ConvsStaysFloat) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.input("grid", {1, 8, 8, 2});
  b.conv("conv1", "x", "c1", 16, 16);
  b.node("Relu", "relu1", {"c1"}, {"r1"});
  b.node("GridSample", "gs", {"r1", "grid"}, {"s"});
  b.conv("conv2", "s", "y", 16, 16);
  b.output("y", {1, 16, 8, 8});
  const QuantizeResult r = quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(dq_at(m, "gs", 0), nullptr);
  EXPECT_EQ(dq_at(m, "gs", 1), nullptr);
  EXPECT_EQ(quantized_source(m, "conv1", 0), "x");
  EXPECT_EQ(quantized_source(m, "conv2", 0), "s");
  const auto gs = std::find_if(r.float_nodes.begin(), r.float_nodes.end(),
                               [](const NodePlan& n) { return n.name == "gs"; });
  ASSERT_NE(gs, r.float_nodes.end());
  EXPECT_NE(gs->reason.find("TensorRT runs GridSample in FP32/FP16"), std::string::npos);
}

}  // namespace
}  // namespace ptq::planner::testing
