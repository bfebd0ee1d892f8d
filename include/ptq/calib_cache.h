// The calibration cache module (ptq_calib_cache): CalibrationTable (tensor -> amax, with the
// statistics it came from and the run's provenance) and its file formats: the ptqkit JSON cache,
// the TensorRT text cache, ONNX Runtime's calibration.cache / calibration.json.
// See shared specs/calibration-cache.md and docs/CACHE_FORMAT.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptq/status.h"

namespace ptq::calib {

// Everything known about one calibrated tensor.
struct TensorRange {
  double amax = 0.0;   // symmetric range: quantized over [-amax, amax], scale = amax / 127
  double min = 0.0;    // signed min seen (NaN when unknown, e.g. read from a TensorRT cache)
  double max = 0.0;    // signed max seen
  int64_t count = 0;   // finite elements seen
  int64_t nonfinite = 0;  // NaN / ±Inf values skipped (with --ignore-nonfinite)
  // The raw |x| histogram over [0, hist_max] (empty when the source had none).
  double hist_max = 0.0;
  std::vector<uint64_t> histogram{};
  double scale() const { return amax > 0.0 ? amax / 127.0 : 1.0; }
  bool has_histogram() const { return !histogram.empty(); }
  // max(|min|, |max|): the min-max pass's amax_max (NaN when min/max are unknown).
  double abs_max() const;
};

// The model a cache was calibrated for.
struct ModelIdentity {
  std::string graph_sha256{};  // ptq::onnx::graph_hash(model); empty when unknown
  int64_t opset = 0;         // default-domain opset; 0 when unknown
  // Graph inputs and the shapes fed during calibration (batch dim included; -1 = varied).
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs{};
};

// How the calibration ran (method and parameters live in CalibrationTable).
struct RunInfo {
  int64_t samples = 0;
  int64_t batch = 0;
  std::string backend{};       // "cpu", "vulkan", or "mixed" after merging
  std::string ptqkit_version{};
  std::string date{};          // ISO 8601, set by the caller (the library never reads a clock)
  bool ignore_nonfinite = false;
};

// SmoothQuant's record (docs/SMOOTHQUANT.md): the model was smoothed before calibration with
// these per-channel factors, keyed by the activation each divides (its last axis), so a
// quantize from this cache smooths the float model again the same way without data.
struct SmoothQuantRecord {
  double alpha = 0.5;
  std::map<std::string, std::vector<double>> factors;
  bool operator==(const SmoothQuantRecord&) const = default;
};

struct CalibrationTable {
  std::map<std::string, TensorRange> tensors;  // sorted by name: files are byte-stable
  std::string method;                          // "entropy", "minmax", "percentile", "mse"
  std::map<std::string, double> method_params; // e.g. {"percentile": 99.99}
  ModelIdentity model;
  RunInfo run;
  // Free-form extras recorded in the JSON cache (e.g. "trt_version" read from a TensorRT cache).
  std::map<std::string, std::string> provenance;
  // Set when the ranges were measured on the SmoothQuant-smoothed model (JSON key
  // "smoothquant"; the other formats cannot carry it).
  std::optional<SmoothQuantRecord> smoothquant;
  // The options a model was quantized with from this table (`ptq quantize` records them:
  // calibration::record_settings), one key each; empty when none were recorded.
  std::map<std::string, std::string> options;
  // Bias corrections measured with this table, per quantization unit, one per output channel
  // (planner::PlanOptions::bias_corrections); empty without --bias-correction.
  std::map<std::string, std::vector<double>> bias_corrections;

  const TensorRange* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
  // True if every tensor carries a histogram (so another method can be applied).
  bool has_histograms() const;
};

// ---- formats --------------------------------------------------------------------------------

enum class CacheFormat {
  kJson,       // ptqkit JSON cache (.json with "format": "ptqkit-calibration")
  kTensorRT,   // TensorRT text cache ("TRT-<version>-<algo>" header)
  kOrtText,    // ONNX Runtime calibration.cache ("name amax" lines)
  kOrtJson,    // ONNX Runtime calibration.json ({name: [min, max]} or TensorsData)
};
std::string_view format_name(CacheFormat f);  // "json", "tensorrt", "ort", "ort-json"
Expected<CacheFormat> parse_format(std::string_view name);

// Guesses a file's format from its first bytes (and, for JSON, its "format" key).
CacheFormat detect_format(std::string_view bytes);

// Non-fatal findings of a reader (inf/NaN scales, negative values, …), one line each.
using Warnings = std::vector<std::string>;

// Reads a cache of any format; errors name the file and line.
Expected<CalibrationTable> read_cache(const std::filesystem::path& path,
                                      Warnings* warnings = nullptr);

// ---- ptqkit JSON cache ----------------------------------------------------------------------

// Deterministic bytes: sorted keys, one tensor per line, floats in shortest round-trip form,
// histograms as [bin, count] pairs of the non-zero bins.
std::string json_cache_string(const CalibrationTable& table);
Expected<CalibrationTable> parse_json_cache(std::string_view text, std::string_view file_name);
Status write_json_cache(const CalibrationTable& table, const std::filesystem::path& path);

// ---- TensorRT text cache --------------------------------------------------------------------

struct TrtVersion {
  int major = 8, minor = 6, patch = 1;
  // TensorRT <= 9: major*1000 + minor*100 + patch (8601); >= 10: major*10000 + … (100300).
  int64_t code() const;
  std::string str() const;  // "8.6.1"
};
// Parses "8.6.1", "10.3.0", or a header code ("8601", "100300").
Expected<TrtVersion> parse_trt_version(std::string_view text);
TrtVersion trt_version_from_code(int64_t code);

// IEEE-754 float32 bits of amax / 127 as 8 lowercase hex digits ("3c010204" for amax 1.0).
std::string trt_scale_hex(double amax);
// The scale a hex word encodes (1-8 hex digits), or nullopt if it is not hex.
std::optional<float> parse_trt_hex(std::string_view hex);

struct TrtWriteOptions {
  TrtVersion version{};
  // Header algorithm; empty = the method's TensorRT name in the calibrator registry
  // (ptq/calibrators.inc: entropy -> EntropyCalibration2, minmax -> MinMaxCalibration); a
  // method TensorRT lacks (percentile, mse) needs a name, since TensorRT checks it.
  std::string algorithm{};
};
Expected<std::string> trt_cache_string(const CalibrationTable& table,
                                       const TrtWriteOptions& options = {});
Expected<CalibrationTable> parse_trt_cache(std::string_view text, std::string_view file_name,
                                           Warnings* warnings = nullptr);
Status write_trt_cache(const CalibrationTable& table, const std::filesystem::path& path,
                       const TrtWriteOptions& options = {});

// ---- ONNX Runtime files ---------------------------------------------------------------------

// calibration.cache: "name amax" lines, sorted by name, no header.
std::string ort_text_string(const CalibrationTable& table);
Expected<CalibrationTable> parse_ort_text(std::string_view text, std::string_view file_name,
                                          Warnings* warnings = nullptr);
enum class OrtJsonStyle {
  kMinMax,       // {"name": [min, max]}
  kTensorsData,  // {"CLS": "TensorsData", "data": {name: {"CLS": "TensorData", …}}, …}
};
// min/max written are the seen values for min-max tables, [-amax, amax] otherwise.
std::string ort_json_string(const CalibrationTable& table, OrtJsonStyle style);
Expected<CalibrationTable> parse_ort_json(std::string_view text, std::string_view file_name,
                                          Warnings* warnings = nullptr);

// ---- writing any format ---------------------------------------------------------------------

struct WriteOptions {
  CacheFormat format = CacheFormat::kJson;
  TrtWriteOptions trt{};
  OrtJsonStyle ort_json = OrtJsonStyle::kMinMax;
};
// Writes atomically (temporary file + rename).
Status write_cache(const CalibrationTable& table, const std::filesystem::path& path,
                   const WriteOptions& options = {});

// ---- operations -----------------------------------------------------------------------------

struct MergeOptions {
  bool force = false;  // merge even if the shards' model hashes differ
  // Shards whose histogram ranges differ are refused; with this set their histograms are
  // dropped instead and the result is a ranges (min-max) table.
  bool drop_histograms = false;
};
// Merges shard tables' statistics: min of mins, max of maxes, counts and histograms added.
// Histograms add only over one common range T per tensor (the two-phase sharded flow of
// docs/CACHE_FORMAT.md); every shard must hold the same tensors. amax is set to the min-max
// amax and method to "minmax": calib::merge_calibrations recomputes it with a method.
Expected<CalibrationTable> merge_tables(std::span<const CalibrationTable> shards,
                                        const MergeOptions& options = {});

// How a cache fits a model.
struct ModelCheck {
  bool hash_known = false;     // the cache records a graph hash
  bool hash_matches = true;
  std::vector<std::string> missing;  // expected tensors the cache lacks (run in float)
  std::vector<std::string> extra;    // cache entries for no expected tensor (ignored)
  bool ok() const { return hash_matches && missing.empty() && extra.empty(); }
};
ModelCheck check_model(const CalibrationTable& table, std::string_view graph_sha256,
                       std::span<const std::string> expected_tensors);
// Refuses a cache calibrated for another graph (unless `force`): an error naming the file and
// both hashes. Missing/extra names are not errors (TensorRT semantics); list them as warnings.
Status require_same_model(const CalibrationTable& table, std::string_view graph_sha256,
                          std::string_view cache_file, bool force);
// "missing from cache (run in float): a, b" / "ignored (no such tensor): c" lines.
Warnings describe(const ModelCheck& check);

}  // namespace ptq::calib
