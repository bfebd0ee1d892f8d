// The executor a function runs a model on: the CPU backend, or Vulkan where the build has it.
#include "bindings.h"

#ifdef PTQ_HAVE_VULKAN
#include "ptq/vulkan.h"
#endif

namespace ptq::python {

Expected<Engine> open_engine(const ir::Model& model, const std::string& backend, int threads) {
  Engine e;
  if (backend == "cpu") {
    e.backend = runtime::make_cpu_backend();
    runtime::ExecutorOptions options;
    options.threads = thread_count(threads);
    PTQ_ASSIGN_OR_RETURN(e.executor, runtime::Executor::create(model, *e.backend, options));
    return e;
  }
  if (backend != "vulkan") return usage_error("unknown backend '{}' (cpu or vulkan)", backend);
#ifdef PTQ_HAVE_VULKAN
  vulkan::VulkanOptions options;
  options.threads = thread_count(threads);
  PTQ_ASSIGN_OR_RETURN(e.executor, vulkan::make_vulkan_executor(model, options));
  return e;
#else
  return usage_error("backend 'vulkan': this build has no Vulkan backend");
#endif
}

Engine make_engine(const ir::Model& model, const std::string& backend, int threads) {
  return value_or_throw(open_engine(model, backend, threads));
}

}  // namespace ptq::python
