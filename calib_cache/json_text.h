// Parsing a cache's JSON text (private to calib_cache): nlohmann's json::parse throws a
// parse_error for bad syntax but an out_of_range for a number beyond double's range ("1e999"),
// which a reader catching only the first let escape; here both are an error naming the line.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "ptq/status.h"

namespace ptq::calib::detail {

// The JSON value of `text`, or "FILE:LINE: invalid JSON: …".
Expected<nlohmann::json> parse_json_text(std::string_view text, std::string_view file);

}  // namespace ptq::calib::detail
