#include "ptq/ir/owned_copy.h"

#include <cstring>

namespace ptq::ir {

Tensor owned_copy(const Tensor& t) {
  Tensor out(t.dtype(), t.shape());
  if (t.nbytes() > 0 && t.raw() != nullptr) std::memcpy(out.raw(), t.raw(), t.nbytes());
  if (t.dtype() == DType::kString) out.strings() = t.strings();
  return out;
}

Tensor copy_into(const Tensor& t, Tensor reuse) {
  const bool fits = reuse.owns_data() && reuse.dtype() == t.dtype() && reuse.shape() == t.shape() &&
                    t.dtype() != DType::kString && t.raw() != nullptr;
  if (!fits) return owned_copy(t);
  if (t.nbytes() > 0) std::memcpy(reuse.raw(), t.raw(), t.nbytes());
  return reuse;
}

}  // namespace ptq::ir
