// The options every model-running subcommand shares to pick where the model runs:
// --backend cpu|vulkan, --device N (Vulkan device index, see `ptq info --devices`; a list
// N,M,... for calibration workers on several devices, or one per MPI rank), --strict (Vulkan:
// refuse to run any op on the CPU), --cpu-isa (the CPU kernels' instruction-set level), and
// --workers; what they describe is made by ptq/runtime/engine.h.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptq/runtime.h"
#include "ptq/runtime/engine.h"
#include "ptq/status.h"

namespace ptq::apps {

struct BackendOptions {
  std::string backend = "cpu";
  int device = 0;            // the device an engine opens
  std::vector<int> devices;  // --device as a list (commands that take one); empty: not given
  bool strict = false;
  std::string cpu_isa = "auto";
};

// Adds --backend, --device, --strict and --cpu-isa to `app`. With `device_list`, --device takes
// a comma-separated list (BackendOptions::devices; device is its first).
void add_backend_options(CLI::App& app, BackendOptions& options, bool device_list = false);

// Adds --cpu-isa alone (`ptq info`).
void add_cpu_isa_option(CLI::App& app, std::string& cpu_isa);

// The CPU instruction-set level --cpu-isa asks for; a usage error for a level above what this
// CPU runs.
Expected<runtime::CpuIsa> cpu_isa_option(const std::string& cpu_isa);

// The library's options for `options`, the PTQ_* variables read into them; unless `quiet`,
// the ops Vulkan runs on the CPU are listed once per input shape on stderr.
Expected<runtime::EngineOptions> engine_options(const BackendOptions& options, bool quiet);

// Adds --workers (calibration workers, 0: automatic) to `app`.
void add_workers_option(CLI::App& app, int& workers);

// `ptq info --devices [--json]`: the Vulkan devices and the features the kernels use. A
// runtime error when the build has no Vulkan backend or no loader/driver is found.
Status print_vulkan_devices(bool json);

}  // namespace ptq::apps
