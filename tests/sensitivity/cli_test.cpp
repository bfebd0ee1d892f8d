// `ptq sensitivity` end to end on the example model (examples/fashion_cnn.onnx): the JSON lists
// every unit, --target-drop meets its target, and the --write model evaluates (with `ptq eval`)
// to the report's final metric.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "outlier_model.h"
#include "ptq/calib_cache.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"

namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;
using ptq::testing::run_ptq;

class SensitivityCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ptq_sens_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const fs::path ex = fs::path(PTQ_SOURCE_DIR) / "examples";
    model_ = (ex / "fashion_cnn.onnx").string();
    calib_ = (ex / "data" / "calib.npy").string();
    test_ = (ex / "data" / "test.npy").string();
    labels_ = (ex / "data" / "test_labels.npy").string();
    ASSERT_TRUE(fs::exists(model_)) << model_;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string model_, calib_, test_, labels_;
};

TEST_F(SensitivityCli, SelectionMeetsTargetAndWrittenModelMatches) {
  const std::string cache = (dir_ / "c.json").string();
  auto c = run_ptq({"calibrate", model_, "--data", calib_, "--samples", "128", "--method", "minmax",
                    "-o", cache, "--quiet"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string report = (dir_ / "r.json").string();
  const std::string html = (dir_ / "r.html").string();
  const std::string partial = (dir_ / "p.onnx").string();
  auto r = run_ptq({"sensitivity",    model_,  "--cache",  cache,   "--eval",   test_,
                    "--eval-samples", "300",   "--labels", labels_, "--metric", "top1",
                    "--target-drop",  "0.002", "-o",       report,  "--html",   html,
                    "--write",        partial});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(report));
  EXPECT_EQ(j["metric"], "top1");
  EXPECT_EQ(j["samples"], 300);
  // An only-mode sweep runs no FP32 pass apart: its base's runs give the reference, whose
  // accuracy is the float model's (ptq eval).
  EXPECT_EQ(j["float_pass_batches"], 0);
  EXPECT_EQ(j["batches"], 19);
  auto fe =
      run_ptq({"eval", model_, "--data", test_, "--samples", "300", "--labels", labels_, "--json"});
  ASSERT_EQ(fe.exit_code, 0) << fe.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(fe.out)["top1"].get<double>(),
                   j["float_metric"].get<double>());

  // Every unit of the planner appears once.
  auto model = ptq::onnx::load_model(model_);
  ASSERT_TRUE(model);
  auto table = ptq::calib::read_cache(cache);
  ASSERT_TRUE(table);
  auto plan = ptq::planner::plan(*model, *table, {});
  ASSERT_TRUE(plan);
  std::vector<std::string> units, layers;
  for (const auto& u : plan->units) units.push_back(u.name);
  for (const auto& l : j["layers"]) layers.push_back(l["name"]);
  std::sort(units.begin(), units.end());
  std::sort(layers.begin(), layers.end());
  EXPECT_EQ(layers, units);
  EXPECT_GE(units.size(), 8u);

  // The selection meets the target.
  const auto& sel = j["selection"];
  ASSERT_TRUE(sel["met"].get<bool>()) << sel.dump();
  const double final_metric = sel["final_metric"].get<double>();
  EXPECT_GE(final_metric, j["float_metric"].get<double>() - 0.002);
  EXPECT_EQ(sel["trail"].size(), sel["float_set"].size() + 1);

  // The written model's accuracy (ptq eval) equals the report's final metric.
  auto e = run_ptq(
      {"eval", partial, "--data", test_, "--samples", "300", "--labels", labels_, "--json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto ej = nlohmann::json::parse(e.out);
  EXPECT_DOUBLE_EQ(ej["top1"].get<double>(), final_metric);

  // HTML: self-contained, no script, the chart and every layer.
  const std::string h = read_file(html);
  EXPECT_NE(h.find("<svg"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  for (const std::string& u : units) EXPECT_NE(h.find(u), std::string::npos) << u;
  // The terminal table ranks every unit.
  EXPECT_NE(r.out.find("rank"), std::string::npos);
}

TEST_F(SensitivityCli, AllButModeAndUsageErrors) {
  const std::string report = (dir_ / "r.json").string();
  auto r = run_ptq({"sensitivity", model_, "--data", calib_, "--samples", "64", "--method",
                    "minmax", "--eval", test_, "--eval-samples", "64", "--metric", "sqnr", "--mode",
                    "all-but", "-o", report, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(report));
  EXPECT_EQ(j["mode"], "all-but");
  EXPECT_FALSE(j["layers"].empty());
  EXPECT_EQ(j["float_pass_batches"], 4);  // the whole FP32 pass: the base is quantized
  EXPECT_EQ(j["batches"], 4);
  auto bad = run_ptq({"sensitivity", model_, "--data", calib_, "--eval", test_, "--metric", "top5",
                      "-o", report});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  auto neither = run_ptq({"sensitivity", model_, "--eval", test_, "-o", report});
  EXPECT_EQ(neither.exit_code, 2) << neither.err;
  // A drop (top1, cosine) or a maximum (mse) is not negative; sqnr's minimum dB may be.
  for (const char* metric : {"top1", "cosine", "mse"}) {
    auto negative = run_ptq({"sensitivity", model_, "--data", calib_, "--eval", test_, "--metric",
                             metric, "--target-drop", "-1", "-o", report});
    EXPECT_EQ(negative.exit_code, 2) << negative.err;
    EXPECT_NE(negative.err.find("cannot be negative"), std::string::npos) << negative.err;
  }
  auto nan = run_ptq({"sensitivity", model_, "--data", calib_, "--eval", test_, "--target-drop",
                      "nan", "-o", report});
  EXPECT_EQ(nan.exit_code, 2) << nan.err;
}

// The sweep plans with the eval batches' shapes, as `ptq quantize` does with its --data: the
// outlier model's fc is a MatMul [N,16] x [16,10], a matrix-vector product when N = 1, which
// the planner leaves float. Evaluated one sample at a time fc is no unit; four at a time it is
// (with N left open the planner would quantize it either way).
TEST_F(SensitivityCli, PlansWithTheEvalShapes) {
  const std::string model = (dir_ / "outlier.onnx").string();
  ASSERT_TRUE(ptq::onnx::save_model(ptq::sensitivity::testing::outlier_model(), model).is_ok());
  std::mt19937 gen(3);
  const std::string eval = (dir_ / "eval.npy").string();
  ASSERT_TRUE(
      ptq::data::save_npy(eval, ptq::testing::normal_tensor(gen, {4, 16, 8, 8}, 1.0f))
          .is_ok());
  const std::string cache = (dir_ / "c.json").string();
  auto c =
      run_ptq({"calibrate", model, "--data", eval, "--method", "minmax", "-o", cache, "--quiet"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto units_at = [&](const std::string& batch) {
    const std::string report = (dir_ / ("r" + batch + ".json")).string();
    auto r = run_ptq({"sensitivity", model, "--cache", cache, "--eval", eval, "--batch", batch,
                      "--metric", "sqnr", "-o", report, "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(read_file(report));
    std::vector<std::string> names;
    for (const auto& l : j["layers"]) names.push_back(l["name"]);
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> one = units_at("1");
  const std::vector<std::string> four = units_at("4");
  EXPECT_EQ(std::count(one.begin(), one.end(), "fc"), 0) << nlohmann::json(one).dump();
  EXPECT_EQ(std::count(four.begin(), four.end(), "fc"), 1) << nlohmann::json(four).dump();
  EXPECT_EQ(four.size(), one.size() + 1);
}

// A cache calibrated for another graph is refused as `ptq quantize` refuses it: the same one
// line, exit 3, and --force uses it anyway (with a warning).
TEST_F(SensitivityCli, CacheOfAnotherModelRefusedAsQuantizeDoesUnlessForce) {
  const std::string model = (dir_ / "outlier.onnx").string();
  const std::string other = (dir_ / "other.onnx").string();
  ptq::ir::Model m = ptq::sensitivity::testing::outlier_model();
  ASSERT_TRUE(ptq::onnx::save_model(m, model).is_ok());
  m.graph.mutable_initializer("fc.b")->data<float>()[0] += 0.5f;
  ASSERT_TRUE(ptq::onnx::save_model(m, other).is_ok());
  std::mt19937 gen(3);
  const std::string eval = (dir_ / "eval.npy").string();
  const ptq::ir::Tensor x = ptq::testing::normal_tensor(gen, {4, 16, 8, 8}, 1.0f);
  ASSERT_TRUE(ptq::data::save_npy(eval, x).is_ok());
  const std::string cache = (dir_ / "c.json").string();
  auto c = run_ptq(
      {"calibrate", model, "--data", eval, "--method", "minmax", "-o", cache, "--quiet"});
  ASSERT_EQ(c.exit_code, 0) << c.err;

  const std::string report = (dir_ / "r.json").string();
  auto refused = run_ptq({"sensitivity", other, "--cache", cache, "--eval", eval, "--metric",
                          "sqnr", "-o", report});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(report));
  auto quantize = run_ptq({"quantize", other, "--cache", cache, "-o", (dir_ / "q.onnx").string()});
  EXPECT_EQ(quantize.exit_code, 3) << quantize.err;
  EXPECT_EQ(refused.err, quantize.err);

  auto forced = run_ptq({"sensitivity", other, "--cache", cache, "--eval", eval, "--metric",
                         "sqnr", "-o", report, "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("ptq: warning: --force: using " + cache), std::string::npos)
      << forced.err;
  EXPECT_TRUE(fs::exists(report));
}

// --percentile reaches the method as in calibrate and quantize.
TEST_F(SensitivityCli, PercentileIsTheMethodsParameter) {
  const std::string report = (dir_ / "r.json").string();
  auto bad = run_ptq({"sensitivity", model_, "--data", calib_, "--method", "percentile",
                      "--percentile", "0", "--eval", test_, "-o", report});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(bad.err, "ptq: error: percentile 0 is out of range (0, 100]\n");
  auto help = run_ptq({"sensitivity", "--help"});
  EXPECT_NE(help.out.find("--percentile"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("entropy, minmax, mse or percentile"), std::string::npos) << help.out;
}

// The partial model --write gives is, byte for byte, the one `ptq quantize` writes from the same
// cache with the float set excluded: the same options (here taken from the cache a
// `quantize --per-tensor-weights --bias-correction` run wrote) through one definition.
TEST_F(SensitivityCli, WrittenModelIsWhatQuantizeWrites) {
  ::setenv("SOURCE_DATE_EPOCH", "1714564800", 1);
  const std::string cache = (dir_ / "c.json").string();
  auto q = run_ptq({"quantize", model_, "--data", calib_, "--samples", "32", "--method", "minmax",
                    "--per-tensor-weights", "--bias-correction", "-o",
                    (dir_ / "full.onnx").string(), "--cache-out", cache, "--quiet"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const std::string report = (dir_ / "r.json").string();
  const std::string partial = (dir_ / "p.onnx").string();
  auto r = run_ptq({"sensitivity", model_, "--cache", cache, "--eval", test_, "--eval-samples",
                    "32", "--metric", "sqnr", "--target-drop", "200", "--max-float-layers", "2",
                    "-o", report, "--write", partial, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(read_file(report));
  std::string float_set;
  for (const auto& name : j["selection"]["float_set"]) {
    float_set += (float_set.empty() ? "" : ",") + name.get<std::string>();
  }
  ASSERT_FALSE(float_set.empty());
  const std::string quantized = (dir_ / "q.onnx").string();
  // The other options come from the cache, as for the sweep.
  auto e = run_ptq({"quantize", model_, "--cache", cache, "--exclude", float_set, "-o", quantized,
                    "--quiet"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(read_file(partial), read_file(quantized)) << "float set " << float_set;
}

}  // namespace
