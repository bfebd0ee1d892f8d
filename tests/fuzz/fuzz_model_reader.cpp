// libFuzzer target: parse_model on arbitrary bytes must return a model or a Status, never crash,
// hang or touch memory it does not own. A model that parses is also written back to a proto
// and hashed, so the writer sees whatever the reader accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ptq/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // External data resolves against a folder that does not exist: file reads fail cleanly.
  auto model = ptq::onnx::parse_model(bytes, "/nonexistent-ptq-fuzz-dir");
  if (model) (void)ptq::onnx::graph_hash(*model);
  return 0;
}
