// runtime::make_engine and the calibration workers' policy (ptq/runtime/engine.h): a backend by
// name, the options that belong to the other backend refused, the threads split between the
// workers, and each rank's device of a multi-process Vulkan run.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "common/model_builder.h"
#include "common/node_builder.h"
#include "common/thread_ranks.h"
#include "ptq/runtime/engine.h"

namespace ptq::runtime {
namespace {

using ptq::testing::op_node;
using ptq::testing::value_info;

//   x[2, 3] ─► Relu ─► y
ir::Model relu_model() {
  ir::Model m;
  m.set_opset("", 13);
  m.graph.inputs.push_back(value_info("x", {2, 3}));
  m.graph.outputs.push_back(value_info("y", {2, 3}));
  m.graph.nodes.push_back(op_node("Relu", {"x"}, {"y"}));
  return m;
}

TEST(Engine, ThreadCountIsTheAskedOneOrEveryHardwareThread) {
  EXPECT_EQ(thread_count(3), 3);
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(thread_count(0), all);
  EXPECT_EQ(thread_count(-1), all);
}

TEST(Engine, CpuEngineRunsTheModel) {
  const ir::Model m = relu_model();
  auto engine = make_engine(m, EngineOptions{}, 2);
  ASSERT_TRUE(engine.has_value()) << engine.status().message();
  ASSERT_NE(engine->backend, nullptr);
  const std::vector<float> x = {-1, 2, -3, 4, -5, 6};
  NamedTensors feeds;
  feeds.emplace_back("x", ir::make_tensor<float>({2, 3}, std::span<const float>(x)));
  auto out = engine->executor->run(feeds);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  const ir::Tensor& y = (*out)[0].second;
  EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 6),
            (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

TEST(Engine, RefusesAnUnknownBackendAndVulkanOptionsOnTheCpu) {
  const ir::Model m = relu_model();
  EngineOptions o;
  o.backend = "tpu";
  auto e = make_engine(m, o, 1);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.status().message(), "unknown backend 'tpu' (cpu or vulkan)");
  o.backend = "cpu";
  o.strict = true;
  e = make_engine(m, o, 1);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.status().message(), "--device and --strict apply to --backend vulkan");
}

TEST(Engine, WorkersOffTheCpuAndDeviceListsOnItAreRefused) {
  EngineOptions o;
  EXPECT_TRUE(check_workers(o, 3).is_ok());
  o.devices = {0, 1};
  EXPECT_FALSE(check_workers(o, 0).is_ok());
  o.backend = "vulkan";
  EXPECT_TRUE(check_workers(o, 1).is_ok());
  EXPECT_EQ(check_workers(o, 2).message(), "--workers applies to --backend cpu");
}

// One worker per kThreadsPerWorker threads, at most kMostWorkers, never more than the threads.
TEST(Engine, CalibrationWorkersShareTheThreads) {
  const ir::Model m = relu_model();
  const std::pair<int, int> threads_workers[] = {{1, 1}, {7, 1}, {8, 2}, {64, kMostWorkers}};
  for (const auto& [threads, want] : threads_workers) {
    auto e = make_calibration_engines(m, EngineOptions{}, threads, 0);
    ASSERT_TRUE(e.has_value()) << e.status().message();
    EXPECT_EQ(static_cast<int>(e->executors().size()), want) << threads << " threads";
  }
  auto asked = make_calibration_engines(m, EngineOptions{}, 2, 5);
  ASSERT_TRUE(asked.has_value()) << asked.status().message();
  EXPECT_EQ(asked->executors().size(), 2u);  // not more workers than threads
}

TEST(Engine, EachRankTakesItsDeviceOfTheList) {
  ptq::testing::ThreadRanks ranks(3);
  std::vector<int> device(3, -1);
  ranks.run([&](dist::Communicator& comm) {
    EngineOptions o;
    o.backend = "vulkan";
    o.devices = {4, 5};
    ASSERT_TRUE(pick_rank_device(o, comm).is_ok());
    EXPECT_EQ(o.devices, std::vector<int>{o.device});
    device[static_cast<size_t>(comm.rank())] = o.device;
  });
  EXPECT_EQ(device, (std::vector<int>{4, 5, 4}));
  EngineOptions cpu;
  cpu.devices = {4, 5};
  ptq::testing::ThreadRanks two(2);
  two.run([&](dist::Communicator& comm) {
    EngineOptions o = cpu;
    ASSERT_TRUE(pick_rank_device(o, comm).is_ok());
    EXPECT_EQ(o.devices, (std::vector<int>{4, 5}));  // the CPU has no devices to pick
  });
}

}  // namespace
}  // namespace ptq::runtime
