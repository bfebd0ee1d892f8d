// PTQ_VULKAN_TIMING=1: the Vulkan backend prints where its time goes to stderr (device start
// and stop, a new program's build steps, per-step GPU times of its first runs).
#pragma once

#include <chrono>
#include <cstdlib>

namespace ptq::vulkan {

inline bool timing_wanted() {
  static const bool wanted = std::getenv("PTQ_VULKAN_TIMING") != nullptr;
  return wanted;
}

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ptq::vulkan
