// ONNX TensorProto .pb sources: a folder of .pb files, one .pb file, backend-style
// test_data_set_*/input_*.pb folders (by name and by position), typed fields and errors.
#include <gtest/gtest.h>

#include <cstring>

#include <onnx/onnx_pb.h>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

// A float32 TensorProto with raw_data.
std::string float_pb(const std::string& name, const ir::Shape& dims, const std::vector<float>& v) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) p.add_dims(d);
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  return p.SerializeAsString();
}

std::string as_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

TEST(Pb, FolderOfFilesOneSampleEach) {
  TempDir dir;
  std::vector<std::vector<float>> samples;
  for (int i = 0; i < 4; ++i) {
    samples.push_back(random_floats(12, 10 + i));
    write_bytes(dir / fmt::format("s{}.pb", i), float_pb("", {1, 3, 4}, samples.back()));
  }
  write_bytes(dir / "notes.txt", "ignored");
  auto ds = Dataset::open(spec_of({dir.path().string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->size(), 4);
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{1, 3, 4}));
  // Bound to [N, 3, 4], each file's leading 1 is the batch axis.
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {3, 4})})).is_ok());
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{3, 4}));
  auto all = ds->read(0, 4);
  ASSERT_TRUE(all.has_value()) << all.status().message();
  EXPECT_EQ((*all)[0].second.shape(), (ir::Shape{4, 3, 4}));
  std::string want;
  for (const auto& s : samples) want += as_bytes(s);
  EXPECT_EQ(bytes_of((*all)[0].second), want);
  // Bound to [N, 1, 3, 4], each file is one sample as it is.
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {1, 3, 4})})).is_ok());
  EXPECT_EQ(ds->inputs()[0].sample_shape, (ir::Shape{1, 3, 4}));
  EXPECT_EQ(ds->size(), 4);
}

TEST(Pb, FilesHoldingSeveralSamplesEach) {
  TempDir dir;
  const std::vector<float> a = random_floats(6, 1), b = random_floats(6, 2);
  write_bytes(dir / "a.pb", float_pb("", {3, 2}, a));
  write_bytes(dir / "b.pb", float_pb("", {3, 2}, b));
  auto ds = Dataset::open(spec_of({dir.path().string()}));
  ASSERT_TRUE(ds.has_value());
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {2})})).is_ok());
  EXPECT_EQ(ds->size(), 6);
  auto s4 = ds->read(4, 1);
  ASSERT_TRUE(s4.has_value());
  EXPECT_EQ(bytes_of((*s4)[0].second), as_bytes({b[2], b[3]}));
}

TEST(Pb, TypedFields) {
  TempDir dir;
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(1);
  f.add_dims(3);
  for (float v : {1.5f, -2.25f, 3.0e-3f}) f.add_float_data(v);
  write_bytes(dir / "f" / "a.pb", f.SerializeAsString());
  onnx::TensorProto i8;
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(1);
  i8.add_dims(3);
  for (int v : {-128, 5, 127}) i8.add_int32_data(v);
  write_bytes(dir / "i8" / "a.pb", i8.SerializeAsString());
  onnx::TensorProto h;
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_dims(1);
  h.add_dims(2);
  h.add_int32_data(ir::float_to_half(0.5f));
  h.add_int32_data(ir::float_to_half(-3.0f));
  write_bytes(dir / "h" / "a.pb", h.SerializeAsString());
  onnx::TensorProto l;
  l.set_data_type(onnx::TensorProto::INT64);
  l.add_dims(1);
  l.add_dims(2);
  l.add_int64_data(int64_t{1} << 50);
  l.add_int64_data(-7);
  write_bytes(dir / "l" / "a.pb", l.SerializeAsString());

  auto read = [&](const char* sub, const ir::ValueInfo& in) {
    auto ds = Dataset::open(spec_of({(dir / sub).string()}));
    EXPECT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_TRUE(ds->bind(graph_of({in})).is_ok());
    auto b = ds->batch(0);
    EXPECT_TRUE(b.has_value()) << b.status().message();
    return std::move((*b)[0].second);
  };
  const ir::Tensor tf = read("f", batched("x", DType::kFloat32, {3}));
  EXPECT_EQ(tf.data<float>()[0], 1.5f);
  EXPECT_EQ(tf.data<float>()[1], -2.25f);
  EXPECT_EQ(tf.data<float>()[2], 3.0e-3f);
  const ir::Tensor ti = read("i8", batched("x", DType::kInt8, {3}));
  EXPECT_EQ(ti.data<int8_t>()[0], -128);
  EXPECT_EQ(ti.data<int8_t>()[2], 127);
  // float16 data feeding a float32 input is converted.
  const ir::Tensor th = read("h", batched("x", DType::kFloat32, {2}));
  EXPECT_EQ(th.data<float>()[0], 0.5f);
  EXPECT_EQ(th.data<float>()[1], -3.0f);
  const ir::Tensor tl = read("l", batched("x", DType::kInt64, {2}));
  EXPECT_EQ(tl.data<int64_t>()[0], int64_t{1} << 50);
  EXPECT_EQ(tl.data<int64_t>()[1], -7);
}

// Three data sets of a two-input model, as the ONNX backend tests lay them out.
void write_backend(const fs::path& root, bool named, std::vector<std::string>* want_a,
                   std::vector<std::string>* want_b) {
  for (int s = 0; s < 3; ++s) {
    const fs::path set = root / fmt::format("test_data_set_{}", s);
    const auto a = random_floats(4, 100 + s), b = random_floats(2, 200 + s);
    write_bytes(set / "input_0.pb", float_pb(named ? "a" : "", {1, 4}, a));
    write_bytes(set / "input_1.pb", float_pb(named ? "b" : "", {1, 2}, b));
    write_bytes(set / "output_0.pb", float_pb("y", {1, 1}, {1.0f}));
    want_a->push_back(as_bytes(a));
    want_b->push_back(as_bytes(b));
  }
  write_bytes(root / "model.onnx", "not read");
}

TEST(Pb, BackendFoldersByNameAndByPosition) {
  for (bool named : {true, false}) {
    SCOPED_TRACE(named ? "named" : "positional");
    TempDir dir;
    std::vector<std::string> a, b;
    write_backend(dir.path(), named, &a, &b);
    auto ds = Dataset::open(spec_of({dir.path().string()}));
    ASSERT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_EQ(ds->size(), 3);
    // Named tensors bind by name even when the model lists them in another order; unnamed
    // ones by position (input_0 -> first model input).
    const ir::Graph g =
        named ? graph_of({batched("b", DType::kFloat32, {2}), batched("a", DType::kFloat32, {4})})
              : graph_of({batched("a", DType::kFloat32, {4}), batched("b", DType::kFloat32, {2})});
    ASSERT_TRUE(ds->bind(g).is_ok());
    // Each data set is one record, run as stored: a batch apiece.
    ASSERT_EQ(ds->num_batches(), 3);
    for (int64_t k = 0; k < 3; ++k) {
      auto batch = ds->batch(k);
      ASSERT_TRUE(batch.has_value()) << batch.status().message();
      for (const auto& [name, t] : *batch) {
        const auto& want = name == "a" ? a : b;
        EXPECT_EQ(t.shape(), (ir::Shape{1, name == "a" ? 4 : 2})) << name;
        EXPECT_EQ(bytes_of(t), want[static_cast<size_t>(k)]) << name;
      }
    }
  }
}

TEST(Pb, SingleDataSetFolderAndSingleFile) {
  TempDir dir;
  std::vector<std::string> a, b;
  write_backend(dir.path(), true, &a, &b);
  auto ds = Dataset::open(spec_of({(dir / "test_data_set_1").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_EQ(ds->size(), 1);
  ASSERT_TRUE(
      ds->bind(graph_of({batched("a", DType::kFloat32, {4}), batched("b", DType::kFloat32, {2})}))
          .is_ok());
  auto s = ds->batch(0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(bytes_of((*s)[0].second), a[1]);
  EXPECT_EQ(bytes_of((*s)[1].second), b[1]);

  auto one = Dataset::open(spec_of({(dir / "test_data_set_2" / "input_0.pb").string()}));
  ASSERT_TRUE(one.has_value()) << one.status().message();
  ASSERT_TRUE(one->bind(graph_of({batched("a", DType::kFloat32, {4})})).is_ok());
  auto t = one->batch(0);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(bytes_of((*t)[0].second), a[2]);
}

TEST(Pb, Errors) {
  TempDir dir;
  write_bytes(dir / "bad" / "x.pb", std::string("\xff\xff\xff\xff garbage", 12));
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "bad").string()})), "not a valid ONNX TensorProto");
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "bad").string()})), "x.pb");

  onnx::TensorProto ext;
  ext.set_data_type(onnx::TensorProto::FLOAT);
  ext.add_dims(2);
  ext.set_data_location(onnx::TensorProto::EXTERNAL);
  write_bytes(dir / "ext" / "x.pb", ext.SerializeAsString());
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "ext").string()})), "external data");

  onnx::TensorProto count;
  count.set_data_type(onnx::TensorProto::FLOAT);
  count.add_dims(3);
  count.add_float_data(1.0f);
  write_bytes(dir / "count" / "x.pb", count.SerializeAsString());
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "count").string()})), "holds 1 values");

  onnx::TensorProto str;
  str.set_data_type(onnx::TensorProto::STRING);
  str.add_dims(1);
  str.add_string_data("a");
  write_bytes(dir / "str" / "x.pb", str.SerializeAsString());
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "str").string()})),
                 "unsupported tensor data type 8");

  // A later file of another shape fails when read, naming it.
  write_bytes(dir / "mixed" / "a.pb", float_pb("", {1, 2}, {1.0f, 2.0f}));
  write_bytes(dir / "mixed" / "b.pb", float_pb("", {1, 3}, {1.0f, 2.0f, 3.0f}));
  auto ds = Dataset::open(spec_of({(dir / "mixed").string()}));
  ASSERT_TRUE(ds.has_value());
  EXPECT_INVALID(ds->read(0, 2), "b.pb");

  // A data set without input_1.pb.
  std::vector<std::string> a, b;
  write_backend(dir / "backend", false, &a, &b);
  fs::remove(dir / "backend" / "test_data_set_2" / "input_1.pb");
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "backend").string()})), "lacks input_1.pb");
}

}  // namespace
}  // namespace ptq::data::test
