// The PTQ_* environment variables: the one place the command line and the benchmarks read
// them. Each sets a field of a library options struct (the table in docs/DESIGN.md,
// "Environment variables"); the library itself reads none of them.
#pragma once

#include "ptq/runtime.h"

#ifdef PTQ_HAVE_VULKAN
#include "ptq/vulkan.h"
#endif

namespace ptq::apps {

// PTQ_TIMING: a command prints the time of each of its phases (phase_times.h).
bool phase_timing_from_env();

// PTQ_SPIN_US: how long the task pool's idle helpers watch for work (runtime::set_idle_spin),
// for the whole process; called once at start-up.
void set_process_options_from_env();

// PTQ_WINOGRAD=0: CpuBackendOptions::winograd off.
runtime::CpuBackendOptions cpu_backend_options_from_env();

// PTQ_CPU_TIMING: ExecutorOptions::step_timing; `threads` as given.
runtime::ExecutorOptions executor_options_from_env(int threads);

#ifdef PTQ_HAVE_VULKAN
// PTQ_VULKAN_SPLIT_K, PTQ_VULKAN_UPLOAD, PTQ_VULKAN_SHAPE_PASS, PTQ_VULKAN_TIMING and
// PTQ_PIPELINE_CACHE into their VulkanOptions fields, and the CPU backend's own into `cpu`.
vulkan::VulkanOptions vulkan_options_from_env();
#endif

}  // namespace ptq::apps
