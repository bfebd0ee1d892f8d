#include "input_shapes.h"

#include <charconv>
#include <string_view>
#include <utility>

namespace ptq::apps {

namespace {

using NamedShape = std::pair<std::string, std::vector<int64_t>>;

// "1,128" (sep ',') or "1x3x224x224" (sep 'x') -> dims; a usage error naming `item` otherwise.
Expected<std::vector<int64_t>> parse_dims(std::string_view rest, char sep, std::string_view item) {
  std::vector<int64_t> dims;
  while (true) {
    const size_t cut = rest.find(sep);
    const std::string_view part = rest.substr(0, cut);
    int64_t v = -1;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || v < 0) {
      return usage_error("--input-shape '{}': '{}' is not a dim (a whole number >= 0)", item, part);
    }
    dims.push_back(v);
    if (cut == std::string_view::npos) return dims;
    rest = rest.substr(cut + 1);
  }
}

// NAME=D,D,… (ptqkit) or NAME:DxD… (trtexec's --shapes); the last '=' or ':' ends the name.
Expected<NamedShape> parse_one(std::string_view item, char eq, char sep) {
  const size_t at = item.rfind(eq);
  if (at == std::string_view::npos || at == 0 || at + 1 == item.size()) {
    return usage_error("--input-shape '{}': expected NAME=D,D,… (e.g. x=1,128) or trtexec's "
                       "NAME:DxD… (e.g. x:1x3x224x224)",
                       item);
  }
  PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> dims, parse_dims(item.substr(at + 1), sep, item));
  return NamedShape(std::string(item.substr(0, at)), std::move(dims));
}

// One value: NAME=D,D,… or a comma-separated list of NAME:DxD….
Status parse_value(std::string_view value, onnx::InputShapes& out) {
  if (value.find('=') != std::string_view::npos || value.find(':') == std::string_view::npos) {
    PTQ_ASSIGN_OR_RETURN(NamedShape one, parse_one(value, '=', ','));
    out.push_back(std::move(one));
    return Status::ok();
  }
  while (!value.empty()) {
    const size_t comma = value.find(',');
    PTQ_ASSIGN_OR_RETURN(NamedShape one, parse_one(value.substr(0, comma), ':', 'x'));
    out.push_back(std::move(one));
    if (comma == std::string_view::npos) break;
    value = value.substr(comma + 1);
  }
  return Status::ok();
}

}  // namespace

Expected<onnx::InputShapes> parse_input_shapes(const std::vector<std::string>& values) {
  onnx::InputShapes out;
  for (const std::string& v : values) {
    if (!v.empty()) PTQ_RETURN_IF_ERROR(parse_value(v, out));
  }
  return out;
}

}  // namespace ptq::apps
