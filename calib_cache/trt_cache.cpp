// The TensorRT text calibration cache: "TRT-<version>-<algo>" then "<name>: <hex of the float32
// scale>" lines (specs/calibration-cache.md). Names may hold ':' so lines split at the last ": ".
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

#include "ptq/calib_cache.h"
#include "ptq/util/atomic_file.h"
#include "method_names.h"
#include "text_util.h"

namespace ptq::calib {

int64_t TrtVersion::code() const {
  return major >= 10 ? int64_t{major} * 10000 + minor * 100 + patch
                     : int64_t{major} * 1000 + minor * 100 + patch;
}

std::string TrtVersion::str() const { return fmt::format("{}.{}.{}", major, minor, patch); }

TrtVersion trt_version_from_code(int64_t code) {
  if (code >= 100000) {
    return {static_cast<int>(code / 10000), static_cast<int>(code / 100 % 100),
            static_cast<int>(code % 100)};
  }
  return {static_cast<int>(code / 1000), static_cast<int>(code / 100 % 10),
          static_cast<int>(code % 100)};
}

namespace {

std::optional<int64_t> parse_uint(std::string_view s) {
  int64_t v = 0;
  if (s.empty() || s.size() > 9) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

Expected<TrtVersion> parse_trt_version(std::string_view text) {
  if (text.find('.') == std::string_view::npos) {
    auto code = parse_uint(text);
    if (!code || *code < 1000)
      return usage_error("TensorRT version '{}' is not like 8.6.1 or 8601", text);
    return trt_version_from_code(*code);
  }
  int parts[3] = {0, 0, 0};
  size_t n = 0, start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    auto v = parse_uint(part);
    if (!v || n == 3 || *v > 99)
      return usage_error("TensorRT version '{}' is not like 8.6.1", text);
    parts[n++] = static_cast<int>(*v);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  TrtVersion v{parts[0], parts[1], parts[2]};
  if (v.major == 0 || (v.major < 10 && v.minor > 9)) {
    return usage_error("TensorRT version '{}' cannot be encoded in a cache header", text);
  }
  return v;
}

std::string trt_scale_hex(double amax) {
  TensorRange r;
  r.amax = amax;
  const float scale = static_cast<float>(r.scale());
  return fmt::format("{:08x}", std::bit_cast<uint32_t>(scale));
}

std::optional<float> parse_trt_hex(std::string_view hex) {
  if (hex.empty() || hex.size() > 8) return std::nullopt;
  uint32_t bits = 0;
  auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
  if (ec != std::errc() || ptr != hex.data() + hex.size()) return std::nullopt;
  return std::bit_cast<float>(bits);
}

namespace {

// A method TensorRT lacks (mse, percentile, Q/DQ scales) is written under the calibrator that
// TensorRT users implement to read a cache, IInt8EntropyCalibrator2: TensorRT checks only that
// the header names the calibrator reading it, and uses the scales as they are.
std::string algorithm_for(const CalibrationTable& table, const TrtWriteOptions& options) {
  if (!options.algorithm.empty()) return options.algorithm;
  const detail::MethodNames* names = detail::method_names(table.method);
  if (names != nullptr && !names->trt.empty()) return std::string(names->trt);
  return "EntropyCalibration2";
}

std::string method_of(std::string_view algorithm) {
  for (const detail::MethodNames& m : detail::kMethodNames) {
    if (!m.trt.empty() && algorithm == m.trt) return std::string(m.method);
  }
  // TensorRT's first entropy calibrator, which EntropyCalibration2 replaced.
  if (algorithm == "EntropyCalibration") return "entropy";
  return std::string(algorithm);
}

}  // namespace

Expected<std::string> trt_cache_string(const CalibrationTable& table,
                                       const TrtWriteOptions& options) {
  const std::string algorithm = algorithm_for(table, options);
  if (algorithm.find_first_of(" \r\n") != std::string::npos) {
    return usage_error("TensorRT algorithm name '{}' holds whitespace", algorithm);
  }
  std::string out = fmt::format("TRT-{}-{}\n", options.version.code(), algorithm);
  for (const auto& [name, r] : table.tensors) {
    if (name.empty() || name.find_first_of("\r\n") != std::string::npos) {
      return invalid_input("tensor name '{}' cannot be written to a TensorRT cache", name);
    }
    out += name + ": " + trt_scale_hex(r.amax) + "\n";
  }
  return out;
}

Status write_trt_cache(const CalibrationTable& table, const std::filesystem::path& path,
                       const TrtWriteOptions& options) {
  PTQ_ASSIGN_OR_RETURN(std::string text, trt_cache_string(table, options));
  return util::write_file_atomic(path, text);
}

Expected<CalibrationTable> parse_trt_cache(std::string_view text, std::string_view file,
                                           Warnings* warnings) {
  const std::vector<std::string_view> lines = detail::split_lines(text);
  if (lines.empty() || !lines[0].starts_with("TRT-")) {
    return invalid_input("{}:1: not a TensorRT calibration cache (line 1 must start with 'TRT-')",
                         file);
  }
  const std::string_view header = lines[0].substr(4);
  const size_t dash = header.find('-');
  auto code = dash == std::string_view::npos ? std::nullopt : parse_uint(header.substr(0, dash));
  if (!code || dash + 1 >= header.size()) {
    return invalid_input("{}:1: malformed header '{}' (expected TRT-<version>-<algorithm>)", file,
                         lines[0]);
  }
  CalibrationTable table;
  const std::string algorithm(header.substr(dash + 1));
  table.method = method_of(algorithm);
  table.provenance["trt_version"] = trt_version_from_code(*code).str();
  table.provenance["trt_algorithm"] = algorithm;
  auto warn = [&](std::string message) {
    if (warnings != nullptr) warnings->push_back(std::move(message));
  };
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (detail::is_blank(line)) continue;
    const size_t sep = line.rfind(": ");
    std::optional<float> scale;
    if (sep != std::string_view::npos && sep > 0) scale = parse_trt_hex(line.substr(sep + 2));
    if (!scale) {
      return invalid_input(
          "{}:{}: malformed entry '{}' (expected '<tensor name>: <1-8 hex digits>')", file, i + 1,
          line);
    }
    const std::string name(line.substr(0, sep));
    if (!std::isfinite(*scale) || std::signbit(*scale)) {
      warn(fmt::format("{}:{}: tensor '{}' has scale {}: no scale, it runs in higher precision",
                       file, i + 1, name, *scale));
      continue;
    }
    if (table.tensors.contains(name)) {
      warn(fmt::format("{}:{}: tensor '{}' appears twice; the last entry is used", file, i + 1,
                       name));
    }
    TensorRange r;
    r.amax = static_cast<double>(*scale) * 127.0;
    r.min = r.max = std::numeric_limits<double>::quiet_NaN();
    table.tensors[name] = r;
  }
  return table;
}

}  // namespace ptq::calib
