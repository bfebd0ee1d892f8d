#include "buffer.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "ptq/runtime/task_pool.h"

namespace ptq::vulkan {

Expected<Buffer> Buffer::create(Context& ctx, size_t bytes, Kind kind) {
  Buffer b;
  b.device_ = ctx.device();
  b.size_ = (std::max<size_t>(bytes, 16) + 255) / 256 * 256;
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = b.size_;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  PTQ_VK(vkCreateBuffer(b.device_, &bci, nullptr, &b.buffer_));
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(b.device_, b.buffer_, &req);
  const bool mapped = kind != Kind::kDevice;
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const VkMemoryPropertyFlags required =
      mapped ? host : VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  // Staging read back by the host is faster from cached memory when the device offers it.
  const VkMemoryPropertyFlags preferred =
      kind == Kind::kStaging  ? required | VK_MEMORY_PROPERTY_HOST_CACHED_BIT
      : kind == Kind::kUpload ? required | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                              : required;
  PTQ_ASSIGN_OR_RETURN(uint32_t type, ctx.memory_type(req.memoryTypeBits, required, preferred));
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = type;
  const VkResult r = vkAllocateMemory(b.device_, &mai, nullptr, &b.memory_);
  if (r != VK_SUCCESS) {
    b.memory_ = VK_NULL_HANDLE;
    if (kind == Kind::kUpload) return create(ctx, bytes, Kind::kStaging);  // the BAR is full
    return runtime_error("vulkan: cannot allocate {} bytes of {} memory ({})", req.size,
                         mapped ? "staging" : "device",
                         vk_status(r, "vkAllocateMemory").message());
  }
  PTQ_VK(vkBindBufferMemory(b.device_, b.buffer_, b.memory_, 0));
  if (mapped) PTQ_VK(vkMapMemory(b.device_, b.memory_, 0, VK_WHOLE_SIZE, 0, &b.mapped_));
  return b;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, VK_NULL_HANDLE);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
  }
  return *this;
}

void Buffer::reset() {
  if (device_ == VK_NULL_HANDLE) return;
  if (mapped_ != nullptr) vkUnmapMemory(device_, memory_);
  if (buffer_ != VK_NULL_HANDLE) vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) vkFreeMemory(device_, memory_, nullptr);
  device_ = VK_NULL_HANDLE;
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  size_ = 0;
}

Expected<Buffer> upload_buffer(Context& ctx, const void* data, size_t bytes) {
  const HostBytes one{data, bytes};
  PTQ_ASSIGN_OR_RETURN(std::vector<Buffer> device, upload_buffers(ctx, std::span(&one, 1)));
  return std::move(device[0]);
}

namespace {

// Records one copy per item from its range of `staging` into its device buffer and waits.
Status copy_all(Context& ctx, const Buffer& staging, const std::vector<VkDeviceSize>& at,
                const std::vector<Buffer>& device) {
  PTQ_ASSIGN_OR_RETURN(VkCommandBuffer cmd, ctx.allocate_command_buffer());
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  Status st = vk_status(vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
  if (st.is_ok()) {
    for (size_t i = 0; i < device.size(); ++i) {
      const VkBufferCopy region{at[i], 0, device[i].size()};
      vkCmdCopyBuffer(cmd, staging.handle(), device[i].handle(), 1, &region);
    }
    st = vk_status(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
  }
  if (st.is_ok()) st = ctx.submit_and_wait(cmd);
  ctx.free_command_buffer(cmd);
  return st;
}

// Copies every item to its place in the staging memory at `dst`, zeroing each buffer's tail,
// in pieces of 1 MiB on several threads: weights borrowed from the model file's mapping are
// read from disk (or the page cache) on first touch here.
void fill_staging(char* dst, std::span<const HostBytes> items, const std::vector<VkDeviceSize>& at,
                  const std::vector<Buffer>& device) {
  constexpr size_t kPiece = size_t{1} << 20;
  std::vector<std::pair<size_t, size_t>> pieces;  // (item, offset in it)
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t off = 0; off < items[i].bytes; off += kPiece) pieces.emplace_back(i, off);
    std::memset(dst + at[i] + items[i].bytes, 0, device[i].size() - items[i].bytes);
  }
  auto copy = [&](int64_t p) {
    const auto [i, off] = pieces[static_cast<size_t>(p)];
    std::memcpy(dst + at[i] + off, static_cast<const char*>(items[i].data) + off,
                std::min(kPiece, items[i].bytes - off));
  };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads = pieces.size() < 4 ? 1 : static_cast<int>(std::min(8u, cores));
  runtime::run_tasks(threads, static_cast<int64_t>(pieces.size()), copy);
}

}  // namespace

Expected<std::vector<Buffer>> upload_buffers(Context& ctx, std::span<const HostBytes> items) {
  std::vector<Buffer> device;
  std::vector<VkDeviceSize> at;
  VkDeviceSize total = 0;
  for (const HostBytes& item : items) {
    PTQ_ASSIGN_OR_RETURN(Buffer b, Buffer::create(ctx, item.bytes, Buffer::Kind::kDevice));
    at.push_back(total);
    total += b.size();  // a multiple of 256: every copy starts aligned
    device.push_back(std::move(b));
  }
  if (items.empty()) return device;
  PTQ_ASSIGN_OR_RETURN(Buffer staging, Buffer::create(ctx, total, Buffer::Kind::kStaging));
  fill_staging(static_cast<char*>(staging.mapped()), items, at, device);
  PTQ_RETURN_IF_ERROR(copy_all(ctx, staging, at, device));
  return device;
}

}  // namespace ptq::vulkan
