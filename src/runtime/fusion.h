// Fusion: a Conv or Gemm and the Add / Relu / Clip after it run as one kernel call that writes
// only the last tensor (docs/DESIGN.md, "Fusion"). Found once per executor; which chains a run
// uses depends on the tensors its observers want, so the order of a run (a Schedule) is made
// per set of chains in use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "optimizer.h"
#include "plan.h"
#include "ptq/runtime.h"

namespace ptq::runtime {

// Steps run as one call of the head's kernel: head → [Add] → [Relu | Clip].
struct FusedChain {
  size_t head = 0;               // the Conv / Gemm step
  int64_t add = -1;              // the Add step, or -1
  int32_t residual = -1;         // the Add's other input (a value id)
  int64_t act = -1;              // the Relu / Clip step, or -1
  Epilogue::Activation activation = Epilogue::Activation::kNone;
  std::vector<int32_t> hidden;   // values a fused call never produces
  // What the call reads (every chain step's inputs but the hidden values) and writes (the last
  // step's output); its `node` is the head's.
  PlanStep io;

  std::vector<size_t> steps() const;  // head, then the Add and the activation when present
};

// For each Conv/Gemm whose output has one reader and is no graph output, the chains its kernel
// takes, longest first (Conv→Add→Relu before Conv→Add).
std::vector<FusedChain> find_chains(const Plan& plan, const ir::Graph& graph,
                                    std::span<const std::unique_ptr<Kernel>> kernels);

// The chains a run uses: per head the first (longest) that hides no wanted value and shares no
// step with a chain already picked or a step marked in `taken` (the optimizer's rewrites).
// Sorted.
std::vector<int32_t> pick_chains(const Plan& plan, const std::vector<FusedChain>& chains,
                                 const std::vector<bool>& wanted, std::vector<bool> taken);

// One entry of a run's order: a plan step run alone, a chain, or an optimizer rewrite; then
// the values that die.
struct ScheduleItem {
  int64_t step = -1;
  int32_t chain = -1;
  int32_t rewrite = -1;
  std::vector<int32_t> release;
};

// The order of a run using `active` chains and `used` rewrites: plan order, each chain or
// rewrite once its first step's place has gone by and all it reads exists; lifetimes
// recomputed for it: a value dies after the last entry reading it (graph outputs never;
// unread values where they are made).
std::vector<ScheduleItem> make_schedule(const Plan& plan, const std::vector<FusedChain>& chains,
                                        const std::vector<int32_t>& active,
                                        const std::vector<Rewrite>& rewrites,
                                        const std::vector<int32_t>& used);

// Clip's bounds as its kernel reads them for float32 (inputs from opset 11, else attributes;
// absent ones are the float range), or nullopt when a bound is not a float32 scalar.
std::optional<std::pair<float, float>> clip_bounds(const ir::Node& clip, int64_t opset,
                                                   const ir::Tensor* lo, const ir::Tensor* hi);

}  // namespace ptq::runtime
