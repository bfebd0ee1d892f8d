#include "backend_options.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "env_options.h"

#ifdef PTQ_HAVE_VULKAN
#include "ptq/vulkan.h"
#endif

namespace ptq::apps {

void add_backend_options(CLI::App& app, BackendOptions& options, bool device_list) {
  app.add_option("--backend", options.backend, "cpu or vulkan")
      ->check(CLI::IsMember({"cpu", "vulkan"}));
  if (device_list) {
    app.add_option_function<std::vector<int>>(
           "--device",
           [&options](const std::vector<int>& list) {
             options.devices = list;
             options.device = list.front();
           },
           "Vulkan device index (see ptq info --devices), or a list 0,1,...: a calibration "
           "worker per listed device; under mpirun, rank r takes list[r mod length] (default: "
           "r mod the number of devices)")
        ->delimiter(',')
        ->check(at_least(0));
  } else {
    app.add_option("--device", options.device, "Vulkan device index (see ptq info --devices)")
        ->check(at_least(0));
  }
  app.add_flag("--strict", options.strict, "Vulkan: fail instead of running an op on the CPU");
  add_cpu_isa_option(app, options.cpu_isa);
}

void add_cpu_isa_option(CLI::App& app, std::string& cpu_isa) {
  app.add_option("--cpu-isa", cpu_isa,
                 "CPU kernels' instruction set: auto (the best this CPU runs), avx512, avx2 or "
                 "baseline (x86-64)")
      ->check(CLI::IsMember({"auto", "avx512", "avx2", "baseline"}));
}

Expected<runtime::CpuIsa> cpu_isa_option(const std::string& cpu_isa) {
  PTQ_ASSIGN_OR_RETURN(runtime::CpuIsa isa, runtime::parse_cpu_isa(cpu_isa));
  PTQ_RETURN_IF_ERROR(runtime::resolve_cpu_isa(isa).status());
  return isa;
}

bool vulkan_available() {
#ifdef PTQ_HAVE_VULKAN
  return true;
#else
  return false;
#endif
}

#ifdef PTQ_HAVE_VULKAN
struct EarlyDevice::Opening {
  std::future<Expected<std::unique_ptr<vulkan::OpenedDevice>>> device;
};

EarlyDevice::EarlyDevice(const BackendOptions& options) {
  if (options.backend != "vulkan") return;
  opening = std::make_unique<Opening>();
  vulkan::VulkanOptions vo = vulkan_options_from_env();
  vo.device = options.device;
  opening->device = std::async(std::launch::async, [vo] { return vulkan::open_vulkan_device(vo); });
}
#else
struct EarlyDevice::Opening {};
EarlyDevice::EarlyDevice(const BackendOptions&) {}
#endif

EarlyDevice::~EarlyDevice() = default;

Expected<Engine> make_engine(const ir::Model& model, const BackendOptions& options, int threads,
                             bool quiet, EarlyDevice* early) {
  Engine e;
  if (options.backend == "cpu") {
    if (options.strict || options.device != 0) {
      return usage_error("--device and --strict apply to --backend vulkan");
    }
    runtime::CpuBackendOptions co = cpu_backend_options_from_env();
    PTQ_ASSIGN_OR_RETURN(co.isa, cpu_isa_option(options.cpu_isa));
    e.backend = runtime::make_cpu_backend(co);
    const runtime::ExecutorOptions eo = executor_options_from_env(threads);
    PTQ_ASSIGN_OR_RETURN(e.executor, runtime::Executor::create(model, *e.backend, eo));
    return e;
  }
  if (options.backend != "vulkan")
    return usage_error("unknown backend '{}' (cpu or vulkan)", options.backend);
#ifdef PTQ_HAVE_VULKAN
  vulkan::VulkanOptions vo = vulkan_options_from_env();
  vo.device = options.device;
  vo.strict = options.strict;
  PTQ_ASSIGN_OR_RETURN(vo.cpu.isa, cpu_isa_option(options.cpu_isa));
  vo.threads = threads;
  if (!quiet) {
    vo.on_fallback = [](const std::vector<std::string>& nodes) {
      fmt::print(stderr, "ptq: note: vulkan: {} node(s) run on the CPU: {}\n", nodes.size(),
                 fmt::join(nodes, "; "));
    };
  }
  std::unique_ptr<vulkan::OpenedDevice> opened;
  if (early != nullptr && early->opening != nullptr && early->opening->device.valid()) {
    PTQ_ASSIGN_OR_RETURN(opened, early->opening->device.get());
  }
  PTQ_ASSIGN_OR_RETURN(e.executor, vulkan::make_vulkan_executor(model, vo, std::move(opened)));
  return e;
#else
  (void)quiet;
  (void)early;
  return usage_error("--backend vulkan: this build has no Vulkan backend");
#endif
}

std::vector<runtime::Executor*> CalibrationEngines::executors() const {
  std::vector<runtime::Executor*> all{engine.executor.get()};
  for (const auto& e : more) all.push_back(e.get());
  return all;
}

Status check_workers(const BackendOptions& options, int workers) {
  if (options.backend != "cpu" && workers > 1)
    return usage_error("--workers applies to --backend cpu");
  if (options.backend == "cpu" && options.devices.size() > 1) {
    return usage_error("a --device list applies to --backend vulkan");
  }
  return Status::ok();
}

Status pick_rank_device(BackendOptions& options, const dist::Communicator& comm) {
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
                          const BackendOptions& options, int threads, bool quiet) {
  const auto n = static_cast<int>(options.devices.size());
  for (int w = 1; w < n; ++w) {
    BackendOptions one = options;
    one.device = options.devices[static_cast<size_t>(w)];
    PTQ_ASSIGN_OR_RETURN(Engine more, make_engine(model, one, thread_share(threads, n, w), quiet));
    e.more.push_back(std::move(more.executor));
  }
  return Status::ok();
}

}  // namespace

Expected<CalibrationEngines> make_calibration_engines(const ir::Model& model,
                                                      const BackendOptions& options, int threads,
                                                      int workers, bool quiet,
                                                      EarlyDevice* early) {
  PTQ_RETURN_IF_ERROR(check_workers(options, workers));
  const bool cpu = options.backend == "cpu";
  if (!cpu && options.devices.size() > 1) {
    const auto n = static_cast<int>(options.devices.size());
    CalibrationEngines e;
    PTQ_ASSIGN_OR_RETURN(e.engine,
                         make_engine(model, options, thread_share(threads, n, 0), quiet, early));
    PTQ_RETURN_IF_ERROR(add_device_workers(e, model, options, threads, quiet));
    return e;
  }
  if (workers == 0) workers = cpu ? std::clamp(threads / kThreadsPerWorker, 1, kMostWorkers) : 1;
  workers = std::clamp(workers, 1, std::max(threads, 1));
  auto share = [&](int w) { return threads / workers + (w < threads % workers ? 1 : 0); };
  CalibrationEngines e;
  PTQ_ASSIGN_OR_RETURN(e.engine, make_engine(model, options, share(0), quiet, early));
  for (int w = 1; w < workers; ++w) {
    PTQ_ASSIGN_OR_RETURN(auto exec, runtime::Executor::create(model, *e.engine.backend,
                                                              executor_options_from_env(share(w))));
    e.more.push_back(std::move(exec));
  }
  return e;
}

void add_workers_option(CLI::App& app, int& workers) {
  app.add_option("--workers", workers,
                 "calibration workers, each running whole batches on its share of the threads "
                 "(default: one per " +
                     std::to_string(kThreadsPerWorker) + " CPU threads, at most " +
                     std::to_string(kMostWorkers) + ")")
      ->check(at_least(0));
}

Status print_vulkan_devices(bool json) {
#ifdef PTQ_HAVE_VULKAN
  PTQ_ASSIGN_OR_RETURN(std::vector<vulkan::DeviceInfo> devices, vulkan::list_vulkan_devices());
  if (json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const vulkan::DeviceInfo& d : devices) {
      j.push_back({{"index", d.index},
                   {"name", d.name},
                   {"type", d.type},
                   {"api_version", d.api_version},
                   {"driver", d.driver},
                   {"vendor_id", d.vendor_id},
                   {"device_id", d.device_id},
                   {"device_local_bytes", d.device_local_bytes},
                   {"subgroup_size", d.subgroup_size},
                   {"max_shared_memory", d.max_shared_memory},
                   {"max_storage_buffer_range", d.max_storage_buffer_range},
                   {"shader_float64", d.float64},
                   {"shader_int64", d.int64},
                   {"exact_histograms", d.int64},
                   {"cooperative_matrix", d.cooperative_matrix},
                   {"usable", d.usable}});
    }
    fmt::print("{}\n", j.dump(2));
    return Status::ok();
  }
  if (devices.empty()) fmt::print("vulkan devices: none\n");
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  for (const vulkan::DeviceInfo& d : devices) {
    fmt::print("device {}: {} ({}, Vulkan {}){}\n", d.index, d.name, d.type, d.api_version,
               d.usable ? "" : " [not usable: needs Vulkan 1.2 and a compute queue]");
    if (!d.driver.empty()) fmt::print("  driver:            {}\n", d.driver);
    fmt::print("  device memory:     {:.1f} GiB\n",
               static_cast<double>(d.device_local_bytes) / 1073741824.0);
    fmt::print("  subgroup size:     {}\n", d.subgroup_size);
    fmt::print("  shared memory:     {} KiB per workgroup\n", d.max_shared_memory / 1024);
    fmt::print("  storage range:     {} MiB per tensor\n", d.max_storage_buffer_range >> 20);
    fmt::print("  shaderInt64:       {} ({} histogram bins)\n", yes(d.int64),
               d.int64 ? "exact" : "float32");
    fmt::print("  shaderFloat64:     {}\n", yes(d.float64));
    fmt::print("  cooperative matrix: {} (not used yet)\n", yes(d.cooperative_matrix));
  }
  return Status::ok();
#else
  (void)json;
  return runtime_error("this build has no Vulkan backend (configure with -DPTQ_VULKAN=ON, "
                       "libvulkan-dev and glslc installed)");
#endif
}

}  // namespace ptq::apps
