// Data of several shapes end to end: a detector with dynamic height and width (torchvision's
// ssdlite320_mobilenet_v3_large backbone and head, scripts/export_detector.py) calibrated and
// quantized on samples of four sizes. The cache's tensor lines are the same bytes for any file
// order, shuffle and batch size (only the recorded batch size differs).

#include <gtest/gtest.h>

#include "calib_test_util.h"
#include "cli/run_ptq.h"
#include "common/files.h"
#include "common/paths.h"
#include "ptq/onnx.h"

namespace ptq::calibration {
namespace {

namespace fs = std::filesystem;
using ptq::testing::run_ptq;
using ptq::testing::read_file;
using testing::tensors_section;
using testing::TempDir;
using testing::without_batch;

TEST(ShapesCli, DetectorOnFourSizesCalibratesAlikeForAnyOrderAndBatchAndQuantizes) {
  ::setenv("SOURCE_DATE_EPOCH", "1714564800", 1);
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  const std::string model = (ptq::testing::test_models_dir() / "ssdlite_head.onnx").string();
  const fs::path samples = ptq::testing::test_models_dir() / "ssdlite_head.samples";
  ASSERT_TRUE(fs::exists(model)) << model << " (scripts/make-testdata.sh makes it)";
  TempDir dir;
  // The same eight files under names that sort in another order: 0.npy becomes s7.npy, ...
  fs::create_directories(dir.path() / "renamed");
  for (int k = 0; k < 8; ++k) {
    fs::copy_file(samples / fmt::format("{}.npy", k),
                  dir.path() / "renamed" / fmt::format("s{}.npy", 7 - k));
  }
  auto calibrate = [&](const std::string& data, std::vector<std::string> more,
                       const std::string& out) {
    std::vector<std::string> args{"calibrate", model, "--data", data, "--quiet", "--threads",
                                  "1", "-o", out};
    args.insert(args.end(), more.begin(), more.end());
    auto r = run_ptq(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(out);
  };
  const std::string one = calibrate(samples.string(), {"--batch", "1"}, dir / "one.json");
  const std::string two = calibrate(dir / "renamed", {"--batch", "2", "--shuffle", "--seed", "3"},
                                    dir / "two.json");
  ASSERT_FALSE(tensors_section(one).empty());
  EXPECT_EQ(without_batch(two), without_batch(one));
  // The heights and widths varied: the cache records them as -1.
  EXPECT_NE(one.find("\"shape\":[1,3,-1,-1]"), std::string::npos) << one.substr(0, 400);

  // quantize calibrates the same way (its cache's tensor lines are the calibrate's) and the
  // quantized model runs on every size, one output file per sample.
  auto q = run_ptq({"quantize", model, "--data", dir / "renamed", "--batch", "2", "--quiet",
                    "--threads", "1", "-o", dir / "q.onnx", "--cache-out", dir / "q.json"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(tensors_section(read_file(dir / "q.json")), tensors_section(one));
  auto run = run_ptq({"run", dir / "q.onnx", "--data", samples.string(), "--batch", "2",
                      "--threads", "1", "--quiet", "-o", dir / "out"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (int k = 0; k < 8; ++k) {
    auto t = data::load_npy(dir.path() / "out" / "cls_logits" / fmt::format("{}.npy", k));
    ASSERT_TRUE(t.has_value()) << t.status().message();
    EXPECT_EQ(t->rank(), 2);
    EXPECT_EQ(t->dim(1), 10);
  }
}

// eval's labels follow the samples when batches are grouped by shape (and shuffled): a
// classifier by global average pooling, whose label is the channel made largest.
TEST(ShapesCli, EvalLabelsFollowSamplesGroupedByShape) {
  ir::Model m;
  m.ir_version = 8;
  m.set_opset("", 13);
  m.graph.name = "pool";
  const std::vector<ir::Dim> image{ir::Dim::symbol("n"), ir::Dim::of(3), ir::Dim::symbol("h"),
                                   ir::Dim::symbol("w")};
  const std::vector<ir::Dim> scores{ir::Dim::symbol("n"), ir::Dim::of(3)};
  m.graph.inputs.push_back({"x", {ir::DType::kFloat32, image, {}}, {}});
  m.graph.outputs.push_back({"y", {ir::DType::kFloat32, scores, {}}, {}});
  m.graph.nodes.push_back(ptq::testing::output_node("GlobalAveragePool", {"x"}, {"p"}));
  m.graph.nodes.push_back(ptq::testing::output_node("Flatten", {"p"}, {"y"}));
  TempDir dir;
  ASSERT_TRUE(onnx::save_model(m, dir / "pool.onnx").is_ok());
  fs::create_directories(dir.path() / "data");
  const std::vector<std::pair<int64_t, int64_t>> sizes{{5, 7}, {6, 6}, {5, 7}, {8, 3}, {6, 6}};
  ir::Tensor labels(ir::DType::kInt64, {static_cast<int64_t>(sizes.size())});
  for (size_t k = 0; k < sizes.size(); ++k) {
    ir::Tensor x = testing::random_tensor({3, sizes[k].first, sizes[k].second}, k);
    const int64_t label = static_cast<int64_t>(k) % 3;
    const int64_t plane = sizes[k].first * sizes[k].second;
    for (int64_t i = 0; i < plane; ++i) x.data<float>()[label * plane + i] += 10.0f;
    labels.data<int64_t>()[k] = label;
    ASSERT_TRUE(data::save_npy(dir.path() / "data" / fmt::format("{}.npy", k), x).is_ok());
  }
  ASSERT_TRUE(data::save_npy(dir.path() / "labels.npy", labels).is_ok());
  auto r = run_ptq({"eval", dir / "pool.onnx", "--data", dir / "data", "--labels",
                    dir / "labels.npy", "--batch", "2", "--shuffle", "--seed", "1", "--json",
                    "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"top1_correct\": 5"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ptq::calibration
