// Internal to ptq_sensitivity: equality of tensors and attributes by content, as make_cut() and
// the constant folder decide whether two nodes compute the same value.
#pragma once

#include <cstring>

#include "ptq/ir.h"

namespace ptq::sensitivity {

inline bool same_tensor(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape() || a.strings() != b.strings()) return false;
  if (a.raw() == b.raw()) return true;
  return a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

inline bool same_attribute(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.name != b.name || a.type != b.type || a.i != b.i || a.s != b.s || a.floats != b.floats ||
      a.ints != b.ints || a.strings != b.strings || a.ref_attr_name != b.ref_attr_name ||
      a.opaque != b.opaque || a.tensors.size() != b.tensors.size()) {
    return false;
  }
  if (std::memcmp(&a.f, &b.f, sizeof a.f) != 0 || !same_tensor(a.t, b.t)) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (!same_tensor(a.tensors[i], b.tensors[i])) return false;
  }
  return true;
}

}  // namespace ptq::sensitivity
