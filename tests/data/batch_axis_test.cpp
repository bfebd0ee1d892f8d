// Batching per input: whole values (scalars, fixed vectors, ONNX test_data_set_* inputs) fed
// unbatched, --batch-axis for sequence-first inputs, values per record, and the errors of each;
// dtype mismatches refused unless --cast.
#include <gtest/gtest.h>

#include <cstring>

#include <onnx/onnx_pb.h>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

std::string f32_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * 4};
}

// DIR/NAME.npy holding float32 `v` of `shape`.
std::string write_npy(const TempDir& dir, const std::string& name, const ir::Shape& shape,
                      const std::vector<float>& v) {
  write_bytes(dir / (name + ".npy"), npy_bytes("<f4", shape, f32_bytes(v)));
  return (dir / (name + ".npy")).string();
}

Dataset bound(DatasetSpec spec, const ir::Graph& g) {
  auto ds = Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  const Status s = ds->bind(g);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return std::move(*ds);
}

TEST(BatchAxis, ScalarAndFixedVectorInputsFeedEveryBatchWhole) {
  TempDir dir;
  const auto x = random_floats(30, 1);
  DatasetSpec spec = spec_of({"x=" + write_npy(dir, "x", {10, 3}, x),
                              "min=" + write_npy(dir, "min", {}, {0.25f}),
                              "scales=" + write_npy(dir, "scales", {4}, {1, 1, 2, 2})});
  spec.batch = 4;
  const ir::Graph g = graph_of({batched("x", DType::kFloat32, {3}),
                                input("min", DType::kFloat32, {}),
                                input("scales", DType::kFloat32, {ir::Dim::of(4)})});
  Dataset ds = bound(spec, g);
  EXPECT_EQ(ds.size(), 10);
  EXPECT_EQ(ds.num_batches(), 3);
  EXPECT_EQ(ds.inputs()[0].batch_axis, 0);
  EXPECT_EQ(ds.inputs()[1].batch_axis, kNoBatchAxis);
  EXPECT_EQ(ds.inputs()[2].batch_axis, kNoBatchAxis);
  for (int64_t b = 0; b < 3; ++b) {
    auto batch = ds.batch(b);
    ASSERT_TRUE(batch.has_value()) << batch.status().message();
    EXPECT_EQ((*batch)[0].second.shape(), (ir::Shape{ds.batch_samples(b), 3}));
    EXPECT_EQ((*batch)[1].second.shape(), ir::Shape{});
    EXPECT_EQ((*batch)[1].second.data<float>()[0], 0.25f);
    EXPECT_EQ(bytes_of((*batch)[2].second), f32_bytes({1, 1, 2, 2}));
  }
  EXPECT_EQ(ds.batch_samples(2), 2);
}

TEST(BatchAxis, SequenceFirstInputStacksSamplesOnAxis1) {
  TempDir dir;
  // 6 samples of [seq 5, hidden 2] for an input [seq, batch, hidden].
  const auto x = random_floats(6 * 5 * 2, 2);
  DatasetSpec spec = spec_of({write_npy(dir, "x", {6, 5, 2}, x)});
  spec.batch = 4;
  spec.batch_axes["x"] = 1;
  const ir::Graph g = graph_of({input(
      "x", DType::kFloat32, {ir::Dim::symbol("seq"), ir::Dim::symbol("batch"), ir::Dim::of(2)})});
  Dataset ds = bound(spec, g);
  EXPECT_EQ(ds.inputs()[0].batch_axis, 1);
  EXPECT_EQ(ds.inputs()[0].sample_shape, (ir::Shape{5, 2}));
  for (int64_t b = 0; b < 2; ++b) {
    auto batch = ds.batch(b);
    ASSERT_TRUE(batch.has_value()) << batch.status().message();
    const ir::Tensor& t = (*batch)[0].second;
    const int64_t n = ds.batch_samples(b);
    ASSERT_EQ(t.shape(), (ir::Shape{5, n, 2}));
    for (int64_t s = 0; s < 5; ++s) {
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t h = 0; h < 2; ++h) {
          const float want = x[static_cast<size_t>(((b * 4 + k) * 5 + s) * 2 + h)];
          EXPECT_EQ(t.data<float>()[(s * n + k) * 2 + h], want) << s << " " << k << " " << h;
        }
      }
    }
  }
  EXPECT_EQ(batch_shape(ds.inputs()[0], 3), (ir::Shape{5, 3, 2}));
}

TEST(BatchAxis, ValuesPerRecordMakeBatchesOfOne) {
  TempDir dir;
  // Three records: x [3] samples and a scalar threshold each.
  DatasetSpec spec = spec_of({"x=" + write_npy(dir, "x", {3, 3}, random_floats(9, 3)),
                              "t=" + write_npy(dir, "t", {3}, {1, 2, 3})});
  const ir::Graph g =
      graph_of({batched("x", DType::kFloat32, {3}), input("t", DType::kFloat32, {})});
  Dataset ds = bound(spec, g);
  EXPECT_EQ(ds.batch_size(), 1);
  ASSERT_EQ(ds.num_batches(), 3);
  for (int64_t b = 0; b < 3; ++b) {
    auto batch = ds.batch(b);
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ((*batch)[1].second.data<float>()[0], static_cast<float>(b + 1));
  }
  EXPECT_FALSE(ds.read(0, 2).has_value());
  spec.batch = 2;
  auto two = Dataset::open(spec);
  ASSERT_TRUE(two.has_value());
  EXPECT_INVALID(two->bind(g), "input 't' has no batch axis and a value per record");
}

// One ONNX test_data_set_* folder: input_0.pb and input_1.pb as a MatMul case stores them.
void write_set(const fs::path& set, const ir::Shape& a, const ir::Shape& b) {
  for (int k = 0; k < 2; ++k) {
    const ir::Shape& dims = k == 0 ? a : b;
    onnx::TensorProto p;
    p.set_name(k == 0 ? "a" : "b");
    p.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) p.add_dims(d);
    p.set_raw_data(f32_bytes(random_floats(static_cast<size_t>(ir::num_elements(dims)), 7 + k)));
    write_bytes(set / fmt::format("input_{}.pb", k), p.SerializeAsString());
  }
}

TEST(BatchAxis, BackendDataSetIsOneRecordRunAsStored) {
  TempDir dir;
  write_set(dir / "test_data_set_0", {3, 4}, {4, 3});
  const ir::Graph g = graph_of({input("a", DType::kFloat32, {ir::Dim::of(3), ir::Dim::of(4)}),
                                input("b", DType::kFloat32, {ir::Dim::of(4), ir::Dim::of(3)})});
  Dataset ds = bound(spec_of({(dir / "test_data_set_0").string()}), g);
  EXPECT_EQ(ds.size(), 1);
  auto batch = ds.batch(0);
  ASSERT_TRUE(batch.has_value()) << batch.status().message();
  EXPECT_EQ((*batch)[0].second.shape(), (ir::Shape{3, 4}));
  EXPECT_EQ((*batch)[1].second.shape(), (ir::Shape{4, 3}));
  // From .npy files, arrays are stacked samples: 3 and 4 of them, batches of the sizes a and
  // b fix, which disagree.
  const std::string a = write_npy(dir, "a", {3, 4}, random_floats(12, 1));
  const std::string b = write_npy(dir, "b", {4, 3}, random_floats(12, 2));
  auto npy = Dataset::open(spec_of({"a=" + a, "b=" + b}));
  ASSERT_TRUE(npy.has_value());
  EXPECT_INVALID(npy->bind(g), "inputs 'a' and 'b' fix different batch sizes (3 and 4)");
  EXPECT_INVALID(npy->bind(g), "--batch-axis b=none");
  // Named unbatched, they are one record fed as stored.
  DatasetSpec whole = spec_of({"a=" + a, "b=" + b});
  whole.batch_axes = {{"a", kNoBatchAxis}, {"b", kNoBatchAxis}};
  Dataset fed = bound(whole, g);
  EXPECT_EQ(fed.size(), 1);
  // --batch asks for batches no input can stack.
  DatasetSpec eight = spec_of({(dir / "test_data_set_0").string()});
  eight.batch = 8;
  auto refused = Dataset::open(eight);
  ASSERT_TRUE(refused.has_value());
  EXPECT_INVALID(refused->bind(g), "no input has a batch axis");
}

TEST(BatchAxis, Errors) {
  TempDir dir;
  const std::string x = write_npy(dir, "x", {4, 3}, random_floats(12, 4));
  const ir::Graph g = graph_of({batched("x", DType::kFloat32, {3})});
  DatasetSpec beyond = spec_of({x});
  beyond.batch_axes["x"] = 2;
  auto ds = Dataset::open(beyond);
  ASSERT_TRUE(ds.has_value());
  EXPECT_INVALID(ds->bind(g), "--batch-axis x=2 is beyond input 'x', which is [batch, 3]");
  DatasetSpec unknown = spec_of({x});
  unknown.batch_axes["y"] = 0;
  auto u = Dataset::open(unknown);
  ASSERT_TRUE(u.has_value());
  const Status s = u->bind(g);
  EXPECT_EQ(s.code(), StatusCode::kUsage);
  EXPECT_NE(s.message().find("--batch-axis names 'y'"), std::string::npos) << s.message();
  // A scalar input given a stack of arrays.
  auto scalar = Dataset::open(spec_of({x}));
  ASSERT_TRUE(scalar.has_value());
  EXPECT_INVALID(scalar->bind(graph_of({input("x", DType::kFloat32, {})})), "is a scalar");
}

TEST(BatchAxis, DtypeMismatchIsRefusedUnlessCast) {
  const std::string u1 = (fixtures() / "u1.npy").string();
  const ir::Graph g = graph_of({batched("x", DType::kFloat32, {2, 3})});
  auto refused = Dataset::open(spec_of({u1}));
  ASSERT_TRUE(refused.has_value());
  EXPECT_INVALID(refused->bind(g), "input 'x' is float32 but");
  EXPECT_INVALID(refused->bind(g), "holds uint8 data");
  EXPECT_INVALID(refused->bind(g), "--scale 255");
  EXPECT_INVALID(refused->bind(g), "--cast");
  DatasetSpec cast = spec_of({u1});
  cast.cast = true;
  Dataset ds = bound(cast, g);
  EXPECT_EQ(ds.inputs()[0].stored_dtype, DType::kUInt8);
  // float16 widens to float32 exactly: no --cast asked.
  Dataset f2 = bound(spec_of({(fixtures() / "f2.npy").string()}), g);
  EXPECT_EQ(f2.inputs()[0].stored_dtype, DType::kFloat16);
  // Float data never feeds an integer input, --cast or not.
  DatasetSpec f4 = spec_of({(fixtures() / "f4.npy").string()});
  f4.cast = true;
  auto to_int = Dataset::open(f4);
  ASSERT_TRUE(to_int.has_value());
  const Status s = to_int->bind(graph_of({batched("x", DType::kInt64, {2, 3})}));
  EXPECT_INVALID(s, "input 'x' is int64 but");
  EXPECT_EQ(s.message().find("--cast"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ptq::data::test
