// A deep copy of a tensor that owns its storage, for values that must outlive the buffer they
// were produced in (an executor's pooled slot, a borrowed initializer, an observed tensor).
#pragma once

#include "ptq/ir/tensor.h"

namespace ptq::ir {

// Owned storage with `t`'s dtype, shape and contents, whether `t` owns or borrows its memory
// (a plain copy of a borrowed tensor borrows the same memory).
Tensor owned_copy(const Tensor& t);

}  // namespace ptq::ir
