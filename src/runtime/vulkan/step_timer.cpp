#include "step_timer.h"

#include <fmt/format.h>

#include <numeric>

#include "../step_report.h"  // src/runtime

namespace ptq::vulkan {

// Query slots: step s ends at s; block b starts at steps + b.
std::unique_ptr<StepTimer> StepTimer::create(Context& ctx, int steps, int blocks) {
  if (!ctx.limits().timestampComputeAndGraphics || ctx.limits().timestampPeriod <= 0.0f)
    return nullptr;
  VkQueryPoolCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  ci.queryCount = static_cast<uint32_t>(steps + blocks);
  VkQueryPool pool = VK_NULL_HANDLE;
  if (vkCreateQueryPool(ctx.device(), &ci, nullptr, &pool) != VK_SUCCESS) return nullptr;
  return std::unique_ptr<StepTimer>(new StepTimer(ctx, pool, steps, ctx.limits().timestampPeriod));
}

StepTimer::~StepTimer() { vkDestroyQueryPool(ctx_.device(), pool_, nullptr); }

void StepTimer::begin_block(VkCommandBuffer cmd, int block, int first_step, int end_step) {
  vkCmdResetQueryPool(cmd, pool_, static_cast<uint32_t>(steps_ + block), 1);
  if (end_step > first_step) {
    vkCmdResetQueryPool(cmd, pool_, static_cast<uint32_t>(first_step),
                        static_cast<uint32_t>(end_step - first_step));
  }
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_,
                      static_cast<uint32_t>(steps_ + block));
}

void StepTimer::end_step(VkCommandBuffer cmd, int step) {
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_,
                      static_cast<uint32_t>(step));
  timed_[static_cast<size_t>(step)] = true;
}

void StepTimer::collect(int block, int first_step, int end_step) {
  uint64_t start = 0;
  if (vkGetQueryPoolResults(ctx_.device(), pool_, static_cast<uint32_t>(steps_ + block), 1,
                            sizeof(start), &start, sizeof(start),
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS) {
    return;
  }
  if (block == 0) ++runs_;
  uint64_t prev = start;
  for (int s = first_step; s < end_step; ++s) {
    if (!timed_[static_cast<size_t>(s)]) continue;
    uint64_t t = 0;
    if (vkGetQueryPoolResults(ctx_.device(), pool_, static_cast<uint32_t>(s), 1, sizeof(t), &t,
                              sizeof(t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS) {
      return;
    }
    ms_[static_cast<size_t>(s)] += static_cast<double>(t - prev) * ns_per_tick_ * 1e-6;
    prev = t;
  }
}

void StepTimer::report(const std::vector<std::string>& labels,
                       const std::vector<std::string>& op_types) const {
  if (runs_ == 0) return;
  const double total = std::accumulate(ms_.begin(), ms_.end(), 0.0) / static_cast<double>(runs_);
  const std::string headline = fmt::format(
      "ptq: vulkan: GPU time per run {:.3f} ms over {} runs; by op type:", total, runs_);
  runtime::print_step_report("vulkan", headline, runs_, ms_, timed_, labels, op_types);
}

}  // namespace ptq::vulkan
