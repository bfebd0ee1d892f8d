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
  // 0: $PTQ_VULKAN_SPLIT_K if set, else automatic (split only convolutions whose output tiles
  // leave the GPU's multiprocessors idle, as layers 3 and 4 of ResNet-18 at batch 32 do).
  int conv_split_k = 0;
  // Where inputs wait for the GPU. kDevice: host-visible device memory where the device has some
  // (one trip over the bus), else host memory; kHost: host memory, copied over by the GPU.
  // kAuto: kHost when $PTQ_VULKAN_UPLOAD is "host", else kDevice.
  enum class InputStaging { kAuto, kDevice, kHost };
  InputStaging input_staging = InputStaging::kAuto;
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

// Opens device `index` of list_vulkan_devices() (Vulkan 1.2 and a compute queue needed).
Expected<std::unique_ptr<OpenedDevice>> open_vulkan_device(int index);

// An executor running `model` on Vulkan device `options.device`, or on `opened` when given
// (opened by open_vulkan_device(options.device)). `model` is borrowed and must outlive the
// executor. Observers get ObservedTensor::host == nullptr for tensors that live on the device;
// their statistics run as shaders there and only the results are read back.
Expected<std::unique_ptr<runtime::Executor>> make_vulkan_executor(
    const ir::Model& model, const VulkanOptions& options,
    std::unique_ptr<OpenedDevice> opened = nullptr);

}  // namespace ptq::vulkan
