#include "backend_options.h"

#include <cstdio>
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

Expected<runtime::EngineOptions> engine_options(const BackendOptions& options, bool quiet) {
  runtime::EngineOptions e;
  e.backend = options.backend;
  e.device = options.device;
  e.devices = options.devices;
  e.strict = options.strict;
  e.cpu = cpu_backend_options_from_env();
  // Parsed only: make_engine checks the level against this CPU, after the other options.
  PTQ_ASSIGN_OR_RETURN(e.cpu.isa, runtime::parse_cpu_isa(options.cpu_isa));
  e.executor = executor_options_from_env(0);
#ifdef PTQ_HAVE_VULKAN
  e.vulkan = vulkan_options_from_env();
  if (!quiet) {
    e.vulkan.on_fallback = [](const std::vector<std::string>& nodes) {
      fmt::print(stderr, "ptq: note: vulkan: {} node(s) run on the CPU: {}\n", nodes.size(),
                 fmt::join(nodes, "; "));
    };
  }
#else
  (void)quiet;
#endif
  return e;
}

void add_workers_option(CLI::App& app, int& workers) {
  app.add_option("--workers", workers,
                 "calibration workers, each running whole batches on its share of the threads "
                 "(default: one per " +
                     std::to_string(runtime::kThreadsPerWorker) + " CPU threads, at most " +
                     std::to_string(runtime::kMostWorkers) + ")")
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
