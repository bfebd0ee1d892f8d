// The execution-time graph optimizer (docs/DESIGN.md, "Optimizer"): rewrites only what an
// executor plans from and runs, never the model. Two mechanisms:
// - constant folding, once per executor: nodes whose inputs are all constants run when the
//   executor is made and their outputs become initializers of the graph it plans from;
// - rewrites, chosen per run: steps of the plan that spell out an op the backend has (a
//   decomposed LayerNorm, Gelu, HardSwish, …) run as one substitute node, unless an observer
//   wants a value the substitute would not make (or would make with other rounding).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "plan.h"
#include "ptq/runtime.h"

namespace ptq::runtime {

// What an executor plans from: the model's graph, or a copy of its nodes without the folded
// ones, whose initializers borrow the model's and own the folded values. Kernels are still made
// with the model's graph: one that packs a constant weight sums in another order than one
// reading it per run, and a folded value must leave every byte of a run as it was.
struct ExecGraph {
  const ir::Graph* graph = nullptr;
  std::unique_ptr<ir::Graph> owned;  // set when something was folded
  std::vector<std::string> folded;   // the values computed by folding, in graph order
  int64_t folded_nodes = 0;
};

// Folds the nodes of `model` whose inputs are all constants (initializers, Constant nodes or
// earlier folds), on `backend`'s own kernels, so a folded value has the bytes a run makes.
// Nodes that are not deterministic, hold subgraphs, give a graph output, or whose outputs
// would take more than 4x the bytes of their inputs (and over 64 KiB) stay: a folded value is
// held for the executor's life. A node that fails to run stays too (its run reports it).
ExecGraph fold_constants(const ir::Model& model, Backend& backend, int threads);

// Plan steps run as one substitute node with its own kernel.
struct Rewrite {
  std::vector<size_t> steps;    // the steps replaced, sorted
  std::vector<int32_t> hidden;  // values those steps make that the substitute does not
  // Of `hidden`, the values whose shape is the output's with the axes from `reduced_axis` on
  // set to 1 (a LayerNorm's mean and variance); the others have the output's shape.
  std::vector<int32_t> reduced;
  int64_t reduced_axis = -1;
  // Whether the substitute gives the steps' output bit for bit (an observer may then see it).
  bool exact = false;
  std::unique_ptr<ir::Node> node;  // the substitute (its kernel keeps a reference)
  std::unique_ptr<Kernel> kernel;
  PlanStep io;  // what the substitute reads and writes; io.node is the last replaced step's node
};

// The rewrites of `plan`'s steps whose substitutes `backend` runs, longest first where two
// share steps. May add constants to `plan` (a LayerNorm without an affine part needs a scale).
std::vector<Rewrite> find_rewrites(Plan& plan, const ir::Graph& graph, Backend& backend,
                                   int64_t opset, int threads);

// The rewrites a run uses: in order, each that shares no step with one already taken (marked
// in `taken`), hides no value in `wanted` and, unless exact, makes no value a wanted one is
// computed from (observers see the bytes an unoptimized run makes).
std::vector<int32_t> pick_rewrites(const Plan& plan, const std::vector<Rewrite>& rewrites,
                                   const std::vector<bool>& wanted, std::vector<bool>& taken);

// Whether a run may give `inputs` to the substitute rather than run the steps: the patterns
// are float32 arithmetic on tensors of rank 1 or more (a scalar constant of shape [1] then
// broadcasts to the same shape).
bool substitute_takes(std::span<const ir::Tensor* const> inputs);

}  // namespace ptq::runtime
