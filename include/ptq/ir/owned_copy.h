// A deep copy of a tensor that owns its storage, for values that must outlive the buffer they
// were produced in (an executor's pooled slot, a borrowed initializer, an observed tensor).
#pragma once

#include "ptq/ir/tensor.h"

namespace ptq::ir {

// Owned storage with `t`'s dtype, shape and contents, whether `t` owns or borrows its memory
// (a plain copy of a borrowed tensor borrows the same memory).
Tensor owned_copy(const Tensor& t);

// The same, written into `reuse`'s storage when it owns storage of `t`'s dtype and shape (not
// strings), so that a caller copying values batch after batch does not take fresh memory (and
// have the system zero it) every time; otherwise a fresh owned_copy().
Tensor copy_into(const Tensor& t, Tensor reuse);

}  // namespace ptq::ir
