// The slicing and stacking Loop and Scan do: one slice of a tensor along an axis (that axis
// removed), and per-iteration values stacked along a new axis.
#pragma once

#include <cstdint>
#include <span>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::runtime::cpu {

// t[..., index, ...] at `axis`, with that axis removed, owning its bytes.
ir::Tensor slice_at(const ir::Tensor& t, int64_t axis, int64_t index);

// The parts (equal dtype and shape, checked: the error names `what` and the part) stacked on a
// new axis `axis` of the result, in order or, `reversed`, last part first.
Expected<ir::Tensor> stack(std::span<const ir::Tensor> parts, int64_t axis, bool reversed,
                           const std::string& what);

}  // namespace ptq::runtime::cpu
