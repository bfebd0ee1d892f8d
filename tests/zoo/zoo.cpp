#include "common/ort_runner.h"
#include "common/paths.h"
#include "zoo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptq/data.h"
#include "ptq/metrics.h"

namespace ptq::zoo {

namespace fs = std::filesystem;

fs::path dir() { return testing::test_data_dir() / "zoo"; }

std::vector<Model> models() {
  std::ifstream in(dir() / "manifest.json");
  if (!in.good()) return {};
  const nlohmann::json manifest = nlohmann::json::parse(in);
  std::vector<Model> out;
  for (const auto& e : manifest.at("models")) {
    out.push_back({e.at("name"), e.at("family"), e.at("opset"), e.at("batch"),
                   e.at("inputs").get<std::vector<std::string>>(),
                   e.at("outputs").get<std::vector<std::string>>()});
  }
  return out;
}

fs::path onnx(const Model& m) { return dir() / (m.name + ".onnx"); }

std::vector<std::string> data_args(const Model& m, const std::string& split) {
  std::vector<std::string> args;
  for (const std::string& input : m.inputs) {
    args.push_back("--data");
    args.push_back(
        fmt::format("{}={}", input, (dir() / m.name / split / (input + ".npy")).string()));
  }
  return args;
}

fs::path scratch(const std::string& test, const std::string& name) {
  return testing::scratch_dir({"zoo", test, name});
}

bool run_ort(const fs::path& model, const Model& m, const std::string& split, int count,
             int batch, const fs::path& out) {
  std::vector<std::string> args = {model.string(), out.string(), std::to_string(batch), "1",
                                   std::to_string(count)};
  for (const std::string& input : m.inputs) {
    args.push_back(
        fmt::format("{}={}", input, (dir() / m.name / split / (input + ".npy")).string()));
  }
  return testing::run_ort_script("common/ort_batches.js", args);
}

std::vector<OutputError> compare(const Model& m, const fs::path& reference, const fs::path& test) {
  std::vector<OutputError> errors;
  for (const std::string& output : m.outputs) {
    auto r = data::load_npy(reference / (output + ".npy"));
    auto t = data::load_npy(test / (output + ".npy"));
    EXPECT_TRUE(r.has_value() && t.has_value())
        << m.name << " output " << output << ": " << (r.has_value() ? "" : r.status().message())
        << (t.has_value() ? "" : t.status().message());
    if (!r.has_value() || !t.has_value()) continue;
    metrics::Agreement a;
    const Status s = a.add(*r, *t);
    EXPECT_TRUE(s.ok()) << m.name << " output " << output << ": " << s.message();
    double lo = r->size() > 0 ? r->as_double(0) : 0.0, hi = lo;
    for (int64_t i = 1; i < r->size(); ++i) {
      lo = std::min(lo, r->as_double(i));
      hi = std::max(hi, r->as_double(i));
    }
    errors.push_back({output, a.rel_l2(), a.sqnr_db(), hi - lo});
  }
  return errors;
}

}  // namespace ptq::zoo
