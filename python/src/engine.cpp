// The executor a function runs a model on: the CPU backend, or Vulkan where the build has it
// (ptq/runtime/engine.h with its default options).
#include "bindings.h"

namespace ptq::python {

Expected<Engine> open_engine(const ir::Model& model, const std::string& backend, int threads) {
#ifndef PTQ_HAVE_VULKAN
  if (backend == "vulkan") return usage_error("backend 'vulkan': this build has no Vulkan backend");
#endif
  runtime::EngineOptions options;
  options.backend = backend;
  return runtime::make_engine(model, options, runtime::thread_count(threads));
}

Engine make_engine(const ir::Model& model, const std::string& backend, int threads) {
  return value_or_throw(open_engine(model, backend, threads));
}

}  // namespace ptq::python
