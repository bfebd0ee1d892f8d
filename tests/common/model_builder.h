// Graph inputs and outputs of models built in code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ptq/ir.h"

namespace ptq::testing {

// A value of `dtype` with the fixed `dims` ({} is a scalar, not an unknown shape).
inline ir::ValueInfo value_info(std::string name, const std::vector<int64_t>& dims,
                                ir::DType dtype = ir::DType::kFloat32) {
  ir::ValueInfo v;
  v.name = std::move(name);
  v.type.dtype = dtype;
  std::vector<ir::Dim> d;
  for (int64_t n : dims) d.push_back(ir::Dim::of(n));
  v.type.dims = std::move(d);
  return v;
}

}  // namespace ptq::testing
