// Reading and writing a cache of any format: format detection and dispatch.
#include "ptq/calib_cache.h"
#include "ptq/util/atomic_file.h"

namespace ptq::calib {

std::string_view format_name(CacheFormat f) {
  switch (f) {
    case CacheFormat::kJson: return "json";
    case CacheFormat::kTensorRT: return "tensorrt";
    case CacheFormat::kOrtText: return "ort";
    case CacheFormat::kOrtJson: return "ort-json";
  }
  return "json";
}

Expected<CacheFormat> parse_format(std::string_view name) {
  for (CacheFormat f : {CacheFormat::kJson, CacheFormat::kTensorRT, CacheFormat::kOrtText,
                        CacheFormat::kOrtJson}) {
    if (format_name(f) == name) return f;
  }
  return usage_error("unknown cache format '{}' (json, tensorrt, ort, ort-json)", name);
}

CacheFormat detect_format(std::string_view bytes) {
  if (bytes.starts_with("\xEF\xBB\xBF")) bytes.remove_prefix(3);  // UTF-8 byte order mark
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') {
    return bytes.find("\"ptqkit-calibration\"") != std::string_view::npos ? CacheFormat::kJson
                                                                         : CacheFormat::kOrtJson;
  }
  if (bytes.starts_with("TRT-")) return CacheFormat::kTensorRT;
  return CacheFormat::kOrtText;
}

Expected<CalibrationTable> read_cache(const std::filesystem::path& path, Warnings* warnings) {
  PTQ_ASSIGN_OR_RETURN(std::string bytes, util::read_file(path));
  const std::string file = path.string();
  switch (detect_format(bytes)) {
    case CacheFormat::kJson: return parse_json_cache(bytes, file);
    case CacheFormat::kTensorRT: return parse_trt_cache(bytes, file, warnings);
    case CacheFormat::kOrtJson: return parse_ort_json(bytes, file, warnings);
    case CacheFormat::kOrtText: return parse_ort_text(bytes, file, warnings);
  }
  return parse_ort_text(bytes, file, warnings);
}

Status write_cache(const CalibrationTable& table, const std::filesystem::path& path,
                   const WriteOptions& options) {
  switch (options.format) {
    case CacheFormat::kJson: return write_json_cache(table, path);
    case CacheFormat::kTensorRT: return write_trt_cache(table, path, options.trt);
    case CacheFormat::kOrtText: return util::write_file_atomic(path, ort_text_string(table));
    case CacheFormat::kOrtJson:
      return util::write_file_atomic(path, ort_json_string(table, options.ort_json));
  }
  return usage_error("unknown cache format");
}

}  // namespace ptq::calib
