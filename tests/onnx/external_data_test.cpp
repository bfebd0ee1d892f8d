// Tensors stored outside the model file: reading files made by hand, writing them, and the
// automatic switch when a model would pass protobuf's size limit.
#include <gtest/gtest.h>

#include "proto_builders.h"
#include "test_util.h"

using namespace ptq;
using namespace ptq::testing;
namespace po = ptq::onnx;
using TP = ::onnx::TensorProto;

namespace {

//   x[N,4] ──► Add(w) ──► y     (w: float[4])
ir::Model add_model(int64_t n) {
  ir::Model m;
  m.graph.name = "add";
  m.ir_version = 8;
  m.set_opset("", 13);
  m.graph.inputs.push_back(
      {"x",
       {ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(n)}, {}},
       {}});
  m.graph.outputs.push_back(
      {"y",
       {ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(n)}, {}},
       {}});
  m.graph.set_initializer("w", random_bytes_tensor(ir::DType::kFloat32, {n}, 7));
  m.graph.set_initializer("small", random_bytes_tensor(ir::DType::kInt8, {4}, 8));
  ir::Node add;
  add.op_type = "Add";
  add.inputs = {"x", "w"};
  add.outputs = {"y"};
  m.graph.nodes.push_back(add);
  return m;
}

void add_external(TP* t, const std::string& location, int64_t offset, int64_t length) {
  t->set_data_location(TP::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (offset >= 0) kv("offset", std::to_string(offset));
  if (length >= 0) kv("length", std::to_string(length));
}

}  // namespace

// A file written by another tool: two tensors in one file (the second without a length, i.e.
// to the end of the file), one in a sub-folder; paths relative to the model's folder.
TEST(ExternalData, ReadsHandMadeFiles) {
  TempDir dir;
  fs::create_directories(dir / "weights");
  const float a[3] = {1.0f, -2.0f, 3.5f};
  const int64_t b[2] = {-9, 1ll << 40};
  std::string blob(5, 'z');  // leading junk: tensors start at an offset
  blob.append(reinterpret_cast<const char*>(a), sizeof(a));
  const int64_t b_offset = static_cast<int64_t>(blob.size());
  blob.append(reinterpret_cast<const char*>(b), sizeof(b));
  write_file(dir / "weights" / "all.bin", blob);
  write_file(dir / "c.bin", std::string("\x01\x02", 2));

  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  auto add = [&](const char* name, int dtype, int64_t n) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    t->add_dims(n);
    return t;
  };
  add_external(add("a", TP::FLOAT, 3), "weights/all.bin", 5, sizeof(a));
  add_external(add("b", TP::INT64, 2), "weights/all.bin", b_offset, -1);
  add_external(add("c", TP::UINT8, 2), "c.bin", -1, -1);
  write_file(dir / "m.onnx", m.SerializeAsString());

  auto model = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(model) << model.status().message();
  EXPECT_EQ(std::memcmp(model->graph.initializer("a")->raw(), a, sizeof(a)), 0);
  EXPECT_EQ(std::memcmp(model->graph.initializer("b")->raw(), b, sizeof(b)), 0);
  EXPECT_EQ(model->graph.initializer("c")->data<uint8_t>()[1], 2);

  // Saved inline by default: the copy no longer needs the external files.
  ASSERT_TRUE(po::save_model(*model, dir / "inline.onnx").is_ok());
  fs::remove_all(dir / "weights");
  fs::remove(dir / "c.bin");
  auto back = po::load_model(dir / "inline.onnx");
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(*model, *back);
}

TEST(ExternalData, WritesDataFileWhenAsked) {
  TempDir dir;
  const ir::Model m = add_model(1000);
  po::SaveOptions opts;
  opts.external_data = true;
  opts.external_min_bytes = 1024;
  ASSERT_TRUE(po::save_model(m, dir / "m.onnx", opts).is_ok());
  ASSERT_TRUE(fs::exists(dir / "m.onnx.data"));
  EXPECT_GE(fs::file_size(dir / "m.onnx.data"), 4000u);
  const auto proto = read_proto(dir / "m.onnx");
  EXPECT_LT(fs::file_size(dir / "m.onnx"), 1024u);
  for (const auto& t : proto.graph().initializer()) {
    // Only tensors of at least external_min_bytes leave the model file.
    EXPECT_EQ(t.data_location() == TP::EXTERNAL, t.name() == "w") << t.name();
  }
  // No temporary files left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 2);
  auto back = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(m, *back);
  EXPECT_TRUE(po::check_model(*back).is_ok()) << po::check_model(*back).message();
}

TEST(ExternalData, SwitchesAutomaticallyOverTheLimit) {
  TempDir dir;
  const ir::Model m = add_model(1000);  // w: 4000 bytes
  po::SaveOptions under;
  under.protobuf_limit_bytes = 100000;
  ASSERT_TRUE(po::save_model(m, dir / "under.onnx", under).is_ok());
  EXPECT_FALSE(fs::exists(dir / "under.onnx.data"));

  po::SaveOptions over;
  over.protobuf_limit_bytes = 3000;  // the inline model would be ~4.1 KB
  ASSERT_TRUE(po::save_model(m, dir / "over.onnx", over).is_ok());
  EXPECT_TRUE(fs::exists(dir / "over.onnx.data"));
  EXPECT_LT(fs::file_size(dir / "over.onnx"), 3000u);
  auto back = po::load_model(dir / "over.onnx");
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(m, *back);

  // Too big even with its large tensors outside: an error, and no file written.
  po::SaveOptions tiny;
  tiny.protobuf_limit_bytes = 50;
  Status s = po::save_model(m, dir / "tiny.onnx", tiny);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("tiny.onnx"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(dir / "tiny.onnx"));
}

TEST(ExternalData, SaveOverwritesAtomically) {
  TempDir dir;
  ir::Model m = add_model(8);
  ASSERT_TRUE(po::save_model(m, dir / "m.onnx").is_ok());
  m.graph.mutable_initializer("w")->data<float>()[0] = 42.0f;
  ASSERT_TRUE(po::save_model(m, dir / "m.onnx").is_ok());
  auto back = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->graph.initializer("w")->data<float>()[0], 42.0f);
  // A folder that does not exist: an error naming the file, nothing created.
  Status s = po::save_model(m, dir / "no" / "such" / "m.onnx");
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("m.onnx"), std::string::npos);
}
