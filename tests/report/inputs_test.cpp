// Readers of the report's optional inputs: sensitivity sweeps, evaluation results and error
// traces.
#include <gtest/gtest.h>

#include <cmath>

#include "ptq/report.h"

namespace ptq::report {
namespace {

TEST(Sensitivity, ReadsLayersExtrasInfoAndFloatSet) {
  const char* text = R"({"metric": "top1", "mode": "only", "baseline": 0.75,
    "layers": [{"name": "conv1", "metric": 0.70, "op_type": "Conv", "rank": 1},
               {"name": "fc", "metric": -0.5}],
    "float_set": ["conv1"]})";
  auto r = parse_sensitivity_json(text, "s.json");
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->metric, "top1");
  ASSERT_EQ(r->layers.size(), 2u);
  EXPECT_EQ(r->layers[0].name, "conv1");
  EXPECT_DOUBLE_EQ(r->layers[0].metric, 0.70);
  ASSERT_EQ(r->layers[0].extra.size(), 2u);
  EXPECT_EQ(r->layers[0].extra[0], (std::pair<std::string, std::string>{"op_type", "Conv"}));
  EXPECT_EQ(r->layers[0].extra[1], (std::pair<std::string, std::string>{"rank", "1"}));
  EXPECT_DOUBLE_EQ(r->layers[1].metric, -0.5);
  ASSERT_EQ(r->info.size(), 2u);
  EXPECT_EQ(r->info[0], (std::pair<std::string, std::string>{"mode", "only"}));
  EXPECT_EQ(r->info[1], (std::pair<std::string, std::string>{"baseline", "0.75"}));
  EXPECT_EQ(r->float_set, std::vector<std::string>{"conv1"});
}

TEST(Sensitivity, ErrorsNameTheFileAndTheLayer) {
  auto bad = parse_sensitivity_json(R"({"layers": [{"name": "a", "metric": 1}, {"name": "b"}]})",
                                    "s.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("s.json: layers[1]"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(parse_sensitivity_json(R"({"metric": "top1"})", "s.json").has_value());
  EXPECT_FALSE(parse_sensitivity_json("[1, 2", "s.json").has_value());
}

TEST(Eval, ReadsTopLevelAndNestedNumbers) {
  auto r = parse_eval_json(R"({"model": "m.onnx", "top1": 0.7, "top5": 0.9,
                               "metrics": {"loss": 1.25}, "backend": "cpu"})",
                           "e.json");
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->model, "m.onnx");
  EXPECT_EQ(r->source, "e.json");
  ASSERT_EQ(r->metrics.size(), 3u);
  EXPECT_EQ(r->metrics[0].first, "top1");
  EXPECT_DOUBLE_EQ(r->metrics[1].second, 0.9);
  EXPECT_EQ(r->metrics[2].first, "loss");
  auto none = parse_eval_json(R"({"model": "m.onnx"})", "e.json");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("e.json"), std::string::npos);
}

TEST(Trace, ReadsTensorsInFileOrderWithInfinitiesWrittenAsStrings) {
  auto r = parse_trace_json(R"({"model_a": "a.onnx", "model_b": "b.onnx", "jump_db": 10,
    "tensors": [{"name": "c1", "op_type": "Conv", "sqnr_db": "inf", "cosine": 1, "drop_db": "-inf"},
                {"name": "r1", "sqnr_db": 12.5, "jump": true, "dequantized": true}]})",
                            "t.json");
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->source, "t.json");
  EXPECT_EQ(r->model_a, "a.onnx");
  EXPECT_DOUBLE_EQ(r->jump_db, 10.0);
  ASSERT_EQ(r->tensors.size(), 2u);
  EXPECT_EQ(r->tensors[0].op_type, "Conv");
  EXPECT_TRUE(std::isinf(r->tensors[0].sqnr_db) && r->tensors[0].sqnr_db > 0);
  EXPECT_TRUE(std::isinf(r->tensors[0].drop_db) && r->tensors[0].drop_db < 0);
  EXPECT_FALSE(r->tensors[0].jump);
  EXPECT_EQ(r->tensors[1].name, "r1");
  EXPECT_DOUBLE_EQ(r->tensors[1].sqnr_db, 12.5);
  EXPECT_TRUE(std::isnan(r->tensors[1].cosine));
  EXPECT_TRUE(r->tensors[1].jump && r->tensors[1].dequantized);
}

TEST(Trace, ErrorsNameTheFileAndTheTensor) {
  auto none = parse_trace_json(R"({"outputs": []})", "t.json");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.status().message().find("t.json: expected a \"tensors\" array"),
            std::string::npos);
  auto bad = parse_trace_json(R"({"tensors": [{"name": "a", "sqnr_db": 3}, {"name": "b",
    "sqnr_db": "high"}]})", "t.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("t.json: tensors[1]"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace ptq::report
