// Raw float32 .bin sources with --shape.
#include <gtest/gtest.h>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

TEST(Raw, RecordsOfTheGivenShape) {
  TempDir dir;
  const std::vector<float> v = random_floats(5 * 12, 21);
  const std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  write_bytes(dir / "x.bin", bytes);
  DatasetSpec spec = spec_of({(dir / "x.bin").string()});
  spec.raw_shapes[""] = {1, 3, 4};
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{3, 4}));
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {3, 4})})).is_ok());
  auto s2 = ds->read(2, 2);
  ASSERT_TRUE(s2.has_value());
  EXPECT_EQ(bytes_of((*s2)[0].second), bytes.substr(2 * 48, 2 * 48));
  // For a rank-4 model input the whole record (its leading 1 included) is one sample.
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {1, 3, 4})})).is_ok());
  EXPECT_EQ(ds->size(), 5);
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{1, 3, 4}));
}

TEST(Raw, RecordsOfSeveralSamplesAndPerInputShapes) {
  TempDir dir;
  const std::vector<float> v = random_floats(8 * 6, 22);
  write_bytes(dir / "a.bin", std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  write_bytes(dir / "b.bin", std::string(reinterpret_cast<const char*>(v.data()), 8 * 4));
  DatasetSpec spec = spec_of({"a=" + (dir / "a.bin").string(), "b=" + (dir / "b.bin").string()});
  spec.raw_shapes["a"] = {2, 6};  // two samples a record: 4 records, 8 samples
  spec.raw_shapes["b"] = {1};     // one float a sample: 8 samples
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->size(), 8);
  // [N, 3] does not match samples of [6]: error names the input and both shapes.
  EXPECT_INVALID(
      ds->bind(graph_of({batched("a", DType::kFloat32, {3}), batched("b", DType::kFloat32, {})})),
      "input 'a' is [batch, 3] but");
  EXPECT_INVALID(
      ds->bind(graph_of({batched("a", DType::kFloat32, {3}), batched("b", DType::kFloat32, {})})),
      "gives samples of [6]");
  ASSERT_TRUE(
      ds->bind(graph_of({batched("a", DType::kFloat32, {6}), batched("b", DType::kFloat32, {})}))
          .is_ok());
  auto last = ds->read(7, 1);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ((*last)[0].second.data<float>()[5], v[47]);
  EXPECT_EQ((*last)[1].second.data<float>()[0], v[7]);
}

TEST(Raw, Errors) {
  TempDir dir;
  write_bytes(dir / "x.bin", std::string(100, '\1'));
  DatasetSpec spec = spec_of({(dir / "x.bin").string()});
  Status no_shape = Dataset::open(spec).status();
  EXPECT_EQ(no_shape.code(), StatusCode::kUsage);
  EXPECT_NE(no_shape.message().find("--shape"), std::string::npos);
  spec.raw_shapes[""] = {1, 3, 3};
  EXPECT_INVALID(Dataset::open(spec), "has 100 bytes, not a multiple of one float32 sample of "
                                      "shape [1, 3, 3] (36 bytes)");
  write_bytes(dir / "empty.bin", "");
  spec = spec_of({(dir / "empty.bin").string()});
  spec.raw_shapes[""] = {1};
  EXPECT_INVALID(Dataset::open(spec), "empty source");
}

}  // namespace
}  // namespace ptq::data::test
