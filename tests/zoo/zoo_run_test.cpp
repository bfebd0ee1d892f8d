// Every zoo model runs through `ptq run` at batch 1 and 4 and agrees with ONNX Runtime run at
// the same batches on the same 4 held-out samples: relative L2 <= 1e-4 per output. Both
// runtimes compute in float32 with their own summation orders, so outputs differ by rounding
// (~1e-6 relative); a wrong kernel, attribute or broadcast differs by far more.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "cli/run_ptq.h"
#include "zoo.h"

namespace ptq::zoo {
namespace {

constexpr double kMaxRelL2 = 1e-4;
constexpr int kSamples = 4;

TEST(ZooManifest, ListsTheZoo) {
  const std::vector<Model> all = models();
  EXPECT_GE(all.size(), 16u) << "zoo manifest in " << dir() << " (make testdata)";
  for (const Model& m : all) {
    EXPECT_FALSE(m.inputs.empty()) << m.name;
    EXPECT_FALSE(m.outputs.empty()) << m.name;
  }
}

class ZooRun : public ::testing::TestWithParam<Model> {};

TEST_P(ZooRun, MatchesOnnxRuntime) {
  const Model& m = GetParam();
  for (int batch : {1, 4}) {
    const auto ours = scratch("run", fmt::format("{}_b{}_ptq", m.name, batch));
    const auto theirs = scratch("run", fmt::format("{}_b{}_ort", m.name, batch));
    std::vector<std::string> args = {"run", onnx(m).string(), "-o", ours.string(), "--batch",
                                     std::to_string(batch), "--samples", std::to_string(kSamples),
                                     "--threads", "1"};
    for (const std::string& a : data_args(m, "test")) args.push_back(a);
    const auto r = ptq::testing::run_ptq(args);
    ASSERT_EQ(r.exit_code, 0) << m.name << " batch " << batch << ": " << r.err;
    ASSERT_TRUE(run_ort(onnx(m), m, "test", kSamples, batch, theirs));
    for (const OutputError& e : compare(m, theirs, ours)) {
      EXPECT_LE(e.rel_l2, kMaxRelL2) << m.name << " batch " << batch << " output " << e.output;
      EXPECT_GT(e.reference_spread, 0.0) << m.name << " output " << e.output << " is constant";
      std::printf("%s batch %d %s: rel_l2 %.3g\n", m.name.c_str(), batch, e.output.c_str(),
                  e.rel_l2);
    }
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooRun);
INSTANTIATE_TEST_SUITE_P(Zoo, ZooRun, ::testing::ValuesIn(models()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ptq::zoo
