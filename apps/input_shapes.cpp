#include "input_shapes.h"

#include <charconv>
#include <string_view>
#include <utility>

namespace ptq::apps {

namespace {

Expected<std::pair<std::string, std::vector<int64_t>>> parse_one(const std::string& item) {
  const size_t eq = item.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
    return usage_error("--input-shape '{}': expected NAME=D,D,… (e.g. x=1,128)", item);
  }
  std::vector<int64_t> dims;
  std::string_view rest = std::string_view(item).substr(eq + 1);
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    int64_t v = -1;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || v < 0) {
      return usage_error("--input-shape '{}': '{}' is not a dim (a whole number >= 0)", item, part);
    }
    dims.push_back(v);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return std::make_pair(item.substr(0, eq), std::move(dims));
}

}  // namespace

Expected<onnx::InputShapes> parse_input_shapes(const std::vector<std::string>& values) {
  onnx::InputShapes out;
  for (const std::string& v : values) {
    if (v.empty()) continue;
    PTQ_ASSIGN_OR_RETURN(auto one, parse_one(v));
    out.push_back(std::move(one));
  }
  return out;
}

}  // namespace ptq::apps
