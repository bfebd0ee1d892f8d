// The model zoo (scripts/export_zoo.py, generated into $PTQ_TEST_DATA/zoo by make-testdata.sh)
// as the tests see it: the manifest's models, their sample files, and the two runtimes run on
// them through their command lines (`ptq run`, tests/common/ort_batches.js).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace ptq::zoo {

struct Model {
  std::string name;
  std::string family;  // cnn, dense, transformer, audio, sequence
  int opset = 0;
  int batch = 0;  // the model's natural batch
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// gtest prints a parameter by its name.
inline void PrintTo(const Model& m, std::ostream* os) { *os << m.name; }

std::filesystem::path dir();
// Every model of the manifest; empty when it is missing (ZooManifest.ListsTheZoo fails then).
std::vector<Model> models();
std::filesystem::path onnx(const Model& m);
// `--data NAME=FILE` pairs for a split ("calib": 16 samples, "test": 8 held out).
std::vector<std::string> data_args(const Model& m, const std::string& split);
// A fresh folder under the build tree for one test's outputs.
std::filesystem::path scratch(const std::string& test, const std::string& name);

// ONNX Runtime on the first `count` samples of `split`, `batch` at a time, one thread; the
// outputs go to `out`/<name>.npy. False (with a failed expectation) when node or ORT fails.
bool run_ort(const std::filesystem::path& model, const Model& m, const std::string& split,
             int count, int batch, const std::filesystem::path& out);

// Relative L2 of every output in `test` against `reference` (each <output>.npy); a missing or
// unreadable file fails the calling test.
struct OutputError {
  std::string output;
  double rel_l2 = 0.0;
  double sqnr_db = 0.0;
  double reference_spread = 0.0;  // max - min of the reference: 0 agrees with anything
};
std::vector<OutputError> compare(const Model& m, const std::filesystem::path& reference,
                                 const std::filesystem::path& test);

}  // namespace ptq::zoo
