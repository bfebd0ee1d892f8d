// The sweep's report: report_json() on results made by hand (infinite metrics as strings, per
// output scores only for several outputs and a metric other than top1, the selection), and
// report_html() drawing it with infinities capped.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "outlier_model.h"
#include "ptq/sensitivity.h"

namespace ptq::sensitivity {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A model with outputs a and b (only their names are read).
ir::Model two_outputs() {
  ir::Model m;
  for (const char* name : {"a", "b"}) {
    ir::ValueInfo v;
    v.name = name;
    m.graph.outputs.push_back(v);
  }
  return m;
}

SweepResult results() {
  SweepResult r;
  r.mode = Mode::kOnly;
  r.float_score = {kInf, {kInf, kInf}};
  r.quantized_score = {20.0, {19.0, 21.0}};
  r.layers = {{"conv1", "Conv", {kInf, {kInf, kInf}}, 5}, {"fc", "Gemm", {12.5, {12.0, 13.0}}, 2}};
  return r;
}

TEST(Report, JsonWritesEveryUnitWithInfinitiesAsStrings) {
  const ReportInfo info{.model_path = "m.onnx", .metric = Metric::kSqnr, .samples = 64,
                        .timing = {1.5, 0.5, 3.0, 1.0, 4, 4}};
  const std::string text = report_json(two_outputs(), results(), nullptr, info);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.rfind("{\n  \"model\": \"m.onnx\",\n", 0), 0u) << text;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["metric"], "sqnr");
  EXPECT_EQ(j["mode"], "only");
  EXPECT_EQ(j["higher_is_better"], true);
  EXPECT_EQ(j["samples"], 64);
  EXPECT_EQ(j["float_metric"], "inf");
  EXPECT_EQ(j["quantized_metric"], 20.0);
  EXPECT_EQ(j["outputs"], nlohmann::json({"a", "b"}));
  EXPECT_EQ(j["quantized_per_output"], nlohmann::json({19.0, 21.0}));
  EXPECT_EQ(j["sweep_seconds"], 1.5);
  EXPECT_EQ(j["float_pass_batches"], 4);
  ASSERT_EQ(j["layers"].size(), 2u);
  EXPECT_EQ(j["layers"][0]["rank"], 1);
  EXPECT_EQ(j["layers"][0]["name"], "conv1");
  EXPECT_EQ(j["layers"][0]["metric"], "inf");
  EXPECT_EQ(j["layers"][0]["delta_vs_float"], "nan");  // inf - inf
  EXPECT_EQ(j["layers"][0]["per_output"], nlohmann::json({"inf", "inf"}));
  EXPECT_EQ(j["layers"][1]["delta_vs_quantized"], -7.5);
  EXPECT_EQ(j["layers"][1]["subgraph_nodes"], 2);
  EXPECT_FALSE(j.contains("selection"));

  // top1 scores the first output only: no per output scores.
  const ReportInfo top1{.model_path = "m.onnx", .metric = Metric::kTop1};
  const auto t = nlohmann::json::parse(report_json(two_outputs(), results(), nullptr, top1));
  EXPECT_FALSE(t.contains("quantized_per_output"));
  EXPECT_FALSE(t["layers"][0].contains("per_output"));
}

TEST(Report, JsonRecordsTheSelection) {
  Selection sel;
  sel.float_set = {"conv1"};
  sel.score = {25.0, {24.0, 26.0}};
  sel.met = true;
  sel.trail = {{"", 0, {20.0, {19.0, 21.0}}, false}, {"conv1", 1, {25.0, {24.0, 26.0}}, true}};
  const ReportInfo info{.model_path = "m.onnx", .metric = Metric::kSqnr, .target_drop = 24.0,
                        .max_float = 3};
  const auto j = nlohmann::json::parse(report_json(two_outputs(), results(), &sel, info));
  EXPECT_EQ(j["float_set"], nlohmann::json({"conv1"}));
  const auto& s = j["selection"];
  EXPECT_EQ(s["target_drop"], 24.0);
  EXPECT_EQ(s["max_float_layers"], 3);
  EXPECT_EQ(s["final_metric"], 25.0);
  EXPECT_EQ(s["final_per_output"], nlohmann::json({24.0, 26.0}));
  EXPECT_EQ(s["met"], true);
  ASSERT_EQ(s["trail"].size(), 2u);
  EXPECT_EQ(s["trail"][1], nlohmann::json({{"added", "conv1"}, {"float_count", 1},
                                           {"metric", 25.0}, {"meets", true}}));
}

TEST(Report, HtmlDrawsInfiniteMetricsCapped) {
  const ir::Model model = testing::outlier_model();
  const ReportInfo info{.model_path = "m.onnx", .metric = Metric::kSqnr};
  const std::string text = report_json(two_outputs(), results(), nullptr, info);
  std::vector<std::string> warnings;
  auto html = report_html(text, "r.json", model, "fully quantized model", "ptq sensitivity: m.onnx",
                          "ptq test", &warnings);
  ASSERT_TRUE(html.has_value()) << html.status().message();
  EXPECT_NE(html->find("ptq sensitivity: m.onnx"), std::string::npos);
  EXPECT_NE(html->find("inf (drawn capped)"), std::string::npos);
  EXPECT_NE(html->find("fc"), std::string::npos);
  EXPECT_NE(html->find("<footer>ptq test</footer>"), std::string::npos);
  EXPECT_TRUE(warnings.empty()) << warnings.front();

  auto bad = report_html("not json", "r.json", model, "m", "t", "g", nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().message().rfind("r.json: ", 0), 0u) << bad.status().message();
}

}  // namespace
}  // namespace ptq::sensitivity
