// The executor a function runs a model on: the CPU backend, or Vulkan where the build has it.
#include "bindings.h"

#ifdef PTQ_HAVE_VULKAN
#include "ptq/vulkan.h"
#endif

namespace ptq::python {

Engine make_engine(const ir::Model& model, const std::string& backend, int threads) {
  Engine e;
  if (backend == "cpu") {
    e.backend = runtime::make_cpu_backend();
    runtime::ExecutorOptions options;
    options.threads = thread_count(threads);
    e.executor = value_or_throw(runtime::Executor::create(model, *e.backend, options));
    return e;
  }
  if (backend != "vulkan")
    throw_if_error(usage_error("unknown backend '{}' (cpu or vulkan)", backend));
#ifdef PTQ_HAVE_VULKAN
  vulkan::VulkanOptions options;
  options.threads = thread_count(threads);
  e.executor = value_or_throw(vulkan::make_vulkan_executor(model, options));
#else
  throw_if_error(usage_error("backend 'vulkan': this build has no Vulkan backend"));
#endif
  return e;
}

}  // namespace ptq::python
