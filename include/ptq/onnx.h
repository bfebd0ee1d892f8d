// The ONNX module (ptq_onnx): ModelProto <-> ir::Model through Debian's libonnx, with external
// data, validation that names what is wrong, the checker and shape inference.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::onnx {

struct LoadOptions {
  // Run onnx::shape_inference and record the inferred types in Graph::inferred (never written
  // back), so every value has a dtype and, where knowable, a shape (symbolic dims kept).
  bool infer_shapes = true;
};

// Reads a model file; external data is resolved relative to the model's folder. Accepts IR
// versions 3..10. Fails (kInvalidInput, one line naming the file and the element at fault) on
// unreadable or truncated files, unknown dtype codes, data that does not match its dims,
// missing or short external data, and graphs with a cycle, a value with two producers or an
// input nothing produces.
Expected<ir::Model> load_model(const std::filesystem::path& path, const LoadOptions& options = {});
// Parses serialized ModelProto bytes (external data resolved against `base_dir`).
Expected<ir::Model> parse_model(std::string_view bytes, const std::filesystem::path& base_dir,
                                const LoadOptions& options = {});

struct SaveOptions {
  // Store initializers >= `external_min_bytes` in `<model file name>.data` beside the model.
  bool external_data = false;
  int64_t external_min_bytes = 1024;
  // The model switches to external data by itself when it would exceed protobuf's 2 GB limit.
  int64_t protobuf_limit_bytes = (int64_t{2} << 30) - 1;
};

// Writes the model atomically (temporary file + rename); nothing is lost if writing fails.
Status save_model(const ir::Model& model, const std::filesystem::path& path,
                  const SaveOptions& options = {});
// Runs onnx::checker (full check, with shape inference) on the model as it would be written.
Status check_model(const ir::Model& model);

// Converts the model's default-domain opset to `target` with libonnx's version converter.
// Upgrades across opset 13 first spell out Softmax/LogSoftmax/Hardmax whose old axis is not the
// last (Flatten -> op -> Reshape(Shape(x))) and give the others' inputs their rank from the
// declared or inferred types, so the converter needs no shapes it cannot see. The model's
// metadata, producer and other domains are kept; ir_version is raised to what `target` needs;
// shape inference runs again. Errors (kInvalidInput) name the node the converter stops at.
Status convert_opset(ir::Model& model, int64_t target);

// Concrete shapes for some graph inputs (as trtexec --shapes): per input, one value per dim;
// -1 leaves that dim as the model declares it.
using InputShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;
// Dims per value name.
using ValueDims = std::map<std::string, std::vector<ir::Dim>>;

// The dims of every value once the graph inputs are bound to `shapes`: the bound inputs, then
// libonnx's shape inference with data propagation, run on a copy (the model keeps its symbolic
// dims). What inference cannot follow stays symbolic or unknown. Errors (kInvalidInput): a name
// that is no graph input (listing them), a rank or fixed dim that disagrees with the model, a
// shape that inference rejects.
Expected<ValueDims> bind_input_shapes(const ir::Model& model, const InputShapes& shapes);

// SHA-256 (hex) of the model's graph as serialized deterministically: the identity a
// calibration cache records and checks.
std::string graph_hash(const ir::Model& model);

// A value type in words: the dtype name for tensors ("float32"), ONNX's notation for other
// types ("seq(tensor(float))"), "undefined" when the model declares none.
std::string type_name(const ir::TypeInfo& type);

// SHA-256 of `bytes` as 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace ptq::onnx
