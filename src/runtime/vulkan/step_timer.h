// GPU time per program step from timestamp queries (PTQ_VULKAN_TIMING=1): a timestamp at the
// start of each submitted block and after each GPU step, read back after every submission and
// summed, then printed per op type and for the costliest steps when the program goes away.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <string>
#include <vector>

#include "context.h"

namespace ptq::vulkan {

class StepTimer {
 public:
  // Null when the device cannot time compute work.
  static std::unique_ptr<StepTimer> create(Context& ctx, int steps, int blocks);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  void begin_block(VkCommandBuffer cmd, int block, int first_step, int end_step);
  void end_step(VkCommandBuffer cmd, int step);
  // After block `block` (steps [first, end)) completed: adds its step times.
  void collect(int block, int first_step, int end_step);
  // One line per op type and per costliest step, averaged over the runs (labels[s] names step s).
  void report(const std::vector<std::string>& labels,
              const std::vector<std::string>& op_types) const;

 private:
  StepTimer(Context& ctx, VkQueryPool pool, int steps, double ns_per_tick)
      : ctx_(ctx),
        pool_(pool),
        steps_(steps),
        ns_per_tick_(ns_per_tick),
        ms_(static_cast<size_t>(steps), 0.0),
        timed_(static_cast<size_t>(steps), false) {}
  Context& ctx_;
  VkQueryPool pool_;
  int steps_;
  double ns_per_tick_;
  std::vector<double> ms_;     // summed over runs
  std::vector<bool> timed_;    // a timestamp follows this step
  int64_t runs_ = 0;
};

}  // namespace ptq::vulkan
