// Records of several shapes: grouped into batches of one shape by a stable sort of the
// delivery order (data.h, Dataset::bind "shapes"), from .npy folders, npz files of
// arr_0 .. arr_N-1 and images at their own size or resized on the shorter side.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

// [n, c, h?, w] with h symbolic: what a detector with dynamic height takes.
ir::Graph dynamic_h(int64_t c, int64_t w) {
  return graph_of({input("x", DType::kFloat32,
                         {ir::Dim::symbol("n"), ir::Dim::of(c), ir::Dim::symbol("h"),
                          ir::Dim::of(w)})});
}

// Writes a float32 .npy of `shape` holding seed-derived values; returns its data bytes.
std::string write_npy(const fs::path& path, const ir::Shape& shape, uint32_t seed) {
  const std::vector<float> v = random_floats(static_cast<size_t>(ir::num_elements(shape)), seed);
  const std::string data(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  write_bytes(path, npy_bytes("<f4", shape, data));
  return data;
}

Dataset open_bound(const DatasetSpec& spec, const ir::Graph& graph) {
  auto ds = Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  Status s = ds->bind(graph);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return std::move(*ds);
}

TEST(Shapes, NpyFolderIsBatchedByShapeInOrderOfFirstAppearance) {
  TempDir dir;
  const ir::Shape a{3, 4, 5}, b{3, 6, 5};
  std::vector<std::string> bytes;
  const std::vector<ir::Shape> shapes{a, b, a, b, a};
  for (size_t i = 0; i < shapes.size(); ++i) {
    bytes.push_back(write_npy(dir / fmt::format("{}.npy", i), shapes[i], 10 + i));
  }
  DatasetSpec spec = spec_of({dir.path().string()});
  spec.batch = 2;
  Dataset ds = open_bound(spec, dynamic_h(3, 5));
  EXPECT_FALSE(ds.same_shapes());
  EXPECT_EQ(ds.inputs()[0].sample_shape, (ir::Shape{3, -1, 5}));
  EXPECT_EQ(ds.order(), (std::vector<int64_t>{0, 2, 4, 1, 3}));
  ASSERT_EQ(ds.num_batches(), 3);
  EXPECT_EQ(ds.batch_samples(0), 2);
  EXPECT_EQ(ds.batch_samples(1), 1);
  EXPECT_EQ(ds.batch_samples(2), 2);
  EXPECT_EQ(ds.batch_first(2), 3);
  const std::vector<std::vector<size_t>> want{{0, 2}, {4}, {1, 3}};
  for (int64_t k = 0; k < 3; ++k) {
    auto batch = ds.batch(k);
    ASSERT_TRUE(batch.has_value()) << batch.status().message();
    const ir::Tensor& t = (*batch)[0].second;
    const ir::Shape& one = shapes[want[static_cast<size_t>(k)][0]];
    EXPECT_EQ(t.shape(), (ir::Shape{ds.batch_samples(k), one[0], one[1], one[2]}));
    std::string expect;
    for (size_t i : want[static_cast<size_t>(k)]) expect += bytes[i];
    EXPECT_EQ(bytes_of(t), expect) << "batch " << k;
  }
  // Delivered samples of two shapes cannot be one batch: the error names both.
  EXPECT_INVALID(ds.read(2, 2), "[3, 4, 5] and [3, 6, 5]");
}

TEST(Shapes, ShuffledOrderIsGroupedStablyAndFixedBatchDropsEachShapesRemainder) {
  TempDir dir;
  for (int i = 0; i < 7; ++i) {
    write_npy(dir / fmt::format("{}.npy", i), {1, i % 2 == 0 ? 2 : 3, 4}, 20 + i);
  }
  DatasetSpec spec = spec_of({dir.path().string()});
  spec.shuffle = true;
  spec.seed = 5;
  Dataset ds = open_bound(spec, dynamic_h(1, 4));
  const std::vector<int64_t> shuffled = shuffled_order(7, 5);
  std::vector<int64_t> want;
  for (int64_t parity : {shuffled[0] % 2, 1 - shuffled[0] % 2}) {
    for (int64_t i : shuffled) {
      if (i % 2 == parity) want.push_back(i);
    }
  }
  EXPECT_EQ(ds.order(), want);
  // A fixed batch of 2: 4 even-sized samples and 3 odd ones leave one odd sample out.
  Dataset fixed = open_bound(spec_of({dir.path().string()}),
                             graph_of({input("x", DType::kFloat32,
                                             {ir::Dim::of(2), ir::Dim::of(1),
                                              ir::Dim::symbol("h"), ir::Dim::of(4)})}));
  EXPECT_EQ(fixed.dropped(), 1);
  EXPECT_EQ(fixed.size(), 6);
  EXPECT_EQ(fixed.num_batches(), 3);
  for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(fixed.batch_samples(k), 2);
}

TEST(Shapes, StackedFilesOfSeveralShapes) {
  TempDir dir;
  const std::string a = write_npy(dir / "a.npy", {2, 3, 4}, 1);
  const std::string b = write_npy(dir / "b.npy", {3, 3, 6}, 2);
  DatasetSpec spec = spec_of({dir.path().string()});
  spec.batch = 4;
  Dataset ds = open_bound(spec, graph_of({input("x", DType::kFloat32,
                                               {ir::Dim::symbol("n"), ir::Dim::of(3),
                                                ir::Dim::symbol("w")})}));
  EXPECT_EQ(ds.size(), 5);
  ASSERT_EQ(ds.num_batches(), 2);
  auto first = ds.batch(0), second = ds.batch(1);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ((*first)[0].second.shape(), (ir::Shape{2, 3, 4}));
  EXPECT_EQ(bytes_of((*first)[0].second), a);
  EXPECT_EQ((*second)[0].second.shape(), (ir::Shape{3, 3, 6}));
  EXPECT_EQ(bytes_of((*second)[0].second), b);
}

TEST(Shapes, RecordsThatCannotShareAnInputAreNamed) {
  TempDir dir;
  write_npy(dir / "a.npy", {3, 4, 5}, 1);
  write_npy(dir / "b.npy", {3, 4}, 2);
  EXPECT_INVALID(Dataset::open(spec_of({dir.path().string()})), "same dtype and rank");
  EXPECT_INVALID(Dataset::open(spec_of({dir.path().string()})), "[3, 4] but");
  fs::remove(dir / "b.npy");
  write_bytes(dir / "b.npy", npy_bytes("<i4", {3, 4, 5}, std::string(240, '\0')));
  EXPECT_INVALID(Dataset::open(spec_of({dir.path().string()})), "int32");
  // A model fixing the dim that varies: the shape that does not fit is named.
  fs::remove(dir / "b.npy");
  write_npy(dir / "b.npy", {3, 6, 5}, 2);
  auto ds = Dataset::open(spec_of({dir.path().string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_INVALID(ds->bind(graph_of({batched("x", DType::kFloat32, {3, 4, 5})})), "[3, 6, 5]");
}

TEST(Shapes, NpzOfPositionalArraysHoldsOneRecordPerMember) {
  TempDir dir;
  for (const char* save : {"savez", "savez_compressed"}) {
    const fs::path npz = dir / fmt::format("{}.npz", save);
    const std::string code = fmt::format(
        "-c \"import numpy as np; r=[np.arange(100*j, 100*j+3*2*k, dtype=np.float32)"
        ".reshape(3, 2*k) for j, k in enumerate((1, 2, 1, 3))]; np.{}('{}', *r)\"",
        save, npz.string());
    ASSERT_EQ(python(code), 0) << code;
    DatasetSpec spec = spec_of({npz.string()});
    spec.batch = 2;
    Dataset ds = open_bound(spec,
                            graph_of({input("x", DType::kFloat32,
                                            {ir::Dim::symbol("n"), ir::Dim::of(3),
                                             ir::Dim::symbol("w")})}));
    EXPECT_EQ(ds.size(), 4);
    EXPECT_EQ(ds.order(), (std::vector<int64_t>{0, 2, 1, 3}));
    ASSERT_EQ(ds.num_batches(), 3) << save;
    auto batch = ds.batch(0);
    ASSERT_TRUE(batch.has_value()) << batch.status().message();
    const ir::Tensor& t = (*batch)[0].second;
    ASSERT_EQ(t.shape(), (ir::Shape{2, 3, 2}));
    // Records 0 and 2: arange(0, 6) and arange(200, 206).
    EXPECT_EQ(t.data<float>()[0], 0.0f);
    EXPECT_EQ(t.data<float>()[5], 5.0f);
    EXPECT_EQ(t.data<float>()[6], 200.0f);
    EXPECT_EQ(t.data<float>()[11], 205.0f);
    auto last = ds.batch(2);
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ((*last)[0].second.shape(), (ir::Shape{1, 3, 6}));
    EXPECT_EQ((*last)[0].second.data<float>()[17], 317.0f);
  }
}

}  // namespace
}  // namespace ptq::data::test
