// Element type conversion from the stored dtype to the model input's dtype.
#pragma once

#include <cstdint>
#include <string>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::data {

// Stored data of `from` may feed an input of `to`: the same type; any number or bool into a
// float type; an integer or bool into an integer or bool type (values range-checked).
bool can_convert(ir::DType from, ir::DType to);
// Converts `n` elements. An integer that does not fit `to` is an error naming `what`.
Status convert(ir::DType from, const void* src, ir::DType to, void* dst, int64_t n,
               const std::string& what);

}  // namespace ptq::data
