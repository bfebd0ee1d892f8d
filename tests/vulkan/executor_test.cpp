// The Vulkan executor on a small graph built in code: CPU fallback with explicit transfers,
// --strict, several input shapes (one program each), views without copies, observers (device
// statistics, host statistics for fallback and int8 values, bounded keep-alive).
//
//   x ─ Conv ─ c ─ Relu ─ r ─ Sinh* ─ s ─┐
//                          └─────────────Add ─ a ─ Tile* ─ t ─ ReduceMean ─ m ─ Reshape ─ out
//                                          └─ QuantizeLinear ─ q ─ DequantizeLinear ─ dq
//   (* no Vulkan kernel: runs on the CPU)
#include <random>

#include "common/node_builder.h"
#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

using ptq::testing::op_node;

ir::Model test_model() {
  std::mt19937 rng(31);
  ir::Model m;
  m.set_opset("", 13);
  ir::ValueInfo x;
  x.name = "x";
  x.type.dtype = ir::DType::kFloat32;
  x.type.dims =
      std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(4), ir::Dim::of(6), ir::Dim::of(6)};
  m.graph.inputs.push_back(x);
  m.graph.set_initializer("w", random_tensor(rng, {8, 4, 3, 3}));
  m.graph.set_initializer("b", random_tensor(rng, {8}));
  m.graph.set_initializer("repeats", int64_tensor({4}, {1, 1, 1, 2}));
  m.graph.set_initializer("axes", int64_tensor({2}, {2, 3}));
  m.graph.set_initializer("flat", int64_tensor({1}, {-1}));
  m.graph.set_initializer("qs", ir::make_tensor<float>({}, {0.05f}));
  m.graph.set_initializer("qz", ir::make_tensor<int8_t>({}, {3}));
  m.graph.nodes = {
      op_node("Conv", {"x", "w", "b"}, {"c"},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})}),
      op_node("Relu", {"c"}, {"r"}),
      op_node("Sinh", {"r"}, {"s"}),
      op_node("Add", {"s", "r"}, {"a"}),
      op_node("Tile", {"a", "repeats"}, {"t"}),
      op_node("ReduceMean", {"t"}, {"m"}, {attr_ints("axes", {2, 3}), attr_int("keepdims", 0)}),
      op_node("Reshape", {"m", "flat"}, {"out"}),
      op_node("QuantizeLinear", {"a", "qs", "qz"}, {"q"}),
      op_node("DequantizeLinear", {"q", "qs", "qz"}, {"dq"}),
  };
  for (const char* name : {"out", "dq"}) {
    ir::ValueInfo o;
    o.name = name;
    m.graph.outputs.push_back(o);
  }
  return m;
}

runtime::NamedTensors cpu_run(const ir::Model& model, const ir::Tensor& x) {
  auto backend = runtime::make_cpu_backend(runtime::CpuBackendOptions{true});
  auto exec = runtime::Executor::create(model, *backend);
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  auto out = (*exec)->run({{"x", x.view()}});
  EXPECT_TRUE(out.has_value()) << out.status().message();
  return out.has_value() ? std::move(out).value() : runtime::NamedTensors{};
}

// Records min/max and a histogram of every value it is shown.
class AllValues final : public runtime::Observer {
 public:
  std::vector<std::string> wanted(const ir::Graph& g) override {
    std::vector<std::string> names{"x"};
    for (const ir::Node& n : g.nodes) names.insert(names.end(), n.outputs.begin(), n.outputs.end());
    return names;
  }
  Status observe(const runtime::ObservedTensor& t) override {
    Seen& s = seen[t.name];
    s.host = t.host != nullptr;
    s.mm = t.stats.minmax();
    s.hist.assign(2048, 0);
    t.stats.histogram(s.mm.abs_max, s.hist);
    s.count = 0;
    for (uint64_t c : s.hist) s.count += static_cast<int64_t>(c);
    order.push_back(t.name);
    return Status::ok();
  }
  struct Seen {
    bool host = false;
    runtime::MinMaxStats mm;
    std::vector<uint64_t> hist;
    int64_t count = 0;
  };
  std::map<std::string, Seen> seen;
  std::vector<std::string> order;
};

TEST(VulkanExecutor, FallbackStrictAndShapes) {
  const ir::Model model = test_model();
  std::vector<std::string> reported;
  VulkanOptions options;
  options.on_fallback = [&](const std::vector<std::string>& nodes) { reported = nodes; };
  auto gpu = make_vulkan_executor(model, options);
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  std::mt19937 rng(32);
  for (int64_t n : {2, 1, 3, 2}) {
    reported.clear();
    const ir::Tensor x = random_tensor(rng, {n, 4, 6, 6});
    auto got = (*gpu)->run({{"x", x.view()}});
    ASSERT_TRUE(got.has_value()) << got.status().message();
    const runtime::NamedTensors want = cpu_run(model, x);
    ASSERT_EQ(got->size(), 2u);
    expect_close((*got)[0].second, want[0].second, 1e-4, fmt::format("out batch {}", n));
    // One quantization step (0.05 / range) where x / scale sits on a .5 after rounding apart.
    expect_close((*got)[1].second, want[1].second, 0.05 / 4.0, fmt::format("dq batch {}", n));
    const runtime::RunStats stats = (*gpu)->last_run_stats();
    EXPECT_GT(stats.peak_live_bytes, 0);
    EXPECT_EQ(stats.steps, 9);
  }
  // Batch 2 was seen first: its program was reused, so nothing was reported the second time.
  EXPECT_TRUE(reported.empty());
  auto again = make_vulkan_executor(model, options);
  ASSERT_TRUE(again.has_value());
  ASSERT_TRUE((*again)->run({{"x", random_tensor(rng, {1, 4, 6, 6}).view()}}).has_value());
  ASSERT_EQ(reported.size(), 2u);
  EXPECT_NE(reported[0].find("Sinh"), std::string::npos) << reported[0];
  EXPECT_NE(reported[1].find("Tile"), std::string::npos) << reported[1];

  auto strict = make_vulkan_executor(model, strict_options());
  ASSERT_TRUE(strict.has_value());
  auto refused = (*strict)->run({{"x", random_tensor(rng, {1, 4, 6, 6}).view()}});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("'Sinh_s'"), std::string::npos)
      << refused.status().message();

  auto bad = (*gpu)->run({{"y", random_tensor(rng, {1, 4, 6, 6}).view()}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
}

// A view after a fused activation (the zoo's cnn28: its Flatten read the Relu's output, which
// the fusion left without storage) and a Dropout whose mask nothing reads, all on the GPU:
//   x ─ Conv ─ c ─ Relu ─ r ─ Flatten ─ f ─ Dropout ─ d (mask: unread) ─ Gemm ─ out
TEST(VulkanExecutor, ViewsAfterFusionAndDropoutMask) {
  std::mt19937 rng(35);
  ir::Model m = test_model();
  m.graph.set_initializer("gw", random_tensor(rng, {5, 8 * 6 * 6}));
  m.graph.set_initializer("ratio", ir::make_tensor<float>({}, {0.5f}));
  m.graph.set_initializer("training", ir::make_tensor<bool>({}, {false}));
  m.graph.nodes = {
      op_node("Conv", {"x", "w", "b"}, {"c"},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})}),
      op_node("Relu", {"c"}, {"r"}),
      op_node("Flatten", {"r"}, {"f"}),
      op_node("Dropout", {"f", "ratio", "training"}, {"d", "mask"}),
      op_node("Gemm", {"d", "gw"}, {"out"}, {attr_int("transB", 1)}),
  };
  m.graph.outputs.resize(1);
  m.graph.outputs[0].name = "out";
  auto gpu = make_vulkan_executor(m, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  const ir::Tensor x = random_tensor(rng, {1, 4, 6, 6});
  auto got = (*gpu)->run({{"x", x.view()}});
  ASSERT_TRUE(got.has_value()) << got.status().message();
  expect_close((*got)[0].second, cpu_run(m, x)[0].second, 1e-4, "out");
}

TEST(VulkanExecutor, ObserversSeeEveryValue) {
  const ir::Model model = test_model();
  std::mt19937 rng(33);
  const ir::Tensor x = random_tensor(rng, {2, 4, 6, 6});
  // The CPU executor's view of the same values: the reference statistics.
  auto backend = runtime::make_cpu_backend(runtime::CpuBackendOptions{true});
  auto cpu = runtime::Executor::create(model, *backend);
  ASSERT_TRUE(cpu.has_value());
  AllValues want;
  runtime::Observer* wobs[] = {&want};
  ASSERT_TRUE((*cpu)->run({{"x", x.view()}}, wobs).has_value());

  for (int64_t budget : {int64_t{1} << 30, int64_t{1}}) {  // one block; a block per value
    VulkanOptions options;
    options.observe_budget_bytes = budget;
    auto gpu = make_vulkan_executor(model, options);
    ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
    AllValues got;
    runtime::Observer* gobs[] = {&got};
    for (int rep = 0; rep < 2; ++rep) {
      got.seen.clear();
      auto out = (*gpu)->run({{"x", x.view()}}, gobs);
      ASSERT_TRUE(out.has_value()) << out.status().message();
      ASSERT_EQ(got.seen.size(), want.seen.size());
      for (const auto& [name, w] : want.seen) {
        const AllValues::Seen& g = got.seen[name];
        const double tol = 1e-4 * std::max(1.0, w.mm.abs_max);
        EXPECT_NEAR(g.mm.min, w.mm.min, name == "q" ? 1.0 : tol) << name;
        EXPECT_NEAR(g.mm.max, w.mm.max, name == "q" ? 1.0 : tol) << name;
        EXPECT_EQ(g.count, w.count) << name;
      }
      // Device values come without host data; CPU steps' outputs and the input with it.
      EXPECT_FALSE(got.seen["c"].host);
      EXPECT_FALSE(got.seen["out"].host);
      EXPECT_TRUE(got.seen["s"].host);
      EXPECT_TRUE(got.seen["t"].host);
      EXPECT_TRUE(got.seen["x"].host);
      EXPECT_TRUE(got.seen["q"].host);  // int8: statistics on the host after a download
    }
  }
}

TEST(VulkanExecutor, UnknownObservedTensorIsAnError) {
  const ir::Model model = test_model();
  class Wrong final : public runtime::Observer {
   public:
    std::vector<std::string> wanted(const ir::Graph&) override { return {"nope"}; }
    Status observe(const runtime::ObservedTensor&) override { return Status::ok(); }
  } wrong;
  auto gpu = make_vulkan_executor(model, VulkanOptions{});
  ASSERT_TRUE(gpu.has_value());
  runtime::Observer* obs[] = {&wrong};
  std::mt19937 rng(34);
  auto out = (*gpu)->run({{"x", random_tensor(rng, {1, 4, 6, 6}).view()}}, obs);
  ASSERT_FALSE(out.has_value());
  EXPECT_NE(out.status().message().find("nope"), std::string::npos);
}

TEST(VulkanExecutor, ListsDevices) {
  auto devices = list_vulkan_devices();
  ASSERT_TRUE(devices.has_value()) << devices.status().message();
  ASSERT_FALSE(devices->empty());
  EXPECT_FALSE((*devices)[0].name.empty());
  EXPECT_TRUE((*devices)[0].usable);
  VulkanOptions bad;
  bad.device = static_cast<int>(devices->size()) + 3;
  const ir::Model model = test_model();
  auto exec = make_vulkan_executor(model, bad);
  ASSERT_FALSE(exec.has_value());
  EXPECT_EQ(exec.status().code(), StatusCode::kInvalidInput);  // exit 3 in the CLI
}

}  // namespace
}  // namespace ptq::vulkan::testing
