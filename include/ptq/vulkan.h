// The Vulkan GPU runtime (ptq_runtime_vulkan, built when PTQ_HAVE_VULKAN is defined): an
// Executor that runs a model's ops as compute shaders, with CPU fallback for ops that have no
// Vulkan kernel, and calibration statistics (min/max, histograms) computed on the device.
// See docs/VULKAN.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::vulkan {

// $XDG_CACHE_HOME/ptqkit, else ~/.cache/ptqkit; empty when neither variable is set.
std::string default_pipeline_cache_dir();

struct VulkanOptions {
  int device = 0;       // index into list_vulkan_devices()
  bool strict = false;  // refuse to run an op on the CPU (error naming the node)
  int threads = 1;      // CPU threads for the shape pass and fallback kernels
  // Told once per prepared input shape which nodes run on the CPU instead ("Op 'name'"),
  // when there are any. Null: say nothing.
  std::function<void(const std::vector<std::string>& fallback_nodes)> on_fallback;
  // Bytes of observed tensors kept on the device before their statistics are read; past this
  // the command stream is split so memory stays bounded during calibration.
  int64_t observe_budget_bytes = int64_t{1} << 30;
  // K slices per implicit-GEMM convolution (split-K): 1 off, N > 1 up to N for every one;
  // 0: automatic (split only convolutions whose output tiles leave the GPU's multiprocessors
  // idle, as layers 3 and 4 of ResNet-18 at batch 32 do). `ptq`: PTQ_VULKAN_SPLIT_K.
  int conv_split_k = 0;
  // Where inputs wait for the GPU. kDevice: host-visible device memory where the device has some
  // (one trip over the bus), else host memory; kHost: host memory, copied over by the GPU.
  // `ptq`: PTQ_VULKAN_UPLOAD=host.
  enum class InputStaging { kDevice, kHost };
  InputStaging input_staging = InputStaging::kDevice;
  // Take every new input shape's value shapes from a CPU run, never from the declared value
  // types (to compare the two). `ptq`: PTQ_VULKAN_SHAPE_PASS=cpu.
  bool cpu_shape_pass = false;
  // Print where the time goes to stderr: device start and stop, a new program's build steps,
  // per-step GPU times of its first runs. `ptq`: PTQ_VULKAN_TIMING=1.
  bool timing = false;
  // The folder compiled pipelines persist in between runs (one file per device and driver);
  // empty: none kept. `ptq`: PTQ_PIPELINE_CACHE (a folder, or "off").
  std::string pipeline_cache_dir = default_pipeline_cache_dir();
  // The CPU backend of the shape pass and of the ops that run on the CPU.
  runtime::CpuBackendOptions cpu;
};

// What ptq info --devices prints about one physical device.
struct DeviceInfo {
  int index = 0;
  std::string name;
  std::string type;            // "discrete GPU", "integrated GPU", "CPU", "virtual GPU", "other"
  std::string api_version;     // "1.3.239"
  std::string driver;          // driver name and info, when the driver says
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  int64_t device_local_bytes = 0;  // largest device-local heap
  uint32_t subgroup_size = 0;
  uint32_t max_shared_memory = 0;  // bytes per workgroup
  uint64_t max_storage_buffer_range = 0;
  bool float64 = false;            // shaderFloat64
  bool int64 = false;              // shaderInt64 (exact histogram bins)
  bool cooperative_matrix = false; // VK_KHR/NV_cooperative_matrix (listed, not used yet)
  bool usable = false;             // Vulkan 1.2+ with a compute queue
};

// Every physical device the system loader reports, in loader order. Fails when no Vulkan
// loader or driver can be found.
Expected<std::vector<DeviceInfo>> list_vulkan_devices();

class Context;

// A Vulkan device opened before its model is known. Starting a device costs 0.1-0.2 s with
// some drivers (the H100's: ~0.17 s), so a command can open it on another thread while the
// model loads, then hand it to make_vulkan_executor.
class OpenedDevice {
 public:
  explicit OpenedDevice(std::unique_ptr<Context> context);
  ~OpenedDevice();
  OpenedDevice(const OpenedDevice&) = delete;
  OpenedDevice& operator=(const OpenedDevice&) = delete;
  std::unique_ptr<Context> take();

 private:
  std::unique_ptr<Context> context_;
};

// Opens device `options.device` of list_vulkan_devices() (Vulkan 1.2 and a compute queue
// needed), with its pipeline cache and timing as `options` say.
Expected<std::unique_ptr<OpenedDevice>> open_vulkan_device(const VulkanOptions& options);

// An executor running `model` on Vulkan device `options.device`, or on `opened` when given
// (opened by open_vulkan_device(options)). `model` is borrowed and must outlive the
// executor. Observers get ObservedTensor::host == nullptr for tensors that live on the device;
// their statistics run as shaders there and only the results are read back.
Expected<std::unique_ptr<runtime::Executor>> make_vulkan_executor(
    const ir::Model& model, const VulkanOptions& options,
    std::unique_ptr<OpenedDevice> opened = nullptr);

}  // namespace ptq::vulkan
