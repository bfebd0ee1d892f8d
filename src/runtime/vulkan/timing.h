// VulkanOptions::timing (`ptq`: PTQ_VULKAN_TIMING=1): the Vulkan backend prints where its time
// goes to stderr (device start and stop, a new program's build steps, per-step GPU times of its
// first runs); Context::timing() tells whether it is on.
#pragma once

#include "../step_report.h"  // src/runtime

namespace ptq::vulkan {

using runtime::ms_since;

}  // namespace ptq::vulkan
