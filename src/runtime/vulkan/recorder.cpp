#include "recorder.h"

#include <algorithm>
#include <cstring>

namespace ptq::vulkan {

namespace {
constexpr uint32_t kSetsPerPool = 512;
constexpr uint32_t kBuffersPerPool = kSetsPerPool * 6;
}  // namespace

DescriptorArena::~DescriptorArena() {
  for (VkDescriptorPool p : pools_) vkDestroyDescriptorPool(device_, p, nullptr);
}

Status DescriptorArena::grow() {
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kBuffersPerPool};
  VkDescriptorPoolCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  ci.maxSets = kSetsPerPool;
  ci.poolSizeCount = 1;
  ci.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  PTQ_VK(vkCreateDescriptorPool(device_, &ci, nullptr, &pool));
  pools_.push_back(pool);
  sets_left_ = kSetsPerPool;
  buffers_left_ = kBuffersPerPool;
  return Status::ok();
}

Expected<VkDescriptorSet> DescriptorArena::allocate(VkDescriptorSetLayout layout,
                                                    uint32_t buffers) {
  if (sets_left_ == 0 || buffers_left_ < buffers) PTQ_RETURN_IF_ERROR(grow());
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = pools_.back();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  PTQ_VK(vkAllocateDescriptorSets(device_, &ai, &set));
  --sets_left_;
  buffers_left_ -= buffers;
  return set;
}

Status Recorder::dispatch(std::string_view name, std::span<const Binding> bindings,
                          const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy,
                          uint32_t gz) {
  if (cmd_ == VK_NULL_HANDLE) {
    shaders_.emplace_back(std::string(name), static_cast<uint32_t>(bindings.size()));
    return Status::ok();
  }
  PTQ_ASSIGN_OR_RETURN(const Pipeline* p,
                       ctx_.pipeline(name, static_cast<uint32_t>(bindings.size()), 128));
  if (p->bindings != bindings.size()) {
    return runtime_error("vulkan: shader '{}' used with {} buffers, built with {}", name,
                         bindings.size(), p->bindings);
  }
  if (gx == 0 || gy == 0 || gz == 0) return Status::ok();
  PTQ_ASSIGN_OR_RETURN(VkDescriptorSet set,
                       arena_.allocate(p->set_layout, static_cast<uint32_t>(bindings.size())));
  std::vector<VkDescriptorBufferInfo> infos(bindings.size());
  std::vector<VkWriteDescriptorSet> writes(bindings.size());
  for (size_t i = 0; i < bindings.size(); ++i) {
    infos[i] = VkDescriptorBufferInfo{bindings[i].buffer, bindings[i].offset,
                                      std::max<VkDeviceSize>(bindings[i].range, 4)};
    writes[i] = VkWriteDescriptorSet{};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vkUpdateDescriptorSets(ctx_.device(), static_cast<uint32_t>(writes.size()), writes.data(), 0,
                         nullptr);
  if (!skip_) barrier();
  skip_ = false;
  vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
  vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, nullptr);
  if (push_bytes > 0) {
    // The layout's range is 128 bytes; pad so every declared member is defined.
    uint8_t padded[128] = {};
    std::memcpy(padded, push, std::min<uint32_t>(push_bytes, 128));
    vkCmdPushConstants(cmd_, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 128, padded);
  }
  vkCmdDispatch(cmd_, gx, gy, gz);
  pending_ = true;
  ++dispatches_;
  return Status::ok();
}

void Recorder::copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
                    VkDeviceSize bytes) {
  if (bytes == 0 || cmd_ == VK_NULL_HANDLE) return;
  if (!skip_) barrier();
  skip_ = false;
  VkBufferCopy region{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(cmd_, src, dst, 1, &region);
  pending_ = true;
}

void Recorder::fill(VkBuffer dst, VkDeviceSize offset, VkDeviceSize bytes, uint32_t value) {
  if (bytes == 0 || cmd_ == VK_NULL_HANDLE) return;
  if (!skip_) barrier();
  skip_ = false;
  vkCmdFillBuffer(cmd_, dst, offset, (bytes + 3) / 4 * 4, value);
  pending_ = true;
}

void Recorder::barrier() {
  if (!pending_ || cmd_ == VK_NULL_HANDLE) return;
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                     VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                     VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                           VK_PIPELINE_STAGE_HOST_BIT,
                       0, 1, &mb, 0, nullptr, 0, nullptr);
  pending_ = false;
}

uint32_t groups_for(int64_t n, uint32_t local, uint32_t cap) {
  if (n <= 0) return 0;
  const int64_t g = (n + local - 1) / local;
  return static_cast<uint32_t>(std::min<int64_t>(g, cap));
}

}  // namespace ptq::vulkan
