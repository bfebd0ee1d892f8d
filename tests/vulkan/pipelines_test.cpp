// Issue 32 item 4 (a fast first run): a program builds, ahead of recording and all at once,
// exactly the pipelines its runs use (its kernels and the statistics its observers ask for),
// none on demand and none it never dispatches; and a run with a cold on-disk pipeline cache
// gives the same bytes as one with the cache that run left behind.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <unistd.h>

#include <gtest/gtest.h>

#include "common/paths.h"
#include "context.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

struct Transformer {
  ir::Model model;
  runtime::NamedTensors feeds;
};

bool load_transformer(Transformer& out, int64_t count) {
  const std::filesystem::path dir = ptq::testing::test_models_dir();
  auto model = onnx::load_model(dir / "transformer.onnx");
  auto samples = data::load_npy(dir / "transformer.samples.npy");
  EXPECT_TRUE(model.has_value() && samples.has_value()) << "missing test model or samples";
  if (!model || !samples) return false;
  out.model = std::move(model).value();
  ir::Shape shape = samples->shape();
  shape[0] = count;
  ir::Tensor batch(samples->dtype(), shape);
  std::memcpy(batch.raw(), samples->raw(), batch.nbytes());
  out.feeds = {{out.model.graph.real_inputs().front()->name, std::move(batch)}};
  return true;
}

// Min/max of every float activation, then its histogram over that range: both statistics
// shaders run.
class MinMaxThenHistogram final : public runtime::Observer {
 public:
  std::vector<std::string> wanted(const ir::Graph& graph) override {
    std::vector<std::string> names;
    for (const ir::Node& n : graph.nodes) {
      if (n.op_type != "Constant" && !n.outputs.empty()) names.push_back(n.outputs[0]);
    }
    return names;
  }
  Status observe(const runtime::ObservedTensor& t) override {
    if (t.dtype != ir::DType::kFloat32) return Status::ok();
    if (amax.size() < limit || amax.count(t.name)) {
      double& a = amax[t.name];
      a = std::max(a, t.stats.minmax().abs_max);
      std::vector<uint64_t> h(2048, 0);
      if (a > 0) t.stats.histogram(a, h);
    }
    return Status::ok();
  }
  size_t limit = 1000;
  std::map<std::string, double> amax;
};

struct Device {
  Context* context = nullptr;  // owned by the executor
  std::unique_ptr<runtime::Executor> executor;
};

Device open(const ir::Model& model, const std::string& cache_dir) {
  VulkanOptions o = strict_options();
  o.pipeline_cache_dir = cache_dir;
  Device d;
  auto ctx = Context::create(o);
  EXPECT_TRUE(ctx.has_value()) << ctx.status().message();
  if (!ctx) return d;
  d.context = ctx->get();
  auto exec = make_vulkan_executor(model, o, std::make_unique<OpenedDevice>(std::move(*ctx)));
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  if (exec) d.executor = std::move(exec).value();
  return d;
}

TEST(VulkanPipelines, BuiltAheadAreExactlyThoseUsed) {
  Transformer t;
  if (!load_transformer(t, 2)) return;
  Device d = open(t.model, "");
  ASSERT_NE(d.executor, nullptr);
  MinMaxThenHistogram obs;
  runtime::Observer* observers[] = {&obs};
  for (int run = 0; run < 2; ++run) {
    auto out = d.executor->run(t.feeds, observers);
    ASSERT_TRUE(out.has_value()) << out.status().message();
  }
  EXPECT_EQ(d.context->built_on_demand(), 0);
  EXPECT_EQ(d.context->built_pipelines(), d.context->used_pipelines());
  EXPECT_TRUE(d.context->used_pipelines().count("minmax"));
  EXPECT_TRUE(d.context->used_pipelines().count("gemm") ||
              d.context->used_pipelines().count("gemm_m"));
  // Without observers, no statistics shader is built.
  Device plain = open(t.model, "");
  ASSERT_NE(plain.executor, nullptr);
  ASSERT_TRUE(plain.executor->run(t.feeds).has_value());
  EXPECT_EQ(plain.context->built_pipelines(), plain.context->used_pipelines());
  EXPECT_FALSE(plain.context->built_pipelines().count("minmax"));
}

TEST(VulkanPipelines, ColdAndWarmCacheGiveTheSameOutputs) {
  Transformer t;
  if (!load_transformer(t, 2)) return;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("ptq_pipelines_{}", ::getpid());
  std::filesystem::remove_all(dir);
  runtime::NamedTensors cold, warm;
  {
    Device d = open(t.model, dir.string());
    ASSERT_NE(d.executor, nullptr);
    EXPECT_EQ(d.context->pipeline_cache_loaded_bytes(), 0u);
    auto out = d.executor->run(t.feeds);
    ASSERT_TRUE(out.has_value()) << out.status().message();
    cold = std::move(out).value();
  }  // the cache is written when the device closes
  ASSERT_TRUE(std::filesystem::exists(dir) && !std::filesystem::is_empty(dir));
  {
    Device d = open(t.model, dir.string());
    ASSERT_NE(d.executor, nullptr);
    EXPECT_GT(d.context->pipeline_cache_loaded_bytes(), 0u);
    auto out = d.executor->run(t.feeds);
    ASSERT_TRUE(out.has_value()) << out.status().message();
    warm = std::move(out).value();
  }
  std::filesystem::remove_all(dir);
  ASSERT_EQ(cold.size(), warm.size());
  for (size_t i = 0; i < cold.size(); ++i) {
    ASSERT_EQ(cold[i].second.nbytes(), warm[i].second.nbytes());
    EXPECT_EQ(std::memcmp(cold[i].second.raw(), warm[i].second.raw(), cold[i].second.nbytes()), 0)
        << cold[i].first;
  }
}

}  // namespace
}  // namespace ptq::vulkan::testing
