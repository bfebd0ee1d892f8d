// Device statistics (minmax.comp, histogram.comp) against the host ones on the same data. The
// observed tensor is Neg(x) or Relu(x), which both backends compute exactly, so min/max and
// histogram counts must be identical, including values placed exactly on and next to bin edges.
#include <cmath>
#include <limits>
#include <random>

#include "ptq/calibrators.h"
#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

// Keeps the statistics an observer is shown for one tensor.
class StatsProbe final : public runtime::Observer {
 public:
  StatsProbe(std::string name, std::vector<double> ranges)
      : name_(std::move(name)), ranges_(std::move(ranges)) {}
  std::vector<std::string> wanted(const ir::Graph&) override { return {name_}; }
  Status observe(const runtime::ObservedTensor& t) override {
    host = t.host != nullptr;
    mm = t.stats.minmax();
    hists.clear();
    for (double T : ranges_) {
      std::vector<uint64_t> h(2048, 0);
      t.stats.histogram(T, h);
      hists.push_back(std::move(h));
    }
    return Status::ok();
  }
  bool host = true;
  runtime::MinMaxStats mm;
  std::vector<std::vector<uint64_t>> hists;

 private:
  std::string name_;
  std::vector<double> ranges_;
};

// The model y0 = op(x) with x fed at run time.
ir::Model unary_model(const char* op) {
  OneNode spec;
  spec.op = op;
  spec.feeds = {{"x", ir::Tensor(ir::DType::kFloat32, {1})}};
  spec.inputs = {"x"};
  return build_model(spec);
}

std::vector<uint64_t> reference_histogram(const ir::Tensor& y, double T) {
  std::vector<uint64_t> h(2048, 0);
  calib::add_to_histogram(y.span<float>(), T, h);
  return h;
}

// Values at, just below and just above every 7th bin edge of T, plus random ones.
ir::Tensor edge_values(float T, std::mt19937& rng) {
  std::vector<float> v;
  for (int k = 0; k <= 2048; k += 7) {
    const float e = static_cast<float>(static_cast<double>(T) * k / 2048.0);
    v.push_back(e);
    v.push_back(std::nextafter(e, 0.0f));
    v.push_back(std::nextafter(e, 2.0f * T));
  }
  std::uniform_real_distribution<float> d(0.0f, T);
  for (int i = 0; i < 5000; ++i) v.push_back(d(rng));
  v.push_back(T);
  v.push_back(0.0f);
  ir::Tensor t(ir::DType::kFloat32, {1, static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

runtime::MinMaxStats host_minmax(const ir::Tensor& y) {
  auto cpu = runtime::make_cpu_backend();
  return cpu->statistics(y, 1)->minmax();
}

TEST(VulkanStatistics, ExactOnBinEdges) {
  std::mt19937 rng(21);
  const float T = 3.7f;
  ir::Tensor x = edge_values(T, rng);
  for (float& v : x.span<float>()) v = -v;  // the observed Neg(x) is the edge values
  ir::Tensor y(ir::DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = -x.data<float>()[i];

  const ir::Model model = unary_model("Neg");
  auto gpu = make_vulkan_executor(model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  // T itself, T a little above the data's max, and a T that is not a float (float32 path).
  const double Tf = static_cast<double>(T);
  StatsProbe probe("y0", {Tf, static_cast<double>(std::nextafter(T, 10.0f)), 2.5});
  runtime::Observer* obs[] = {&probe};
  auto out = (*gpu)->run({{"x", x.view()}}, obs);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  EXPECT_FALSE(probe.host) << "a device tensor was shown with host data";

  const runtime::MinMaxStats want = host_minmax(y);
  EXPECT_EQ(probe.mm.min, want.min);
  EXPECT_EQ(probe.mm.max, want.max);
  EXPECT_EQ(probe.mm.abs_max, want.abs_max);
  EXPECT_EQ(probe.mm.nonfinite, 0);
  EXPECT_EQ(probe.mm.first_nonfinite, -1);
  ASSERT_EQ(probe.hists.size(), 3u);
  EXPECT_EQ(probe.hists[0], reference_histogram(y, Tf));
  EXPECT_EQ(probe.hists[1], reference_histogram(y, static_cast<double>(std::nextafter(T, 10.0f))));

  // A float T below the data's max: every value above it goes to the last bin.
  const std::vector<uint64_t> ref = reference_histogram(y, 2.5);
  EXPECT_EQ(probe.hists[2], ref);
}

TEST(VulkanStatistics, Float32PathStaysWithinOneRoundingOfEdges) {
  std::mt19937 rng(22);
  const double T = 2.9;  // not a float: the shader takes the float32 path
  ASSERT_NE(static_cast<double>(static_cast<float>(T)), T);
  ir::Tensor x = edge_values(static_cast<float>(T), rng);
  const ir::Model model = unary_model("Abs");
  auto gpu = make_vulkan_executor(model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  StatsProbe probe("y0", {T});
  runtime::Observer* obs[] = {&probe};
  ASSERT_TRUE((*gpu)->run({{"x", x.view()}}, obs).has_value());
  const std::vector<uint64_t> ref = reference_histogram(x, T);
  // Values whose exact position v / T * 2048 lies within 4 float ulps of an integer may move.
  int64_t near_edge = 0;
  for (float v : x.span<float>()) {
    const double q = static_cast<double>(v) / T * 2048.0;
    if (std::fabs(q - std::round(q)) <= 4.0 * std::ldexp(std::max(q, 1.0), -23)) ++near_edge;
  }
  int64_t moved = 0, total = 0;
  for (size_t b = 0; b < ref.size(); ++b) {
    moved += std::llabs(static_cast<int64_t>(probe.hists[0][b]) - static_cast<int64_t>(ref[b]));
    total += static_cast<int64_t>(probe.hists[0][b]);
  }
  EXPECT_EQ(total, x.size());
  EXPECT_LE(moved, 2 * near_edge);
}

TEST(VulkanStatistics, NonFiniteValuesAreCountedAndSkipped) {
  std::mt19937 rng(23);
  ir::Tensor x = random_tensor(rng, {4, 1000}, -3, 3);
  x.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[17] = std::numeric_limits<float>::infinity();
  x.data<float>()[2500] = -std::numeric_limits<float>::infinity();
  const ir::Model model = unary_model("Neg");
  auto gpu = make_vulkan_executor(model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  StatsProbe probe("y0", {3.0});
  runtime::Observer* obs[] = {&probe};
  ASSERT_TRUE((*gpu)->run({{"x", x.view()}}, obs).has_value());
  ir::Tensor y(ir::DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = -x.data<float>()[i];
  const runtime::MinMaxStats want = host_minmax(y);
  EXPECT_EQ(probe.mm.nonfinite, 3);
  EXPECT_EQ(probe.mm.first_nonfinite, 5);
  EXPECT_EQ(probe.mm.min, want.min);
  EXPECT_EQ(probe.mm.max, want.max);
  EXPECT_EQ(probe.hists[0], reference_histogram(y, 3.0));
}

TEST(VulkanStatistics, AllZerosAndReluZeros) {
  std::mt19937 rng(24);
  ir::Tensor x = random_tensor(rng, {3, 4096}, -1, 1);
  const ir::Model model = unary_model("Relu");
  auto gpu = make_vulkan_executor(model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  StatsProbe probe("y0", {0.0, 1.0});
  runtime::Observer* obs[] = {&probe};
  ASSERT_TRUE((*gpu)->run({{"x", x.view()}}, obs).has_value());
  ir::Tensor y(ir::DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = std::max(x.data<float>()[i], 0.0f);
  EXPECT_EQ(probe.hists[0], reference_histogram(y, 0.0));  // T = 0: everything in bin 0
  EXPECT_EQ(probe.hists[1], reference_histogram(y, 1.0));
  const runtime::MinMaxStats want = host_minmax(y);
  EXPECT_EQ(probe.mm.min, want.min);
  EXPECT_EQ(probe.mm.max, want.max);
}

// From the second batch on, the executor computes the ranges asked for last time in one
// submission per block (HistogramRunner::prefetch) instead of one per request. The counts
// must equal the host's batch after batch, when a range changes (served on demand) and when
// the batch shape changes (a new program: prefetched by value name).
TEST(VulkanStatistics, PrefetchedHistogramsEqualOnDemand) {
  std::mt19937 rng(25);
  const ir::Model model = unary_model("Neg");
  auto gpu = make_vulkan_executor(model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  StatsProbe steady("y0", {1.5, 3.0});
  StatsProbe changed("y0", {1.5, 2.0});
  const std::vector<std::pair<int64_t, StatsProbe*>> batches = {
      {4, &steady}, {4, &steady}, {4, &changed}, {3, &steady}, {4, &steady}};
  for (size_t b = 0; b < batches.size(); ++b) {
    ir::Tensor x = random_tensor(rng, {batches[b].first, 1000}, -3, 3);
    runtime::Observer* obs[] = {batches[b].second};
    ASSERT_TRUE((*gpu)->run({{"x", x.view()}}, obs).has_value()) << "batch " << b;
    ir::Tensor y(ir::DType::kFloat32, x.shape());
    for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = -x.data<float>()[i];
    const StatsProbe& p = *batches[b].second;
    ASSERT_EQ(p.hists.size(), 2u);
    EXPECT_EQ(p.hists[0], reference_histogram(y, 1.5)) << "batch " << b;
    EXPECT_EQ(p.hists[1], reference_histogram(y, &p == &changed ? 2.0 : 3.0)) << "batch " << b;
  }
}

}  // namespace
}  // namespace ptq::vulkan::testing
