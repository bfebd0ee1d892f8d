// The allocator every kernel test runs kernels on: outputs start as NaN bytes, so an element a
// kernel forgets to write shows up in every comparison (docs/ADDING_AN_OP.md).
#pragma once

#include <cstring>

#include "ptq/ir.h"
#include "ptq/runtime.h"

namespace ptq::testing {

// Hands out owned tensors filled with 0xff bytes (NaN in every float type).
class PoisonAllocator final : public runtime::Allocator {
 public:
  ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) override {
    ir::Tensor t(dtype, shape);
    if (t.nbytes() > 0) std::memset(t.raw(), 0xff, t.nbytes());
    return t;
  }
};

}  // namespace ptq::testing
