#include "ptq/ir/owned_copy.h"

#include <cstring>

namespace ptq::ir {

Tensor owned_copy(const Tensor& t) {
  Tensor out(t.dtype(), t.shape());
  if (t.nbytes() > 0 && t.raw() != nullptr) std::memcpy(out.raw(), t.raw(), t.nbytes());
  if (t.dtype() == DType::kString) out.strings() = t.strings();
  return out;
}

}  // namespace ptq::ir
