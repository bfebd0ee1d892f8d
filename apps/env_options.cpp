#include "env_options.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "ptq/runtime/task_pool.h"

namespace ptq::apps {

namespace {

// The variable's value, or nullopt when it is not set.
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// Set at all (to anything, even empty): the switches PTQ_*_TIMING.
bool present(const char* name) { return env(name).has_value(); }

// Set to a non-empty value.
std::optional<std::string> given(const char* name) {
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

}  // namespace

bool phase_timing_from_env() { return present("PTQ_TIMING"); }

void set_process_options_from_env() {
  if (std::optional<std::string> us = given("PTQ_SPIN_US")) {
    runtime::set_idle_spin(std::chrono::microseconds(std::max(0L, std::atol(us->c_str()))));
  }
}

runtime::CpuBackendOptions cpu_backend_options_from_env() {
  runtime::CpuBackendOptions o;
  o.winograd = env("PTQ_WINOGRAD") != "0";
  return o;
}

runtime::ExecutorOptions executor_options_from_env(int threads) {
  runtime::ExecutorOptions o;
  o.threads = threads;
  o.step_timing = present("PTQ_CPU_TIMING");
  return o;
}

#ifdef PTQ_HAVE_VULKAN
vulkan::VulkanOptions vulkan_options_from_env() {
  vulkan::VulkanOptions o;
  if (std::optional<std::string> k = env("PTQ_VULKAN_SPLIT_K")) {
    o.conv_split_k = std::max(std::atoi(k->c_str()), 0);
  }
  if (env("PTQ_VULKAN_UPLOAD") == "host") {
    o.input_staging = vulkan::VulkanOptions::InputStaging::kHost;
  }
  o.cpu_shape_pass = env("PTQ_VULKAN_SHAPE_PASS") == "cpu";
  o.timing = present("PTQ_VULKAN_TIMING");
  if (std::optional<std::string> dir = given("PTQ_PIPELINE_CACHE")) {
    o.pipeline_cache_dir = *dir == "off" ? std::string() : *dir;
  }
  o.cpu = cpu_backend_options_from_env();
  return o;
}
#endif

}  // namespace ptq::apps
