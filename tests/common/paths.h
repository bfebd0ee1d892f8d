// Where tests find their inputs and write their outputs: the generated test data
// (scripts/make-testdata.sh; $PTQ_TEST_DATA overrides the configured folder), the bundled
// example, and scratch folders under the build tree.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>

namespace ptq::testing {

inline std::filesystem::path test_data_dir() {
  const char* env = std::getenv("PTQ_TEST_DATA");
  return env != nullptr && *env != '\0' ? std::filesystem::path(env)
                                        : std::filesystem::path(PTQ_TEST_DATA);
}

// The generated test models (`<name>.onnx`) and their samples.
inline std::filesystem::path test_models_dir() { return test_data_dir() / "models"; }

// The bundled example: examples/fashion_cnn.onnx and its data/ (calib, test, test_labels).
inline std::filesystem::path example_dir() {
  return std::filesystem::path(PTQ_SOURCE_DIR) / "examples";
}
inline std::string example_model() { return (example_dir() / "fashion_cnn.onnx").string(); }
inline std::string calib_npy() { return (example_dir() / "data" / "calib.npy").string(); }
inline std::string test_npy() { return (example_dir() / "data" / "test.npy").string(); }
inline std::string test_labels() { return (example_dir() / "data" / "test_labels.npy").string(); }

// build/test-scratch/<parts...>, emptied and made: a test's outputs, kept for a look after.
inline std::filesystem::path scratch_dir(std::initializer_list<std::string> parts) {
  std::filesystem::path dir = std::filesystem::path(PTQ_BINARY_DIR) / "test-scratch";
  for (const std::string& p : parts) dir /= p;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ptq::testing
