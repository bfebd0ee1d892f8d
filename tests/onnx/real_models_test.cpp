// Round trips of real exported models (torchvision, a transformer encoder) and of every ONNX
// backend node test model, made by scripts/make-testdata.sh into PTQ_TEST_DATA. Missing data
// is a failure, not a skip.
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/paths.h"
#include "test_util.h"

using namespace ptq;
using namespace ptq::testing;
namespace po = ptq::onnx;

namespace {

using ptq::testing::test_data_dir;

// load -> save -> load: same ir model, and the saved file equals the original once both keep
// tensors as raw_data.
void round_trip(const ir::Model& model, const fs::path& file, const fs::path& out_dir,
                bool run_checker) {
  SCOPED_TRACE(file.string());
  const fs::path saved_path = out_dir / "saved.onnx";
  Status s = po::save_model(model, saved_path);
  ASSERT_TRUE(s.is_ok()) << s.message();
  auto back = po::load_model(saved_path);
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(model, *back);
  EXPECT_EQ(po::graph_hash(model), po::graph_hash(*back));
  EXPECT_EQ(po::graph_hash(model), reference_graph_hash(model));

  ::onnx::ModelProto original = read_proto(file);
  ::onnx::ModelProto saved = read_proto(saved_path);
  canonical_model(original);
  canonical_model(saved);
  std::string diff;
  EXPECT_TRUE(protos_equivalent(original, saved, &diff)) << diff.substr(0, 2000);
  if (run_checker) {
    Status c = po::check_model(*back);
    EXPECT_TRUE(c.is_ok()) << c.message();
  }
}

class ExportedModel : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(ExportedModel, RoundTrip) {
  const fs::path file = test_data_dir() / "models" / (std::string(GetParam()) + ".onnx");
  ASSERT_TRUE(fs::exists(file)) << file << " is missing: run scripts/make-testdata.sh "
                                << test_data_dir().string();
  auto m = po::load_model(file);
  ASSERT_TRUE(m) << m.status().message();
  TempDir dir;
  round_trip(*m, file, dir.path(), /*run_checker=*/true);
  // Exported with a symbolic batch dim, which survives loading.
  ASSERT_FALSE(m->graph.real_inputs().empty());
  const auto& dims = m->graph.real_inputs()[0]->type.dims;
  ASSERT_TRUE(dims.has_value());
  EXPECT_FALSE(dims->at(0).known());
  // Shape inference gives every node output a dtype.
  for (const ir::Node& n : m->graph.nodes) {
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      EXPECT_NE(m->graph.value_dtype(out), ir::DType::kUndefined) << out;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ExportedModel,
                         ::testing::Values("resnet18", "mobilenet_v2", "transformer"));

TEST(BackendNodeModels, AllRoundTrip) {
  const fs::path root = test_data_dir() / "onnx-backend" / "node";
  ASSERT_TRUE(fs::is_directory(root)) << root << " is missing: run scripts/make-testdata.sh "
                                      << test_data_dir().string();
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.path().filename().string().rfind("test_", 0) == 0 &&
        fs::exists(e.path() / "model.onnx")) {
      models.push_back(e.path() / "model.onnx");
    }
  }
  std::sort(models.begin(), models.end());
  ASSERT_GT(models.size(), 500u) << "expected ONNX's full node test set in " << root;
  TempDir dir;
  for (const fs::path& file : models) {
    auto model = po::load_model(file);
    ASSERT_TRUE(model) << model.status().message();
    round_trip(*model, file, dir.path(), /*run_checker=*/false);
    if (::testing::Test::HasFatalFailure()) return;
  }
}
