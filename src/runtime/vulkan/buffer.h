// Device buffers: device-local storage (activations, weights) and host-visible staging
// (inputs, outputs, statistics read back). Move-only owners of a VkBuffer and its memory.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "context.h"
#include "ptq/ir.h"

namespace ptq::vulkan {

class Buffer {
 public:
  // kUpload: host-written staging for inputs, placed in device-local memory the host can map
  // (a GPU's BAR) where the device has it, so the host's copy is the only trip over the bus;
  // else as kStaging.
  enum class Kind { kDevice, kStaging, kUpload };

  Buffer() = default;
  // A buffer of at least `bytes` (rounded up to 256). Staging buffers are host-visible,
  // coherent and mapped for their whole life.
  static Expected<Buffer> create(Context& ctx, size_t bytes, Kind kind);
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  VkBuffer handle() const { return buffer_; }
  size_t size() const { return size_; }
  void* mapped() const { return mapped_; }
  bool valid() const { return buffer_ != VK_NULL_HANDLE; }

 private:
  void reset();

  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  size_t size_ = 0;
  void* mapped_ = nullptr;
};

// Where one tensor lives on the device: a range of a buffer, plus its type and shape.
struct DeviceTensor {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // bytes, aligned for storage-buffer binding
  VkDeviceSize bytes = 0;   // what a binding of this tensor covers (>= the data)
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;

  int64_t size() const { return ir::num_elements(shape); }
};

// Copies host bytes into a new device buffer through a temporary staging buffer (weights and
// other constants, uploaded once at prepare).
Expected<Buffer> upload_buffer(Context& ctx, const void* data, size_t bytes);

struct HostBytes {
  const void* data = nullptr;
  size_t bytes = 0;
};

// upload_buffer for many arrays at once: one staging buffer, one command buffer, one wait. A
// model's weights are ~100 arrays; one submission each cost a wait and two allocations apiece.
Expected<std::vector<Buffer>> upload_buffers(Context& ctx, std::span<const HostBytes> items);

}  // namespace ptq::vulkan
