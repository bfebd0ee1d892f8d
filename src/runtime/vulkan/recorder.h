// Recording compute work into a command buffer: dispatches with their descriptor sets and push
// constants, copies, fills and barriers. A recording is made once per prepared input shape and
// submitted again for every batch, so descriptor sets live as long as the recording.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "buffer.h"
#include "context.h"

namespace ptq::vulkan {

// One storage-buffer binding: a byte range of a buffer.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;

  Binding() = default;
  Binding(VkBuffer b, VkDeviceSize off, VkDeviceSize r) : buffer(b), offset(off), range(r) {}
  Binding(const DeviceTensor& t) : buffer(t.buffer), offset(t.offset), range(t.bytes) {}  // NOLINT
  Binding(const Buffer& b) : buffer(b.handle()), offset(0), range(b.size()) {}  // NOLINT
};

// Descriptor pools that grow as sets are asked for; all sets die with the arena.
class DescriptorArena {
 public:
  explicit DescriptorArena(VkDevice device) : device_(device) {}
  DescriptorArena(const DescriptorArena&) = delete;
  DescriptorArena& operator=(const DescriptorArena&) = delete;
  ~DescriptorArena();
  Expected<VkDescriptorSet> allocate(VkDescriptorSetLayout layout, uint32_t buffers);

 private:
  Status grow();
  VkDevice device_;
  std::vector<VkDescriptorPool> pools_;
  uint32_t sets_left_ = 0;
  uint32_t buffers_left_ = 0;
};

class Recorder {
 public:
  // With cmd == VK_NULL_HANDLE the recorder records nothing and only lists the shaders it is
  // asked to dispatch (shaders()), so that a program's pipelines can be built up front at once.
  Recorder(Context& ctx, DescriptorArena& arena, VkCommandBuffer cmd)
      : ctx_(ctx), arena_(arena), cmd_(cmd) {}

  Context& context() { return ctx_; }
  VkCommandBuffer command_buffer() const { return cmd_; }

  // Records shader `name` over groups (x, y, z) with `bindings` at 0..n-1 and `push` bytes of
  // push constants (at most 128). A barrier is put before it when earlier work is unfenced.
  Status dispatch(std::string_view name, std::span<const Binding> bindings, const void* push,
                  uint32_t push_bytes, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
  template <typename Push>
  Status dispatch(std::string_view name, std::initializer_list<Binding> bindings, const Push& push,
                  uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
    static_assert(sizeof(Push) <= 128, "push constants are limited to 128 bytes");
    return dispatch(name, std::span<const Binding>(bindings.begin(), bindings.size()), &push,
                    sizeof(Push), gx, gy, gz);
  }
  void copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
            VkDeviceSize bytes);
  void fill(VkBuffer dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t value);
  // Makes all recorded writes visible to what follows (shaders, copies, the host).
  void barrier();
  // Lets the next dispatch or copy run without a barrier against what is recorded so far: for
  // work that reads nothing the unfenced work writes (the pieces of a Concat or Split).
  void no_barrier_needed() { skip_ = true; }
  int64_t dispatches() const { return dispatches_; }
  // The (shader, buffers) pairs a listing recorder was asked for.
  const std::vector<std::pair<std::string, uint32_t>>& shaders() const { return shaders_; }

 private:
  Context& ctx_;
  DescriptorArena& arena_;
  VkCommandBuffer cmd_;
  bool pending_ = false;  // work recorded since the last barrier
  bool skip_ = false;     // the next command needs no barrier
  int64_t dispatches_ = 0;
  std::vector<std::pair<std::string, uint32_t>> shaders_;
};

// Number of workgroups of `local` threads to cover `n` items, capped for grid-stride shaders
// (every elementwise shader loops over its range, so the cap only limits parallelism).
uint32_t groups_for(int64_t n, uint32_t local, uint32_t cap = 65535);

}  // namespace ptq::vulkan
