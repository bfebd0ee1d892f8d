// A program's own samples (SampleSource): batched, shuffled, converted and bound like a file's,
// fed beside files, and refused when they cannot be samples or do not fit the model.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

// Samples held in a vector, as a program calibrating from memory holds them.
class VectorSource : public SampleSource {
 public:
  VectorSource(std::vector<float> values, ir::Shape sample, DType dtype = DType::kFloat32)
      : values_(std::move(values)), sample_(std::move(sample)), dtype_(dtype) {}
  std::string name() const override { return "vector source"; }
  DType dtype() const override { return dtype_; }
  ir::Shape sample_shape() const override { return sample_; }
  int64_t count() const override {
    return static_cast<int64_t>(values_.size()) / ir::num_elements(sample_);
  }
  Status read(int64_t i, void* dst) const override {
    const size_t n = static_cast<size_t>(ir::num_elements(sample_));
    std::memcpy(dst, values_.data() + static_cast<size_t>(i) * n, n * sizeof(float));
    return {};
  }

 private:
  std::vector<float> values_;
  ir::Shape sample_;
  DType dtype_;
};

DatasetSpec spec_of_source(const SampleSource& source, std::string input = "") {
  DatasetSpec spec;
  spec.sources.push_back({std::move(input), {}, &source});
  return spec;
}

std::vector<float> all_values(const Dataset& ds) {
  std::vector<float> seen;
  for (int64_t b = 0; b < ds.num_batches(); ++b) {
    auto batch = ds.batch(b);
    EXPECT_TRUE(batch.has_value()) << batch.status().message();
    if (!batch) break;
    const ir::Tensor& t = (*batch)[0].second;
    seen.insert(seen.end(), t.data<float>(), t.data<float>() + t.size());
  }
  return seen;
}

TEST(SampleSource, BatchesTheProgramsSamplesInOrder) {
  const std::vector<float> v = random_floats(10 * 6, 1);
  const VectorSource source(v, {2, 3});
  DatasetSpec spec = spec_of_source(source);
  spec.batch = 4;
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {2, 3})})).is_ok());
  EXPECT_EQ(ds->size(), 10);
  EXPECT_EQ(ds->num_batches(), 3);
  EXPECT_EQ(ds->inputs()[0].source, "vector source");
  auto last = ds->batch(2);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ((*last)[0].second.shape(), (ir::Shape{2, 2, 3}));
  EXPECT_EQ(all_values(*ds), v);
}

TEST(SampleSource, ShuffledAndConvertedLikeAFile) {
  const std::vector<float> v = random_floats(5, 2);
  const VectorSource source(v, {1});
  DatasetSpec spec = spec_of_source(source);
  spec.shuffle = true;
  spec.seed = 7;
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value());
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat64, {1})})).is_ok());
  auto batch = ds->read(0, 5);
  ASSERT_TRUE(batch.has_value()) << batch.status().message();
  const ir::Tensor& t = (*batch)[0].second;
  ASSERT_EQ(t.dtype(), DType::kFloat64);
  const std::vector<int64_t> order = shuffled_order(5, 7);
  for (size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(t.data<double>()[k], static_cast<double>(v[static_cast<size_t>(order[k])]));
  }
}

TEST(SampleSource, FeedsANamedInputBesideAFile) {
  TempDir dir;
  const std::vector<float> a = random_floats(4 * 3, 3);
  write_bytes(dir / "a.npy", npy_bytes("<f4", {4, 3}, {reinterpret_cast<const char*>(a.data()),
                                                        a.size() * 4}));
  const std::vector<float> b = random_floats(4 * 2, 4);
  const VectorSource source(b, {2});
  DatasetSpec spec = spec_of({"a=" + (dir / "a.npy").string()});
  spec.sources.push_back({"b", {}, &source});
  spec.batch = 4;
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  const ir::Graph g =
      graph_of({batched("b", DType::kFloat32, {2}), batched("a", DType::kFloat32, {3})});
  ASSERT_TRUE(ds->bind(g).is_ok());
  auto batch = ds->batch(0);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ((*batch)[0].first, "b");
  EXPECT_EQ(std::memcmp((*batch)[0].second.raw(), b.data(), b.size() * 4), 0);
  EXPECT_EQ((*batch)[1].first, "a");
  EXPECT_EQ(std::memcmp((*batch)[1].second.raw(), a.data(), a.size() * 4), 0);
}

TEST(SampleSource, Errors) {
  const VectorSource strings({1.0f}, {1}, DType::kString);
  EXPECT_INVALID(Dataset::open(spec_of_source(strings)), "'vector source' gives samples of dtype");
  const VectorSource negative({1.0f}, {-1});
  EXPECT_INVALID(Dataset::open(spec_of_source(negative)), "negative dim");
  const VectorSource empty({}, {3});
  EXPECT_INVALID(Dataset::open(spec_of_source(empty)), "'vector source' holds no samples");

  const VectorSource wrong_shape(random_floats(8, 5), {4});
  auto ds = Dataset::open(spec_of_source(wrong_shape));
  ASSERT_TRUE(ds.has_value());
  EXPECT_INVALID(ds->bind(graph_of({batched("x", DType::kFloat32, {3})})),
                 "vector source gives samples of [4]");
  auto unknown = Dataset::open(spec_of_source(wrong_shape, "y"));
  ASSERT_TRUE(unknown.has_value());
  EXPECT_INVALID(unknown->bind(graph_of({batched("x", DType::kFloat32, {4})})),
                 "'vector source' feeds input 'y'");
}

}  // namespace
}  // namespace ptq::data::test
