// Internal to ptq_sensitivity: prefix reuse. A variant's cut is the part of it that differs
// from its base model; sweep() runs the base once per batch and only the cuts per unit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::sensitivity {

// The part of `variant` that differs from `base`: every node with no identical node (op,
// inputs, outputs, attributes, initializer contents) in base, everything downstream of one,
// and the shape computations (Shape, Gather, Concat on constants …) those nodes read, so that
// a backend that needs shape inputs computable from its own graph (Vulkan) can run the cut.
struct Cut {
  ir::Model sub;                      // those nodes; inputs = `boundary`; initializers borrowed
  std::vector<std::string> boundary;  // base tensors the subgraph reads (activations, inputs)
  // Per variant graph output: index into sub's outputs, or -1 when base's output is unchanged.
  std::vector<int64_t> sub_output;
  int64_t nodes = 0;                  // nodes of the subgraph (cost measure)
};
// `variant` must outlive the result (the subgraph borrows its initializers).
Expected<Cut> make_cut(const ir::Model& base, const ir::Model& variant);

struct Rewiring;  // internal (src/sensitivity/rewire.h)

// make_cut() for many variants of one base: the base's indexes are built once. cut() may be
// called from several threads at once. `base` must outlive the maker.
class CutMaker {
 public:
  explicit CutMaker(const ir::Model& base);
  ~CutMaker();
  CutMaker(const CutMaker&) = delete;
  CutMaker& operator=(const CutMaker&) = delete;
  Expected<Cut> cut(const ir::Model& variant) const;  // make_cut(base, variant)
  // The cut of the variant `rewiring` makes of the base (rewired(base(), rewiring)), found on
  // the base's indexes without making the variant; it borrows the rewiring's initializers.
  Expected<Cut> cut(const Rewiring& rewiring) const;
  const ir::Model& base() const { return base_; }
  const ir::GraphIndex& base_index() const;  // producers of the base's values

 private:
  struct Index;
  const ir::Model& base_;
  std::unique_ptr<Index> index_;
};

// A copy of `model` whose initializers and node attribute tensors (Constant values) borrow
// model's memory (`model` must outlive it). Safe to quantize: the planner replaces
// initializers, it never writes into one.
ir::Model borrowing_copy(const ir::Model& model);
// A borrowing copy of `base` with `values` appended to its graph outputs (those that are not
// already outputs, inputs or initializers): one run of it hands over the values at every cut,
// on any backend.
ir::Model with_outputs(const ir::Model& base, const std::vector<std::string>& values);

}  // namespace ptq::sensitivity
