// ONNX TensorProto (.pb) files -> ir::Tensor, for folders of samples and ONNX backend-style
// test_data_set_* folders. Raw and typed fields are read; external data is refused.
#pragma once

#include <string>
#include <string_view>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::data {

struct NamedTensor {
  std::string name;  // TensorProto.name ("" when unset)
  ir::Tensor tensor;
};

// Parses serialized TensorProto bytes; `what` (the file) names it in errors.
Expected<NamedTensor> parse_tensor_proto(std::string_view bytes, const std::string& what);

}  // namespace ptq::data
