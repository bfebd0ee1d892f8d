// PTQ_VULKAN_TIMING=1: the Vulkan backend prints where its time goes to stderr (device start
// and stop, a new program's build steps, per-step GPU times of its first runs).
#pragma once

#include <cstdlib>

#include "../step_report.h"  // src/runtime

namespace ptq::vulkan {

using runtime::ms_since;

inline bool timing_wanted() {
  static const bool wanted = std::getenv("PTQ_VULKAN_TIMING") != nullptr;
  return wanted;
}

}  // namespace ptq::vulkan
