// The options every model-running subcommand shares to pick where the model runs:
// --backend cpu|vulkan, --device N (Vulkan device index, see `ptq info --devices`; a list
// N,M,... for calibration workers on several devices, or one per MPI rank), --strict (Vulkan:
// refuse to run any op on the CPU), --cpu-isa (the CPU kernels' instruction-set level). Builds
// the Executor those options describe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ptq/dist.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
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

// The device of this rank of an MPI job on Vulkan: device list[rank mod its length], or
// without a list, rank mod the number of devices. Nothing to do for one process or the CPU.
Status pick_rank_device(BackendOptions& options, const dist::Communicator& comm);

// Adds --cpu-isa alone (`ptq info`).
void add_cpu_isa_option(CLI::App& app, std::string& cpu_isa);

// The CPU instruction-set level --cpu-isa asks for; a usage error for a level above what this
// CPU runs.
Expected<runtime::CpuIsa> cpu_isa_option(const std::string& cpu_isa);

// An executor and what it borrows (the CPU backend; the Vulkan executor owns its own state).
struct Engine {
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
};

// For --backend vulkan, opens the device on another thread from construction on, so that it
// starts while the model loads (~0.17 s on the H100 host); make_engine takes it. Does nothing
// for --backend cpu or in a build without Vulkan.
class EarlyDevice {
 public:
  explicit EarlyDevice(const BackendOptions& options);
  ~EarlyDevice();
  EarlyDevice(const EarlyDevice&) = delete;
  EarlyDevice& operator=(const EarlyDevice&) = delete;

  struct Opening;
  std::unique_ptr<Opening> opening;
};

// The executor for `model` on the chosen backend with `threads` CPU threads, on `early`'s
// device when given. With Vulkan, ops that run on the CPU instead are listed once per input
// shape on stderr unless `quiet` (refused with --strict). A usage error when this build has no
// Vulkan backend.
Expected<Engine> make_engine(const ir::Model& model, const BackendOptions& options, int threads,
                             bool quiet, EarlyDevice* early = nullptr);

// The workers of a calibration (calibration::calibrate over several executors): `engine` and,
// on the CPU, more executors of the same model on its backend, the threads split evenly
// between them. Smaller teams run a batch's ops with less waiting at each op's end; each
// worker holds its own activations (packed weights are shared).
struct CalibrationEngines {
  Engine engine;
  std::vector<std::unique_ptr<runtime::Executor>> more;
  std::vector<runtime::Executor*> executors() const;
};

// `workers` 0 chooses: on the CPU one per kThreadsPerWorker threads, at most kMostWorkers (each
// holds a batch's activations: ResNet-18 at batch 32 ~160 MiB), on Vulkan one (its executor
// has the device to itself; more is a usage error). On the 16-thread GPU host 4 workers
// calibrated ResNet-18 in 1.06-1.35 s against 1.43-1.60 s for one (docs/perf-history.md).
inline constexpr int kThreadsPerWorker = 4;
inline constexpr int kMostWorkers = 4;
Expected<CalibrationEngines> make_calibration_engines(const ir::Model& model,
                                                      const BackendOptions& options, int threads,
                                                      int workers, bool quiet,
                                                      EarlyDevice* early = nullptr);

// On Vulkan with a device list, one worker per listed device (an index may repeat: two
// workers on one device); on the CPU, `workers` as above.
// A usage error for more than one worker off the CPU; commands check it before they start a
// device.
Status check_workers(const BackendOptions& options, int workers);

// Adds --workers (calibration workers, 0: automatic) to `app`.
void add_workers_option(CLI::App& app, int& workers);

// True when this build includes the Vulkan backend.
bool vulkan_available();

// `ptq info --devices [--json]`: the Vulkan devices and the features the kernels use. A
// runtime error when the build has no Vulkan backend or no loader/driver is found.
Status print_vulkan_devices(bool json);

}  // namespace ptq::apps
