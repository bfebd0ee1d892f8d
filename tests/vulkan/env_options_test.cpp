// The PTQ_VULKAN_* and PTQ_PIPELINE_CACHE variables the command line reads
// (apps/env_options.cpp) into VulkanOptions: set, unset and odd values.
#include <gtest/gtest.h>

#include <stdlib.h>

#include "env_options.h"

namespace ptq::apps {
namespace {

const char* const kNames[] = {"PTQ_VULKAN_SPLIT_K", "PTQ_VULKAN_UPLOAD", "PTQ_VULKAN_SHAPE_PASS",
                              "PTQ_VULKAN_TIMING", "PTQ_PIPELINE_CACHE", "PTQ_WINOGRAD"};

// Every variable unset, then `name` set to `value` (null: none), for the test's scope.
class Env {
 public:
  explicit Env(const char* name = nullptr, const char* value = nullptr) {
    for (const char* n : kNames) unsetenv(n);
    if (name != nullptr) setenv(name, value, 1);
  }
  ~Env() {
    for (const char* n : kNames) unsetenv(n);
  }
};

TEST(VulkanEnvOptions, UnsetLeavesTheDefaults) {
  const Env env;
  const vulkan::VulkanOptions o = vulkan_options_from_env();
  const vulkan::VulkanOptions d;
  EXPECT_EQ(o.conv_split_k, 0);
  EXPECT_EQ(o.input_staging, vulkan::VulkanOptions::InputStaging::kDevice);
  EXPECT_FALSE(o.cpu_shape_pass);
  EXPECT_FALSE(o.timing);
  EXPECT_EQ(o.pipeline_cache_dir, d.pipeline_cache_dir);
  EXPECT_EQ(o.pipeline_cache_dir, vulkan::default_pipeline_cache_dir());
  EXPECT_TRUE(o.cpu.winograd);
}

TEST(VulkanEnvOptions, EachVariableSetsItsField) {
  {
    const Env env("PTQ_VULKAN_SPLIT_K", "4");
    EXPECT_EQ(vulkan_options_from_env().conv_split_k, 4);
  }
  {
    const Env env("PTQ_VULKAN_SPLIT_K", "-3");
    EXPECT_EQ(vulkan_options_from_env().conv_split_k, 0);
  }
  {
    const Env env("PTQ_VULKAN_UPLOAD", "host");
    EXPECT_EQ(vulkan_options_from_env().input_staging, vulkan::VulkanOptions::InputStaging::kHost);
  }
  {
    const Env env("PTQ_VULKAN_UPLOAD", "device");
    EXPECT_EQ(vulkan_options_from_env().input_staging,
              vulkan::VulkanOptions::InputStaging::kDevice);
  }
  {
    const Env env("PTQ_VULKAN_SHAPE_PASS", "cpu");
    EXPECT_TRUE(vulkan_options_from_env().cpu_shape_pass);
  }
  {
    const Env env("PTQ_VULKAN_TIMING", "");
    EXPECT_TRUE(vulkan_options_from_env().timing);
  }
  {
    const Env env("PTQ_PIPELINE_CACHE", "/tmp/ptq-pipelines");
    EXPECT_EQ(vulkan_options_from_env().pipeline_cache_dir, "/tmp/ptq-pipelines");
  }
  {
    const Env env("PTQ_PIPELINE_CACHE", "off");
    EXPECT_EQ(vulkan_options_from_env().pipeline_cache_dir, "");
  }
  {
    const Env env("PTQ_WINOGRAD", "0");
    EXPECT_FALSE(vulkan_options_from_env().cpu.winograd);
  }
}

}  // namespace
}  // namespace ptq::apps
