// End to end: `ptq lint`, `ptq report` and `ptq cache convert --from-qdq` on resnet18 quantized
// by the planner in the test (not by another subcommand) and saved with the onnx module.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "model_util.h"
#include "ptq/onnx.h"
#include "ptq/report.h"

namespace ptq::report {
namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;
using ptq::testing::run_ptq;
using testing::load_test_model;
using testing::made_up_table;

class ReportCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("ptq_report_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    for (int64_t min_channels : {16, 0}) {
      ir::Model m = load_test_model("resnet18");
      planner::PlanOptions o;
      o.min_conv_channels = min_channels;
      auto r = planner::quantize(m, made_up_table(m, o), o);
      ASSERT_TRUE(r.has_value()) << r.status().message();
      const fs::path out = dir_ / (min_channels ? "resnet18.int8.onnx" : "resnet18.all.onnx");
      ASSERT_TRUE(onnx::save_model(m, out).is_ok());
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static fs::path dir_;
};
fs::path ReportCli::dir_;

TEST_F(ReportCli, LintCleanModelExitsZeroEvenWhenStrict) {
  auto r = run_ptq(
      {"lint", (dir_ / "resnet18.int8.onnx").string(), "--strict", "--summary", "--layers"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no findings"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("20 of 21 weighted ops run in INT8"), std::string::npos) << r.out;
  // Per layer: the first conv (3 input channels) stays float, the next one runs in INT8.
  auto line_of = [&](const std::string& node) {
    const size_t at = r.out.find("\n" + node + " ");
    return at == std::string::npos ? std::string()
                                   : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(line_of("/conv1/Conv").find(" float "), std::string::npos) << r.out;
  EXPECT_NE(line_of("/layer1/layer1.0/conv1/Conv").find(" int8 "), std::string::npos) << r.out;
}

TEST_F(ReportCli, LintJsonAndStrictExitCode) {
  const std::string model = (dir_ / "resnet18.all.onnx").string();
  auto r = run_ptq({"lint", model, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;  // warnings only
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["findings"].size(), 1u) << r.out;
  EXPECT_EQ(doc["findings"][0]["rule"], "small-conv");
  EXPECT_EQ(doc["findings"][0]["node"], "/conv1/Conv");
  EXPECT_EQ(doc["counts"]["warning"], 1);
  // Error-level findings fail --strict: a model with the weight DQ's axis attribute removed.
  ir::Model m = load_test_model("resnet18");
  auto q = planner::quantize(m, made_up_table(m, {}), {});
  ASSERT_TRUE(q.has_value());
  for (ir::Node& n : m.graph.nodes) {
    if (n.op_type == "DequantizeLinear")
      std::erase_if(n.attributes, [](const ir::Attribute& a) { return a.name == "axis"; });
  }
  const fs::path broken = dir_ / "no_axis.onnx";
  ASSERT_TRUE(onnx::save_model(m, broken).is_ok());
  auto plain = run_ptq({"lint", broken.string()});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("missing-axis"), std::string::npos) << plain.out;
  auto strict = run_ptq({"lint", broken.string(), "--strict"});
  EXPECT_EQ(strict.exit_code, 3);
  EXPECT_NE(strict.err.find("ptq: error: "), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("error-level lint finding"), std::string::npos) << strict.err;
}

TEST_F(ReportCli, ReportWritesHtmlDotAndSvg) {
  const fs::path html = dir_ / "report.html";
  const fs::path dot = dir_ / "g.dot";
  const fs::path svg = dir_ / "g.svg";
  const fs::path eval = dir_ / "eval.json";
  std::ofstream(eval) << R"({"model": "resnet18.int8.onnx", "top1": 0.5, "top5": 0.75})";
  auto r = run_ptq({"report", (dir_ / "resnet18.all.onnx").string(), "--compare",
                    (dir_ / "resnet18.int8.onnx").string(), "--eval-json", eval.string(), "-o",
                    html.string(), "--dot", dot.string(), "--svg", svg.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = read_file(html);
  EXPECT_NE(page.find("Variants side by side"), std::string::npos);
  EXPECT_NE(page.find("small-conv"), std::string::npos);
  EXPECT_NE(page.find("0.75"), std::string::npos) << "eval figures matched by model name";
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(read_file(dot).rfind("digraph model {", 0), 0u);
  EXPECT_NE(read_file(svg).find("<svg"), std::string::npos);
  auto usage = run_ptq({"report", (dir_ / "resnet18.all.onnx").string()});
  EXPECT_EQ(usage.exit_code, 2) << usage.err;
}

TEST_F(ReportCli, CacheConvertFromQdq) {
  const fs::path json = dir_ / "from_qdq.json";
  const fs::path trt = dir_ / "from_qdq.cache";
  const std::string model = (dir_ / "resnet18.int8.onnx").string();
  auto r = run_ptq({"cache", "convert", "--from-qdq", model, "-o", json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto r2 = run_ptq({"cache", "convert", "--from-qdq", model, "-o", trt.string()});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_EQ(read_file(trt).rfind("TRT-8601-EntropyCalibration2\n", 0), 0u) << read_file(trt);
  auto table = calib::read_cache(json);
  ASSERT_TRUE(table.has_value()) << table.status().message();
  auto loaded = onnx::load_model(model);
  ASSERT_TRUE(loaded.has_value());
  auto expected = qdq_to_table(*loaded);
  ASSERT_TRUE(expected.has_value());
  ASSERT_EQ(table->tensors.size(), expected->tensors.size());
  for (const auto& [name, range] : expected->tensors) {
    const calib::TensorRange* got = table->find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_DOUBLE_EQ(got->amax, range.amax) << name;
  }
  auto both =
      run_ptq({"cache", "convert", json.string(), "--from-qdq", model, "-o", json.string()});
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

}  // namespace
}  // namespace ptq::report
