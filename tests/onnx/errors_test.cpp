// Every way a model file can be wrong gives kInvalidInput (exit 3) with one line naming the
// file and the element at fault; nothing crashes.
#include <gtest/gtest.h>

#include "proto_builders.h"
#include "test_util.h"

using namespace ptq;
using namespace ptq::testing;
namespace po = ptq::onnx;
using TP = ::onnx::TensorProto;

namespace {

// Loads `proto` from a file in `dir` and returns the error (the test fails if it loads).
Status load_error(const TempDir& dir, const ::onnx::ModelProto& proto) {
  write_file(dir / "m.onnx", proto.SerializeAsString());
  auto m = po::load_model(dir / "m.onnx");
  EXPECT_FALSE(m.has_value());
  return m.has_value() ? Status{} : m.status();
}

void expect_error(const Status& s, std::initializer_list<std::string> parts) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  for (const std::string& p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
}

}  // namespace

TEST(Errors, MissingFile) {
  TempDir dir;
  auto m = po::load_model(dir / "nope.onnx");
  ASSERT_FALSE(m);
  expect_error(m.status(), {"nope.onnx", "no such file"});
  const std::string& msg = m.status().message();
  EXPECT_EQ(msg.find("nope.onnx"), msg.rfind("nope.onnx")) << "the file is named once: " << msg;
}

TEST(Errors, NotAProtobuf) {
  TempDir dir;
  write_file(dir / "m.onnx", std::string("\xff\xff\xff\xff garbage \x00\x01", 16));
  auto m = po::load_model(dir / "m.onnx");
  ASSERT_FALSE(m);
  expect_error(m.status(), {"m.onnx", "not an ONNX model"});
  write_file(dir / "empty.onnx", "");
  auto e = po::load_model(dir / "empty.onnx");
  ASSERT_FALSE(e);
  expect_error(e.status(), {"empty.onnx", "not an ONNX model"});
}

TEST(Errors, TruncatedAtEveryLength) {
  ::onnx::ModelProto m = relu_model();
  add_raw_initializer(m.mutable_graph(), "w", TP::FLOAT, {16}, std::string(64, '\x01'));
  const std::string bytes = m.SerializeAsString();
  ASSERT_TRUE(po::parse_model(bytes, "."));
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = po::parse_model(std::string_view(bytes).substr(0, n), ".");
    // A cut at a field boundary may still parse, as a model missing its later fields; every
    // outcome is a value or a one-line invalid-input error.
    if (!r) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << n;
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    }
  }
  TempDir dir;
  write_file(dir / "m.onnx", bytes.substr(0, bytes.size() / 2));
  auto half = po::load_model(dir / "m.onnx");
  ASSERT_FALSE(half);
  expect_error(half.status(), {"m.onnx"});
}

//   x ──► A ──► a ──► B ──► b
//         ▲                 │
//         └──── (b) ────────┘   A also reads b: a cycle
TEST(Errors, Cycle) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  add_node(g, "Add", {"x", "b"}, {"a"}, "A");
  add_node(g, "Relu", {"a"}, {"b"}, "B");
  add_node(g, "Relu", {"b"}, {"y"}, "C");
  expect_error(load_error(dir, m), {"m.onnx", "cycle"});
}

TEST(Errors, InputNobodyProduces) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  add_node(m.mutable_graph(), "Add", {"y", "ghost"}, {"z"}, "adder");
  expect_error(load_error(dir, m), {"m.onnx", "ghost", "adder"});
}

TEST(Errors, TwoProducers) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  add_node(m.mutable_graph(), "Neg", {"x"}, {"y"}, "second");
  expect_error(load_error(dir, m), {"m.onnx", "'y'", "two producers", "second"});
}

TEST(Errors, GraphOutputNobodyProduces) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  add_value(m.mutable_graph()->mutable_output(), "phantom", TP::FLOAT, {});
  expect_error(load_error(dir, m), {"m.onnx", "phantom"});
}

TEST(Errors, InitializerSizeMismatch) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  add_raw_initializer(m.mutable_graph(), "w", TP::FLOAT, {2, 3}, std::string(12, '\0'));
  expect_error(load_error(dir, m), {"m.onnx", "initializer 'w'", "12 bytes", "[2, 3]", "24"});

  ::onnx::ModelProto typed = relu_model();
  auto* t = typed.mutable_graph()->add_initializer();
  t->set_name("v");
  t->set_data_type(TP::INT8);
  t->add_dims(4);
  t->add_int32_data(1);
  expect_error(load_error(dir, typed),
               {"initializer 'v'", "1 values", "int32_data", "[4]", "need 4"});

  ::onnx::ModelProto none = relu_model();
  auto* n = none.mutable_graph()->add_initializer();
  n->set_name("nodata");
  n->set_data_type(TP::FLOAT);
  n->add_dims(3);
  expect_error(load_error(dir, none), {"initializer 'nodata'", "0 values", "need 3"});

  ::onnx::ModelProto neg = relu_model();
  add_raw_initializer(neg.mutable_graph(), "negdim", TP::FLOAT, {-1}, "");
  expect_error(load_error(dir, neg), {"initializer 'negdim'", "negative"});

  ::onnx::ModelProto huge = relu_model();
  add_raw_initializer(huge.mutable_graph(), "huge", TP::FLOAT, {1ll << 40, 1ll << 40}, "");
  expect_error(load_error(dir, huge), {"initializer 'huge'", "too many"});
}

TEST(Errors, TensorAttributeSizeMismatchNamesNode) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  auto* c = add_node(m.mutable_graph(), "Constant", {}, {"k"}, "const1");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::FLOAT);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->set_raw_data("abc");
  expect_error(load_error(dir, m), {"attribute 'value'", "const1", "3 bytes", "need 8"});
}

TEST(Errors, ExternalDataMissingOrShort) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(TP::FLOAT);
  t->add_dims(4);
  t->set_data_location(TP::EXTERNAL);
  auto kv = [&](const char* k, const char* v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "w.bin");
  kv("offset", "8");
  kv("length", "16");
  expect_error(load_error(dir, m), {"w.bin", "initializer 'w'", "not found"});

  write_file(dir / "w.bin", std::string(20, 'a'));  // needs 8 + 16 = 24
  expect_error(load_error(dir, m),
               {"w.bin", "too short", "initializer 'w'", "offset 8", "length 16", "20"});

  t->mutable_external_data(2)->set_value("12");  // length does not match float[4]
  write_file(dir / "w.bin", std::string(64, 'a'));
  expect_error(load_error(dir, m), {"initializer 'w'", "12 bytes", "need 16"});

  t->mutable_external_data(2)->set_value("16");
  t->mutable_external_data(0)->set_value("../w.bin");
  expect_error(load_error(dir, m), {"initializer 'w'", "../w.bin"});
  t->mutable_external_data(0)->set_value("/etc/passwd");
  expect_error(load_error(dir, m), {"initializer 'w'", "/etc/passwd"});

  t->mutable_external_data(0)->set_value("w.bin");
  write_file(dir / "m.onnx", m.SerializeAsString());
  auto ok = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(ok) << ok.status().message();
  EXPECT_EQ(ok->graph.initializer("w")->size(), 4);
}

TEST(Errors, UnsupportedIrVersion) {
  TempDir dir;
  for (int64_t v : {0, 2, 11, 99}) {
    ::onnx::ModelProto m = relu_model();
    m.set_ir_version(v);
    expect_error(load_error(dir, m), {"m.onnx", "IR version " + std::to_string(v), "3..10"});
  }
  for (int64_t v : {3, 9, 10}) {
    ::onnx::ModelProto m = relu_model();
    m.set_ir_version(v);
    write_file(dir / "m.onnx", m.SerializeAsString());
    EXPECT_TRUE(po::load_model(dir / "m.onnx")) << v;
  }
}

TEST(Errors, UnknownDtypeCodes) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  add_raw_initializer(m.mutable_graph(), "w", 42, {1}, "abcd");
  expect_error(load_error(dir, m), {"initializer 'w'", "data type code 42"});

  ::onnx::ModelProto v = relu_model();
  v.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(99);
  expect_error(load_error(dir, v), {"graph input 'x'", "element type code 99"});
}

TEST(Errors, StructureProblems) {
  TempDir dir;
  ::onnx::ModelProto no_graph = relu_model();
  no_graph.clear_graph();
  expect_error(load_error(dir, no_graph), {"no graph"});
  ::onnx::ModelProto no_opset = relu_model();
  no_opset.clear_opset_import();
  expect_error(load_error(dir, no_opset), {"opset"});
  ::onnx::ModelProto dup = relu_model();
  add_raw_initializer(dup.mutable_graph(), "w", TP::FLOAT, {1}, "abcd");
  add_raw_initializer(dup.mutable_graph(), "w", TP::FLOAT, {1}, "abcd");
  expect_error(load_error(dir, dup), {"'w'", "twice"});
}
