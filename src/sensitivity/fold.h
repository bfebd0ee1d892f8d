// Internal to ptq_sensitivity: the constant part of the sweep's models computed once per sweep
// instead of once per batch. A quantized unit's weight is an int8 initializer read through a
// DequantizeLinear; run per batch, that node re-makes the same float weight every time, and the
// MatMul/Gemm after it cannot pack B ahead (a kernel packs B once only when B is an
// initializer). Folded, each such value is computed once, by the sweep's own backend and
// kernel, so its bytes are the ones a per-batch run gives.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "initializers.h"
#include "ptq/ir.h"
#include "ptq/sensitivity.h"
#include "ptq/status.h"

namespace ptq::sensitivity {

// Folds models one after another, sharing what it computed: a node equal to one folded before
// (op, attributes, input contents) gets a view of the same tensor, so the variants of a sweep
// hold one float copy of each dequantized weight between them, not one each. Safe to call
// from several threads. Must outlive the models it folds (they borrow its tensors).
class ConstantFolder {
 public:
  explicit ConstantFolder(ExecutorFactory executors) : executors_(std::move(executors)) {}

  // Replaces each single-output node of `m` whose inputs are all initializers (after the
  // folds before it), and each Constant node, by an initializer holding its output. Nodes that
  // are not deterministic (Random*, …), hold subgraphs, or give a graph output stay. `m`'s
  // initializers must outlive the folder. The nodes not folded before run together, one
  // executor per round (a round per step of a chain of constant nodes), as a Vulkan executor
  // costs a device context. Returns the nodes folded.
  Expected<int64_t> fold(ir::Model& m);

 private:
  struct Entry {
    ir::Node node;                   // op and attributes (names unused)
    std::vector<ir::Tensor> inputs;  // views of the inputs it was computed from
    ir::Tensor value;                // owned
  };
  Expected<runtime::NamedTensors> run_nodes(const ir::Model& m, const InitializerMap& inits,
                                            const std::vector<const ir::Node*>& nodes);
  static size_t key(const InitializerMap& inits, const ir::Node& node);
  const Entry* find(const InitializerMap& inits, const ir::Node& node, size_t key) const;
  // The value kept for `node`: `value`, unless an equal node was remembered meanwhile.
  const ir::Tensor& remember(const InitializerMap& inits, const ir::Node& node, size_t key,
                             ir::Tensor value);
  // One round: folds the foldable nodes whose inputs are initializers now; false when none.
  Expected<bool> fold_round(ir::Model& m, int64_t& folded);

  ExecutorFactory executors_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unordered_multimap<size_t, const Entry*> index_;  // entries_ by key()
};

}  // namespace ptq::sensitivity
