// The CPU kernels' instruction-set levels (docs/DESIGN.md, "Instruction sets"): the names and
// the resolution of a requested level, and every op whose kernels are compiled per level
// (src/runtime/cpu/isa_ops.inc) run at each level this CPU has, forced through
// CpuBackendOptions::isa, against the reference kernels on seeded random inputs, with its
// weights both as call inputs and as constants packed when the kernel is prepared.
#include <random>
#include <string>
#include <vector>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

// Relative L2 error allowed against the float64-accumulating reference kernels: float sums of
// up to a few hundred products in another order (measured: 1e-7 to 1e-6; the recurrent cells,
// whose rounding carries over 7 steps, 1.2e-7 to 1.7e-7 at every level).
constexpr double kTolerance = 1e-5;

std::vector<CpuIsa> levels_here() {
  std::vector<CpuIsa> out;
  for (CpuIsa l : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (static_cast<int>(l) <= static_cast<int>(best_cpu_isa())) out.push_back(l);
  }
  return out;
}

TEST(CpuIsa, NamesRoundTrip) {
  for (CpuIsa l : {CpuIsa::kAuto, CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    auto parsed = parse_cpu_isa(cpu_isa_name(l));
    ASSERT_TRUE(parsed.has_value()) << parsed.status().message();
    EXPECT_EQ(*parsed, l);
  }
  auto bad = parse_cpu_isa("sse9");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().message(),
            "unknown CPU instruction set 'sse9' (auto, baseline, avx2 or avx512)");
}

TEST(CpuIsa, AutoIsTheBestLevelAndLowerOnesResolveToThemselves) {
  EXPECT_EQ(*resolve_cpu_isa(CpuIsa::kAuto), best_cpu_isa());
  for (CpuIsa l : levels_here()) EXPECT_EQ(*resolve_cpu_isa(l), l);
  EXPECT_NE(best_cpu_isa(), CpuIsa::kAuto);
}

TEST(CpuIsa, ALevelAboveTheCpusIsRefusedByEveryKernel) {
  if (best_cpu_isa() == CpuIsa::kAvx512) {
    EXPECT_TRUE(resolve_cpu_isa(CpuIsa::kAvx512).has_value());  // nothing above it to ask for
    return;
  }
  auto r = resolve_cpu_isa(CpuIsa::kAvx512);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("at most " + cpu_isa_name(best_cpu_isa())),
            std::string::npos);
  CpuBackendOptions o;
  o.isa = CpuIsa::kAvx512;
  auto kernel = make_cpu_backend(o)->create_kernel({make_node("Relu", 1, 1), 13, 1, nullptr});
  EXPECT_FALSE(kernel.has_value());
}

struct OpCase {
  std::string what;
  ir::Node node;
  std::vector<ir::Tensor> inputs;
  std::vector<size_t> constants;  // inputs given as initializers (packed once) in the 2nd run
  int64_t opset = 13;
};

OpCase conv_case(std::mt19937& rng, const std::string& what, ir::Shape x, ir::Shape w,
                 int64_t group, int64_t stride, int64_t pad) {
  std::vector<ir::Attribute> attrs{attr_int("group", group), attr_ints("strides", {stride, stride}),
                                   attr_ints("pads", {pad, pad, pad, pad})};
  const int64_t m = w[0];
  return {what, make_node("Conv", 3, 1, attrs),
          {random_tensor(rng, std::move(x)), random_tensor(rng, std::move(w)),
           random_tensor(rng, {m})},
          {1, 2}};
}

void add_sgemm_cases(std::mt19937& rng, std::vector<OpCase>& cases) {
  cases.push_back({"matmul of activations", make_node("MatMul", 2, 1),
                   {random_tensor(rng, {4, 33, 40}), random_tensor(rng, {4, 40, 70})},
                   {}});
  cases.push_back({"matmul of activations, tiled", make_node("MatMul", 2, 1),
                   {random_tensor(rng, {1, 96, 80}), random_tensor(rng, {80, 300})},
                   {}});
  std::vector<ir::Attribute> attrs{attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 1, 1})};
  cases.push_back({"conv transpose", make_node("ConvTranspose", 3, 1, attrs),
                   {random_tensor(rng, {1, 8, 9, 9}), random_tensor(rng, {8, 6, 3, 3}),
                    random_tensor(rng, {6})},
                   {1, 2}});
}

void add_elementwise_cases(std::mt19937& rng, std::vector<OpCase>& cases) {
  const ir::Shape big{2, 64, 300};
  cases.push_back({"Add, broadcast row", make_node("Add", 2, 1),
                   {random_tensor(rng, big), random_tensor(rng, {300})},
                   {}});
  cases.push_back({"Mul", make_node("Mul", 2, 1),
                   {random_tensor(rng, big), random_tensor(rng, big)},
                   {}});
  cases.push_back({"Div, broadcast column", make_node("Div", 2, 1),
                   {random_tensor(rng, big), random_tensor(rng, {64, 1}, 0.5f, 2.0f)},
                   {}});
  cases.push_back({"Pow", make_node("Pow", 2, 1),
                   {random_tensor(rng, big, 0.1f, 3.0f), random_tensor(rng, {1}, 2.0f, 2.0f)},
                   {}});
  for (const char* op : {"Sigmoid", "Tanh", "Relu", "Erf", "Exp"}) {
    cases.push_back({op, make_node(op, 1, 1), {random_tensor(rng, big, -6.0f, 6.0f)}, {}});
  }
  cases.push_back({"Sqrt", make_node("Sqrt", 1, 1), {random_tensor(rng, big, 0.0f, 4.0f)}, {}});
  for (const char* approximate : {"none", "tanh"}) {
    cases.push_back({std::string("Gelu ") + approximate,
                     make_node("Gelu", 1, 1, {attr_string("approximate", approximate)}),
                     {random_tensor(rng, big, -5.0f, 5.0f)}, {}, 20});
  }
  cases.push_back({"LayerNormalization",
                   make_node("LayerNormalization", 3, 1, {attr_int("axis", -1)}),
                   {random_tensor(rng, {2, 50, 384}, -3.0f, 3.0f), random_tensor(rng, {384}),
                    random_tensor(rng, {384})},
                   {1, 2}, 17});
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceSumSquare"}) {
    cases.push_back({op, make_node(op, 1, 1, {attr_ints("axes", {-1})}),
                     {random_tensor(rng, {2, 50, 384}, -3.0f, 3.0f)}, {}});
  }
}

// A recurrent node of `op` (gates per direction) on seeded random weights, with sequences of
// several lengths (one empty) and initial states; W, R and B are the packed-run constants.
OpCase recurrent_case(std::mt19937& rng, const std::string& what, const std::string& op,
                      int64_t gates, std::vector<ir::Attribute> attrs) {
  const int64_t seq = 7, batch = 5, input = 48, hidden = 40;
  const bool lstm = op == "LSTM";
  const int64_t dirs = lstm ? 2 : 1, gh = gates * hidden;
  attrs.push_back(attr_int("hidden_size", hidden));
  attrs.push_back(attr_string("direction", lstm ? "bidirectional" : "forward"));
  OpCase c{what, make_node(op, lstm ? 8 : 6, 1, std::move(attrs)), {}, {1, 2, 3}, 14};
  c.inputs.push_back(random_tensor(rng, {seq, batch, input}));
  c.inputs.push_back(random_tensor(rng, {dirs, gh, input}, -0.3f, 0.3f));
  c.inputs.push_back(random_tensor(rng, {dirs, gh, hidden}, -0.3f, 0.3f));
  c.inputs.push_back(random_tensor(rng, {dirs, 2 * gh}, -0.3f, 0.3f));
  ir::Tensor lengths(ir::DType::kInt32, {batch});
  const std::vector<int32_t> lens{7, 3, 0, 6, 1};
  std::copy(lens.begin(), lens.end(), lengths.data<int32_t>());
  c.inputs.push_back(std::move(lengths));
  c.inputs.push_back(random_tensor(rng, {dirs, batch, hidden}));
  if (lstm) {
    c.inputs.push_back(random_tensor(rng, {dirs, batch, hidden}));
    c.inputs.push_back(random_tensor(rng, {dirs, 3 * hidden}, -0.5f, 0.5f));
  }
  return c;
}

// LSTM, GRU and RNN, whose input projection and per-step state GEMMs are the level's sgemm (GRU
// without linear_before_reset takes a third GEMM per step), and Einsum's matrix products on the
// level's sgemm_block: as stored, with an operand or the output permuted, and in several tiles.
void add_sequence_cases(std::mt19937& rng, std::vector<OpCase>& cases) {
  cases.push_back(recurrent_case(rng, "LSTM bidirectional, peepholes", "LSTM", 4, {}));
  cases.push_back(recurrent_case(rng, "GRU", "GRU", 3, {}));
  cases.push_back(recurrent_case(rng, "GRU linear_before_reset", "GRU", 3,
                                 {attr_int("linear_before_reset", 1)}));
  cases.push_back(recurrent_case(rng, "RNN", "RNN", 1, {}));
  auto einsum = [&](const char* equation, ir::Shape a, ir::Shape b) {
    cases.push_back({std::string("Einsum ") + equation,
                     make_node("Einsum", 2, 1, {attr_string("equation", equation)}),
                     {random_tensor(rng, std::move(a)), random_tensor(rng, std::move(b))},
                     {1}, 12});
  };
  einsum("bhid,bhjd->bhij", {2, 4, 24, 16}, {2, 4, 20, 16});
  einsum("bkhd,bhqd->bhqk", {2, 20, 4, 16}, {2, 4, 24, 16});
  einsum("ij,jk->ki", {70, 80}, {80, 300});
}

// One case per algorithm choose_conv picks (direct GEMM, Winograd, the 1x1 and shifted forms,
// depthwise 3x3, lanes for few output channels), and the other per-level ops: Eigen's sgemm
// (MatMul of two computed operands, one tile and several; ConvTranspose) and the vectorised
// elementwise, activation, normalization and reduction loops, on tensors large enough to be
// split across threads (elementwise_base.h's grain); the recurrent cells and Einsum.
std::vector<OpCase> op_cases() {
  std::mt19937 rng(31);
  std::vector<OpCase> cases;
  cases.push_back(conv_case(rng, "conv 3x3 s1", {1, 16, 20, 20}, {32, 16, 3, 3}, 1, 1, 1));
  cases.push_back(conv_case(rng, "conv 3x3 s2", {2, 8, 17, 15}, {24, 8, 3, 3}, 1, 2, 1));
  cases.push_back(conv_case(rng, "conv 1x1", {1, 32, 14, 14}, {48, 32, 1, 1}, 1, 1, 0));
  cases.push_back(conv_case(rng, "conv 5x5", {1, 6, 19, 19}, {20, 6, 5, 5}, 1, 1, 2));
  cases.push_back(conv_case(rng, "depthwise 3x3", {1, 24, 18, 18}, {24, 1, 3, 3}, 24, 1, 1));
  cases.push_back(conv_case(rng, "depthwise 3x3 s2", {1, 16, 21, 21}, {16, 1, 3, 3}, 16, 2, 1));
  cases.push_back(conv_case(rng, "grouped", {1, 12, 11, 11}, {12, 4, 3, 3}, 3, 1, 1));
  cases.push_back(conv_case(rng, "rgb stem", {1, 3, 32, 32}, {16, 3, 3, 3}, 1, 2, 1));
  cases.push_back(conv_case(rng, "few outputs", {1, 64, 16, 16}, {4, 64, 3, 3}, 1, 1, 1));
  cases.push_back({"gemm", make_node("Gemm", 3, 1, {attr_int("transB", 1)}),
                   {random_tensor(rng, {37, 70}), random_tensor(rng, {53, 70}),
                    random_tensor(rng, {53})},
                   {1, 2}});
  cases.push_back({"matmul", make_node("MatMul", 2, 1),
                   {random_tensor(rng, {2, 29, 65}), random_tensor(rng, {65, 41})},
                   {1}});
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    cases.push_back({op, make_node(op, 1, 1, {attr_int("axis", -1)}),
                     {random_tensor(rng, {3, 7, 45}, -8.0f, 8.0f)},
                     {}});
  }
  add_sgemm_cases(rng, cases);
  add_elementwise_cases(rng, cases);
  add_sequence_cases(rng, cases);
  return cases;
}

// `c` at `isa` with the constants given as initializers of a graph the kernel sees.
ir::Tensor run_packed(const OpCase& c, CpuIsa isa, int threads) {
  ir::Graph graph;
  for (size_t i : c.constants) graph.set_initializer(c.node.inputs[i], c.inputs[i]);
  std::vector<const ir::Tensor*> ptrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const ir::Tensor* init = graph.initializer(c.node.inputs[i]);
    ptrs.push_back(init != nullptr ? init : &c.inputs[i]);
  }
  CpuBackendOptions options;
  options.isa = isa;
  auto kernel = make_cpu_backend(options)->create_kernel({c.node, c.opset, threads, &graph});
  EXPECT_TRUE(kernel.has_value()) << kernel.status().message();
  if (!kernel) return {};
  std::vector<ir::Tensor> outs(1);
  PoisonAllocator alloc;
  const Status st = (*kernel)->run(ptrs, outs, alloc);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return std::move(outs[0]);
}

TEST(CpuIsa, EveryLevelsKernelsMatchTheReference) {
  for (const OpCase& c : op_cases()) {
    std::vector<const ir::Tensor*> ptrs;
    for (const ir::Tensor& t : c.inputs) ptrs.push_back(&t);
    const auto want = run_kernel(c.node, c.opset, ptrs, true);
    ASSERT_EQ(want.size(), 1u) << c.what;
    for (CpuIsa isa : levels_here()) {
      const std::string at = c.what + " at " + cpu_isa_name(isa);
      const auto got = run_kernel(c.node, c.opset, ptrs, false, 2, isa);
      ASSERT_EQ(got.size(), 1u) << at;
      EXPECT_LE(rel_l2(got[0], want[0]), kTolerance) << at;
      EXPECT_LE(rel_l2(run_packed(c, isa, 2), want[0]), kTolerance) << at << ", packed weights";
    }
  }
}

// Each level's kernels split their work by sizes alone: 1, 2 and 3 threads give the same bits.
TEST(CpuIsa, EveryLevelIsBitIdenticalForAnyThreadCount) {
  for (const OpCase& c : op_cases()) {
    for (CpuIsa isa : levels_here()) {
      const ir::Tensor one = run_packed(c, isa, 1);
      for (int threads : {2, 3}) {
        EXPECT_TRUE(bit_identical(run_packed(c, isa, threads), one))
            << c.what << " at " << cpu_isa_name(isa) << " on " << threads << " threads";
      }
    }
  }
}

// kAuto runs exactly the kernels of the level it resolves to.
TEST(CpuIsa, AutoGivesTheBestLevelsBits) {
  for (const OpCase& c : op_cases()) {
    EXPECT_TRUE(bit_identical(run_packed(c, CpuIsa::kAuto, 3), run_packed(c, best_cpu_isa(), 3)))
        << c.what;
  }
}

}  // namespace
}  // namespace ptq::runtime::testing
