// Choosing where a model runs: a backend by name ("cpu" or "vulkan"), its executor, and how
// many calibration workers share the threads. What `ptq --backend/--device/--strict/--cpu-isa
// --workers` and the Python module's `backend=` describe; the options come filled in (the
// command line reads its PTQ_* variables into them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ptq/dist.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/status.h"
#include "ptq/vulkan.h"

namespace ptq::runtime {

struct EngineOptions {
  std::string backend = "cpu";  // "cpu" or "vulkan"
  int device = 0;               // the Vulkan device an engine opens
  std::vector<int> devices;     // Vulkan: a calibration worker per listed device; empty: none
  bool strict = false;          // Vulkan: refuse to run any op on the CPU
  // The CPU backend's, also Vulkan's for the ops it runs on the CPU; `cpu.isa` is checked
  // against this CPU when an engine is made.
  CpuBackendOptions cpu;
  ExecutorOptions executor;  // the CPU executors' (threads: set per engine)
  // Vulkan's other options (device, strict, cpu and threads: from the fields above).
  vulkan::VulkanOptions vulkan;
};

// `asked` threads, or with 0 (or less) one per hardware thread.
int thread_count(int asked);

// An executor and what it borrows (the CPU backend; the Vulkan executor owns its own state).
struct Engine {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Executor> executor;
};

// For the Vulkan backend, opens the device on another thread from construction on, so that it
// starts while the model loads; make_engine takes it. Does nothing for the CPU or in a build
// without Vulkan.
class EarlyDevice {
 public:
  explicit EarlyDevice(const EngineOptions& options);
  ~EarlyDevice();
  EarlyDevice(const EarlyDevice&) = delete;
  EarlyDevice& operator=(const EarlyDevice&) = delete;

  struct Opening;
  std::unique_ptr<Opening> opening;
};

// The executor for `model` on `options.backend` with `threads` CPU threads, on `early`'s device
// when given. A usage error for an unknown backend, Vulkan options on the CPU, a CPU level
// above this CPU's, or Vulkan in a build without it.
Expected<Engine> make_engine(const ir::Model& model, const EngineOptions& options, int threads,
                             EarlyDevice* early = nullptr);

// The workers of a calibration (calibration::calibrate over several executors): `engine` and
// the executors of the others. Smaller teams run a batch's ops with less waiting at each op's
// end; each worker holds its own activations (packed weights are shared).
struct CalibrationEngines {
  Engine engine;
  std::vector<std::unique_ptr<Executor>> more;
  std::vector<Executor*> executors() const;
};

// `workers` 0 chooses: on the CPU one per kThreadsPerWorker threads, at most kMostWorkers (each
// holds a batch's activations: ResNet-18 at batch 32 ~160 MiB), on Vulkan one per listed
// device (an index may repeat: two workers on one device), else one. The threads are split
// evenly between the workers.
inline constexpr int kThreadsPerWorker = 4;
inline constexpr int kMostWorkers = 4;
Expected<CalibrationEngines> make_calibration_engines(const ir::Model& model,
                                                      const EngineOptions& options, int threads,
                                                      int workers, EarlyDevice* early = nullptr);

// A usage error for more than one worker off the CPU, or a device list on the CPU; commands
// check it before they start a device.
Status check_workers(const EngineOptions& options, int workers);

// The device of this rank of a multi-process job on Vulkan: devices[rank mod their number],
// or without a list, rank mod the number of devices. Nothing to do for one process or the CPU.
Status pick_rank_device(EngineOptions& options, const dist::Communicator& comm);

}  // namespace ptq::runtime
