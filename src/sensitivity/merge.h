// Internal to ptq_sensitivity: several models side by side in one graph, so that one executor
// runs them all. A backend then prepares one model instead of one per unit: on Vulkan each
// executor owns a device context, and compiling its pipelines and uploading its weights per
// unit would cost more than running the cuts.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::sensitivity {

struct Merged {
  ir::Model model;  // borrows the parts' initializers
  // Per part, per output of that part: the index of that output among model's outputs.
  std::vector<std::vector<size_t>> outputs;
};

// The parts' graphs in one: graph inputs of the same name are shared (one value fed to all),
// every other value of part i is renamed "<i>|<name>", except initializers that are the same
// tensor (same memory) in several parts, which are kept once. Nodes keep the parts' order, so
// an executor in topological order runs one part after the other and reuses its buffers.
// The parts' nodes are moved into the result (each part is left without nodes); every part
// must outlive it (its initializers are borrowed).
Expected<Merged> merge_models(std::span<ir::Model* const> parts);

}  // namespace ptq::sensitivity
