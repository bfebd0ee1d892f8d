// libFuzzer target: a calibration cache of any format (read_cache's detection: ptqkit JSON,
// TensorRT text, ONNX Runtime text or JSON). Whatever parses is written back in every format,
// and the ptqkit JSON form must read back, so the writers see whatever the readers accept.
#include <cstdlib>
#include <string_view>

#include "input_file.h"
#include "ptq/calib_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ptq::calib;
  const auto path = ptq::fuzz::write_input(data, size, "input.cache");
  Warnings warnings;
  auto table = read_cache(path, &warnings);
  if (!table) return 0;
  (void)trt_cache_string(*table, {.algorithm = "EntropyCalibration2"});
  (void)ort_text_string(*table);
  (void)ort_json_string(*table, OrtJsonStyle::kMinMax);
  (void)ort_json_string(*table, OrtJsonStyle::kTensorsData);
  if (!parse_json_cache(json_cache_string(*table), "written.json")) std::abort();
  return 0;
}
