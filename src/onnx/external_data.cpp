// Reading tensors stored outside the model file (data_location = EXTERNAL): the keys
// location / offset / length name a byte range of a file in the model's folder.
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "proto.h"

namespace ptq::onnx {

namespace fs = std::filesystem;

namespace {

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: up to the end of the file
};

Expected<int64_t> parse_count(const std::string& text, std::string_view key,
                              std::string_view what) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return invalid_input("{} has an invalid external data {} '{}'", what, key, text);
  }
  return v;
}

Expected<ExternalRef> parse_ref(const ::onnx::TensorProto& p, std::string_view what) {
  ExternalRef ref;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") {
      ref.location = kv.value();
    } else if (kv.key() == "offset") {
      PTQ_ASSIGN_OR_RETURN(ref.offset, parse_count(kv.value(), "offset", what));
    } else if (kv.key() == "length") {
      PTQ_ASSIGN_OR_RETURN(ref.length, parse_count(kv.value(), "length", what));
    }
  }
  if (ref.location.empty()) return invalid_input("{} is external but names no location", what);
  // A model must not read files outside its own folder.
  fs::path loc(ref.location);
  if (loc.is_absolute() || ref.location.find('\0') != std::string::npos) {
    return invalid_input("{}: external data location '{}' is not relative to the model folder",
                         what, ref.location);
  }
  for (const fs::path& part : loc) {
    if (part == "..") {
      return invalid_input("{}: external data location '{}' leaves the model folder", what,
                           ref.location);
    }
  }
  return ref;
}

}  // namespace

Expected<ir::Tensor> read_external_data(const ::onnx::TensorProto& p,
                                        const ExternalDataSource& external, std::string_view what,
                                        ir::DType dtype, const ir::Shape& shape) {
  PTQ_ASSIGN_OR_RETURN(ExternalRef ref, parse_ref(p, what));
  const fs::path file = external.base_dir / ref.location;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    return invalid_input("external data file '{}' of {} not found", file.string(), what);
  }
  const auto file_size = static_cast<int64_t>(fs::file_size(file, ec));
  if (ec)
    return invalid_input("cannot read external data file '{}': {}", file.string(), ec.message());
  const auto need = ir::num_elements(shape) * static_cast<int64_t>(ir::dtype_size(dtype));
  const int64_t length =
      ref.length >= 0 ? ref.length : std::max<int64_t>(file_size - ref.offset, 0);
  if (length != need) {
    return invalid_input("{} has {} bytes of external data in '{}' (offset {}) but its dims {} of "
                         "{} need {}", what, length, file.string(), ref.offset,
                         ir::shape_str(shape), ir::dtype_name(dtype), need);
  }
  if (ref.offset > file_size || length > file_size - ref.offset) {
    return invalid_input("external data file '{}' is too short for {}: offset {} + length {} > "
                         "file size {}", file.string(), what, ref.offset, length, file_size);
  }
  // Allocated only now: the sizes are checked against a real file, so corrupt dims cannot
  // ask for more memory than the file holds.
  ir::Tensor out(dtype, shape);
  if (need == 0) return out;
  std::ifstream in(file, std::ios::binary);
  in.seekg(ref.offset);
  in.read(static_cast<char*>(out.raw()), need);
  if (!in || in.gcount() != need) {
    return invalid_input("cannot read {} bytes at offset {} of external data file '{}' for {}",
                         need, ref.offset, file.string(), what);
  }
  return out;
}

}  // namespace ptq::onnx
