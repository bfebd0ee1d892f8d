// Internal to ptq_runtime and its backends: the per-step time report that PTQ_CPU_TIMING (the
// CPU executor) and PTQ_VULKAN_TIMING (the Vulkan backend's timestamp queries) print to stderr,
// and the clock reading both share.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptq::runtime {

// Milliseconds of wall time since `t0`.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Prints `headline` (one line), then each op type's time per run and the 24 costliest steps
// under "ptq: WHO: costliest steps:". ms[s] is step s's time summed over `runs` runs, labels[s]
// and ops[s] its node and op type; steps with timed[s] false were not timed and are left out.
void print_step_report(std::string_view who, std::string_view headline, int64_t runs,
                       const std::vector<double>& ms, const std::vector<bool>& timed,
                       const std::vector<std::string>& labels, const std::vector<std::string>& ops);

}  // namespace ptq::runtime
