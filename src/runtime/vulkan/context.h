// The Vulkan context: instance, one physical device picked by index, a compute queue, and the
// features the kernels depend on. Everything else (buffers, pipelines, recordings) borrows it.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptq/status.h"
#include "ptq/vulkan.h"

namespace ptq::vulkan {

class Pipeline;

// "vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY" as a runtime error Status.
Status vk_status(VkResult r, std::string_view what);
#define PTQ_VK(call) PTQ_RETURN_IF_ERROR(::ptq::vulkan::vk_status((call), #call))

class Context {
 public:
  // Opens device `options.device` (of the loader's list), its pipelines cached in
  // `options.pipeline_cache_dir`, reporting its times when `options.timing`. Needs Vulkan 1.2
  // and a compute queue.
  static Expected<std::unique_ptr<Context>> create(const VulkanOptions& options);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  VkDevice device() const { return device_; }
  VkPhysicalDevice physical() const { return physical_; }
  VkQueue queue() const { return queue_; }
  VkCommandPool command_pool() const { return command_pool_; }
  const VkPhysicalDeviceLimits& limits() const { return props_.limits; }
  const DeviceInfo& info() const { return info_; }
  // Exact integer histogram bins need 64-bit integers in shaders.
  bool exact_histograms() const { return info_.int64; }
  // Print where the time goes (VulkanOptions::timing), for this device's executors too.
  bool timing() const { return timing_; }

  // A memory type index with `required` flags among `type_bits`, preferring `preferred` too.
  Expected<uint32_t> memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                 VkMemoryPropertyFlags preferred) const;

  // The compute pipeline of embedded shader `name` with `bindings` storage buffers and
  // `push_bytes` of push constants; built once and cached for the context's life.
  Expected<const Pipeline*> pipeline(std::string_view name, uint32_t bindings, uint32_t push_bytes);
  // Builds the pipelines of `shaders` (name, storage buffers) not built yet, several at once
  // (drivers compile each on the calling thread), with 128 bytes of push constants.
  Status prepare_pipelines(const std::vector<std::pair<std::string, uint32_t>>& shaders);

  // What tests check about the pipelines: the names built (ahead or on demand), those a
  // recording or a statistics dispatch asked for, how many of those were not built ahead, and
  // the bytes of pipeline cache read from disk at start.
  std::set<std::string> built_pipelines() const;
  const std::set<std::string>& used_pipelines() const { return used_; }
  int built_on_demand() const { return built_on_demand_; }
  size_t pipeline_cache_loaded_bytes() const { return cache_loaded_bytes_; }

  // Submits `cmd` and waits for it to finish.
  Status submit_and_wait(VkCommandBuffer cmd);
  Expected<VkCommandBuffer> allocate_command_buffer();
  void free_command_buffer(VkCommandBuffer cmd);

 private:
  Context() = default;
  Status init(int index, const std::string& cache_dir);
  Expected<std::unique_ptr<Pipeline>> build_pipeline(std::string_view name, uint32_t bindings,
                                                     uint32_t push_bytes) const;
  void open_pipeline_cache(const std::string& dir);
  void save_pipeline_cache();

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  bool timing_ = false;
  std::string cache_file_;        // the pipeline cache on disk ("" when off)
  size_t cache_loaded_bytes_ = 0; // its size when read: written back only when it grew
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties memory_{};
  DeviceInfo info_;
  std::unordered_map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::set<std::string> used_;
  int built_on_demand_ = 0;
};

// A compute pipeline with its layouts (storage buffers at bindings 0..n-1, push constants).
class Pipeline {
 public:
  Pipeline(VkDevice device) : device_(device) {}
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();

  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkShaderModule module = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t push_bytes = 0;

 private:
  VkDevice device_;
};

}  // namespace ptq::vulkan
