#include "ptq/runtime/engine.h"

#include <algorithm>
#include <future>
#include <thread>

namespace ptq::runtime {

int thread_count(int asked) {
  return asked > 0 ? asked : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

// The level `cpu.isa` asks for; a usage error for one above what this CPU runs.
Status check_cpu_isa(const CpuBackendOptions& cpu) { return resolve_cpu_isa(cpu.isa).status(); }

Expected<Engine> make_cpu_engine(const ir::Model& model, const EngineOptions& options,
                                 int threads) {
  if (options.strict || options.device != 0) {
    return usage_error("--device and --strict apply to --backend vulkan");
  }
  PTQ_RETURN_IF_ERROR(check_cpu_isa(options.cpu));
  Engine e;
  e.backend = make_cpu_backend(options.cpu);
  ExecutorOptions eo = options.executor;
  eo.threads = threads;
  PTQ_ASSIGN_OR_RETURN(e.executor, Executor::create(model, *e.backend, eo));
  return e;
}

#ifdef PTQ_HAVE_VULKAN
vulkan::VulkanOptions vulkan_options(const EngineOptions& options, int threads) {
  vulkan::VulkanOptions vo = options.vulkan;
  vo.device = options.device;
  vo.strict = options.strict;
  vo.cpu = options.cpu;
  vo.threads = threads;
  return vo;
}
#endif

}  // namespace

#ifdef PTQ_HAVE_VULKAN
struct EarlyDevice::Opening {
  std::future<Expected<std::unique_ptr<vulkan::OpenedDevice>>> device;
};

EarlyDevice::EarlyDevice(const EngineOptions& options) {
  if (options.backend != "vulkan") return;
  opening = std::make_unique<Opening>();
  vulkan::VulkanOptions vo = options.vulkan;
  vo.device = options.device;
  vo.on_fallback = nullptr;  // the executor's, not the device's
  opening->device = std::async(std::launch::async, [vo] { return vulkan::open_vulkan_device(vo); });
}
#else
struct EarlyDevice::Opening {};
EarlyDevice::EarlyDevice(const EngineOptions&) {}
#endif

EarlyDevice::~EarlyDevice() = default;

Expected<Engine> make_engine(const ir::Model& model, const EngineOptions& options, int threads,
                             EarlyDevice* early) {
  if (options.backend == "cpu") return make_cpu_engine(model, options, threads);
  if (options.backend != "vulkan")
    return usage_error("unknown backend '{}' (cpu or vulkan)", options.backend);
#ifdef PTQ_HAVE_VULKAN
  PTQ_RETURN_IF_ERROR(check_cpu_isa(options.cpu));
  std::unique_ptr<vulkan::OpenedDevice> opened;
  if (early != nullptr && early->opening != nullptr && early->opening->device.valid()) {
    PTQ_ASSIGN_OR_RETURN(opened, early->opening->device.get());
  }
  Engine e;
  PTQ_ASSIGN_OR_RETURN(e.executor, vulkan::make_vulkan_executor(
                                       model, vulkan_options(options, threads), std::move(opened)));
  return e;
#else
  (void)early;
  return usage_error("--backend vulkan: this build has no Vulkan backend");
#endif
}

std::vector<Executor*> CalibrationEngines::executors() const {
  std::vector<Executor*> all{engine.executor.get()};
  for (const auto& e : more) all.push_back(e.get());
  return all;
}

Status check_workers(const EngineOptions& options, int workers) {
  if (options.backend != "cpu" && workers > 1)
    return usage_error("--workers applies to --backend cpu");
  if (options.backend == "cpu" && options.devices.size() > 1) {
    return usage_error("a --device list applies to --backend vulkan");
  }
  return Status::ok();
}

Status pick_rank_device(EngineOptions& options, const dist::Communicator& comm) {
  if (comm.size() == 1 || options.backend != "vulkan") return Status::ok();
  const auto rank = static_cast<size_t>(comm.rank());
  if (!options.devices.empty()) {
    options.device = options.devices[rank % options.devices.size()];
  } else {
#ifdef PTQ_HAVE_VULKAN
    PTQ_ASSIGN_OR_RETURN(std::vector<vulkan::DeviceInfo> all, vulkan::list_vulkan_devices());
    if (all.empty()) return runtime_error("--backend vulkan: no Vulkan device found");
    options.device = static_cast<int>(rank % all.size());
#endif
  }
  options.devices = {options.device};
  return Status::ok();
}

namespace {

// Worker w's share of `threads` split among n workers (at least one).
int thread_share(int threads, int n, int w) {
  return std::max(threads / n + (w < threads % n ? 1 : 0), 1);
}

// Calibration workers on each listed device after the first (the first is `e.engine`'s).
Status add_device_workers(CalibrationEngines& e, const ir::Model& model,
                          const EngineOptions& options, int threads) {
  const auto n = static_cast<int>(options.devices.size());
  for (int w = 1; w < n; ++w) {
    EngineOptions one = options;
    one.device = options.devices[static_cast<size_t>(w)];
    PTQ_ASSIGN_OR_RETURN(Engine more, make_engine(model, one, thread_share(threads, n, w)));
    e.more.push_back(std::move(more.executor));
  }
  return Status::ok();
}

}  // namespace

Expected<CalibrationEngines> make_calibration_engines(const ir::Model& model,
                                                      const EngineOptions& options, int threads,
                                                      int workers, EarlyDevice* early) {
  PTQ_RETURN_IF_ERROR(check_workers(options, workers));
  const bool cpu = options.backend == "cpu";
  if (!cpu && options.devices.size() > 1) {
    const auto n = static_cast<int>(options.devices.size());
    CalibrationEngines e;
    PTQ_ASSIGN_OR_RETURN(e.engine, make_engine(model, options, thread_share(threads, n, 0), early));
    PTQ_RETURN_IF_ERROR(add_device_workers(e, model, options, threads));
    return e;
  }
  if (workers == 0) workers = cpu ? std::clamp(threads / kThreadsPerWorker, 1, kMostWorkers) : 1;
  workers = std::clamp(workers, 1, std::max(threads, 1));
  CalibrationEngines e;
  PTQ_ASSIGN_OR_RETURN(e.engine,
                       make_engine(model, options, thread_share(threads, workers, 0), early));
  for (int w = 1; w < workers; ++w) {
    ExecutorOptions eo = options.executor;
    eo.threads = thread_share(threads, workers, w);
    PTQ_ASSIGN_OR_RETURN(auto exec, Executor::create(model, *e.engine.backend, eo));
    e.more.push_back(std::move(exec));
  }
  return e;
}

}  // namespace ptq::runtime
