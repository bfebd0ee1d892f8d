// load -> save -> load on models built in code: every dtype in both storage forms, every field
// the ir carries, and the opaque parts it does not model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "proto_builders.h"
#include "test_util.h"

using namespace ptq;
using namespace ptq::testing;
namespace po = ptq::onnx;
using TP = ::onnx::TensorProto;

namespace {

const std::vector<ir::DType> kAllDtypes = {
    ir::DType::kFloat32, ir::DType::kFloat16, ir::DType::kBFloat16, ir::DType::kFloat64,
    ir::DType::kInt8,    ir::DType::kUInt8,   ir::DType::kInt16,    ir::DType::kUInt16,
    ir::DType::kInt32,   ir::DType::kUInt32,  ir::DType::kInt64,    ir::DType::kUInt64,
    ir::DType::kBool,    ir::DType::kString};

// x -> Identity -> y, plus one initializer per dtype (each a graph output through Identity so
// the graph stays valid).
ir::Model model_with_all_dtypes() {
  ir::Model m;
  m.ir_version = 8;
  m.set_opset("", 13);
  m.graph.name = "dtypes";
  uint32_t seed = 1;
  for (ir::DType t : kAllDtypes) {
    const std::string name = "w_" + std::string(ir::dtype_name(t));
    m.graph.set_initializer(name, random_bytes_tensor(t, {3, 5, 2}, seed++));
    ir::Node n;
    n.op_type = "Identity";
    n.name = "id_" + name;
    n.inputs = {name};
    n.outputs = {name + "_out"};
    m.graph.nodes.push_back(n);
    m.graph.outputs.push_back(
        {name + "_out",
         {t, std::vector<ir::Dim>{ir::Dim::of(3), ir::Dim::of(5), ir::Dim::of(2)}, {}},
         {}});
  }
  // A scalar and an empty tensor keep their shapes too.
  m.graph.set_initializer("scalar", ir::make_tensor<float>({}, {2.5f}));
  m.graph.set_initializer("empty", ir::Tensor(ir::DType::kFloat32, {0, 4}));
  return m;
}

}  // namespace

TEST(RoundTrip, EveryDtypeBitIdentical) {
  TempDir dir;
  const ir::Model m = model_with_all_dtypes();
  ASSERT_TRUE(po::save_model(m, dir / "m.onnx").is_ok());
  auto back = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(m, *back);
  // Written as raw_data (strings: string_data), whatever the dtype.
  const auto proto = read_proto(dir / "m.onnx");
  for (const auto& t : proto.graph().initializer()) {
    if (t.data_type() == TP::STRING) {
      EXPECT_EQ(t.string_data_size(), 30) << t.name();
    } else if (t.name() != "empty") {
      EXPECT_TRUE(t.has_raw_data() && t.float_data_size() == 0 && t.int32_data_size() == 0)
          << t.name();
    }
  }
  EXPECT_TRUE(po::check_model(*back).is_ok()) << po::check_model(*back).message();
}

// Values stored in the typed repeated fields are read as the same values a reader of raw_data
// would see, and written back as raw_data.
TEST(RoundTrip, TypedFieldsReadAndWrittenAsRaw) {
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  auto add = [&](const std::string& name, int dtype) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    t->add_dims(4);
    return t;
  };
  const float f32[] = {1.5f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 1e-40f};
  auto* t = add("f32", TP::FLOAT);
  for (float v : f32) t->add_float_data(v);
  const double f64[] = {1.0 / 3.0, -2.0, 1e300, 5e-324};
  t = add("f64", TP::DOUBLE);
  for (double v : f64) t->add_double_data(v);
  const int32_t i8[] = {-128, 127, -1, 5};
  const int32_t u8[] = {0, 255, 7, 128};
  const int32_t i16[] = {-32768, 32767, -2, 300};
  const int32_t u16[] = {65535, 0, 1, 40000};
  const int32_t i32[] = {std::numeric_limits<int32_t>::min(), 2147483647, 0, -7};
  const int32_t b[] = {0, 1, 1, 0};
  const int32_t f16[] = {0x3c00, 0x8000, 0x7e00, 0x0001};
  const int32_t bf16[] = {0x3f80, 0xc000, 0x7fc0, 0x0080};
  for (auto [name, dtype, vals] :
       {std::tuple{"i8", TP::INT8, i8}, std::tuple{"u8", TP::UINT8, u8},
        std::tuple{"i16", TP::INT16, i16}, std::tuple{"u16", TP::UINT16, u16},
        std::tuple{"i32", TP::INT32, i32}, std::tuple{"b", TP::BOOL, b},
        std::tuple{"f16", TP::FLOAT16, f16}, std::tuple{"bf16", TP::BFLOAT16, bf16}}) {
    t = add(name, dtype);
    for (int k = 0; k < 4; ++k) t->add_int32_data(vals[k]);
  }
  const int64_t i64[] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                         0, -3};
  t = add("i64", TP::INT64);
  for (int64_t v : i64) t->add_int64_data(v);
  const uint64_t u32[] = {4294967295u, 0, 1, 123456789};
  t = add("u32", TP::UINT32);
  for (uint64_t v : u32) t->add_uint64_data(v);
  const uint64_t u64[] = {std::numeric_limits<uint64_t>::max(), 0, 1, 1ull << 63};
  t = add("u64", TP::UINT64);
  for (uint64_t v : u64) t->add_uint64_data(v);
  const char* strs[] = {"", "a", "hello world", "\xff\x01"};
  t = add("str", TP::STRING);
  for (const char* s : strs) t->add_string_data(s);

  auto model = po::parse_model(m.SerializeAsString(), ".");
  ASSERT_TRUE(model) << model.status().message();
  const ir::Graph& ig = model->graph;
  auto expect_bytes = [&](const char* name, const void* want, size_t size) {
    const ir::Tensor* got = ig.initializer(name);
    ASSERT_NE(got, nullptr) << name;
    ASSERT_EQ(got->nbytes(), size) << name;
    EXPECT_EQ(std::memcmp(got->raw(), want, size), 0) << name;
  };
  expect_bytes("f32", f32, sizeof(f32));
  expect_bytes("f64", f64, sizeof(f64));
  const int8_t i8b[] = {-128, 127, -1, 5};
  expect_bytes("i8", i8b, 4);
  const uint8_t u8b[] = {0, 255, 7, 128};
  expect_bytes("u8", u8b, 4);
  const int16_t i16b[] = {-32768, 32767, -2, 300};
  expect_bytes("i16", i16b, 8);
  const uint16_t u16b[] = {65535, 0, 1, 40000};
  expect_bytes("u16", u16b, 8);
  expect_bytes("i32", i32, 16);
  const uint8_t bb[] = {0, 1, 1, 0};
  expect_bytes("b", bb, 4);
  const uint16_t f16b[] = {0x3c00, 0x8000, 0x7e00, 0x0001};
  expect_bytes("f16", f16b, 8);
  EXPECT_EQ(ig.initializer("f16")->as_double(0), 1.0);
  const uint16_t bf16b[] = {0x3f80, 0xc000, 0x7fc0, 0x0080};
  expect_bytes("bf16", bf16b, 8);
  EXPECT_EQ(ig.initializer("bf16")->as_double(1), -2.0);
  expect_bytes("i64", i64, sizeof(i64));
  const uint32_t u32b[] = {4294967295u, 0, 1, 123456789};
  expect_bytes("u32", u32b, sizeof(u32b));
  expect_bytes("u64", u64, sizeof(u64));
  EXPECT_EQ(ig.initializer("str")->strings(),
            (std::vector<std::string>{"", "a", "hello world", "\xff\x01"}));

  TempDir dir;
  ASSERT_TRUE(po::save_model(*model, dir / "m.onnx").is_ok());
  auto back = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(*model, *back);
  ::onnx::ModelProto original = m;
  ::onnx::ModelProto saved = read_proto(dir / "m.onnx");
  for (const auto& st : saved.graph().initializer()) {
    EXPECT_TRUE(st.data_type() == TP::STRING || st.has_raw_data()) << st.name();
  }
  canonical_model(original);
  std::string diff;
  EXPECT_TRUE(protos_equivalent(original, saved, &diff)) << diff;
}

// A model using every part of ModelProto that ptqkit carries: doc strings, metadata, value_info
// with symbolic and unknown dims, several opset domains, a custom op with every attribute kind
// (graph, sparse tensor and type attributes opaque), sparse initializers, quantization
// annotations, functions and training info. After load -> save, the file equals the original.
//
//   x ──► Relu 'relu' ──► a ──► com.example.MyOp 'custom' (w) ──► b ──► Identity ──► y
TEST(RoundTrip, EveryModelFieldSurvives) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  for (auto [domain, version] :
       {std::pair{"", 13}, std::pair{"com.example", 2}, std::pair{"ai.onnx.ml", 3}}) {
    auto* op = m.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  m.set_producer_name("ptq-test");
  m.set_producer_version("1.2.3");
  m.set_domain("org.ptqkit.test");
  m.set_model_version(7);
  m.set_doc_string("model doc");
  for (auto [k, v] : {std::pair{"author", "me"}, std::pair{"license", "none"}}) {
    auto* kv = m.add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  auto* g = m.mutable_graph();
  g->set_name("everything");
  g->set_doc_string("graph doc");
  add_value(g->mutable_input(), "x", TP::FLOAT,
            {std::string("batch"), int64_t{3}, std::string(""), int64_t{4}})
      ->set_doc_string("input doc");
  auto* seq = g->add_input();
  seq->set_name("s");
  seq->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TP::FLOAT);
  auto* y = g->add_output();
  y->set_name("y");
  set_tensor_type(y, TP::FLOAT, {}, /*with_shape=*/false);
  add_value(g->mutable_value_info(), "a", TP::FLOAT,
            {std::string("batch"), int64_t{3}, std::string(""), int64_t{4}});
  add_value(g->mutable_value_info(), "b", TP::FLOAT, {});  // a scalar: shape with no dims
  add_raw_initializer(g, "w", TP::FLOAT, {2}, std::string("\x00\x00\x80\x3f\x00\x00\x00\x40", 8))
      ->set_doc_string("weight doc");

  add_node(g, "Relu", {"x"}, {"a"}, "relu")->set_doc_string("node doc");
  auto* custom = add_node(g, "MyOp", {"a", "", "w"}, {"b", ""}, "custom");
  custom->set_domain("com.example");
  using AP = ::onnx::AttributeProto;
  auto attr = [&](const char* name, AP::AttributeType type) {
    auto* a = custom->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  attr("f", AP::FLOAT)->set_f(0.25f);
  attr("i", AP::INT)->set_i(-42);
  attr("s", AP::STRING)->set_s(std::string("bytes\0x", 7));
  auto* at = attr("t", AP::TENSOR)->mutable_t();
  at->set_data_type(TP::INT64);
  at->add_dims(2);
  at->set_raw_data(std::string("\x01\0\0\0\0\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff", 16));
  auto* af = attr("fs", AP::FLOATS);
  af->add_floats(1.0f);
  af->add_floats(-2.5f);
  auto* ai = attr("is", AP::INTS);
  ai->add_ints(3);
  ai->add_ints(-4);
  auto* as = attr("ss", AP::STRINGS);
  as->add_strings("p");
  as->add_strings("q");
  auto* ats = attr("ts", AP::TENSORS);
  auto* t1 = ats->add_tensors();
  t1->set_data_type(TP::UINT8);
  t1->add_dims(3);
  t1->set_raw_data("abc");
  auto* body = attr("body", AP::GRAPH)->mutable_g();
  body->set_name("body");
  add_value(body->mutable_input(), "bi", TP::FLOAT, {int64_t{1}});
  add_value(body->mutable_output(), "bo", TP::FLOAT, {int64_t{1}});
  add_node(body, "Neg", {"bi"}, {"bo"});
  auto* sp = attr("sp", AP::SPARSE_TENSOR)->mutable_sparse_tensor();
  sp->add_dims(10);
  sp->mutable_values()->set_data_type(TP::FLOAT);
  sp->mutable_values()->add_dims(1);
  sp->mutable_values()->add_float_data(9.0f);
  sp->mutable_indices()->set_data_type(TP::INT64);
  sp->mutable_indices()->add_dims(1);
  sp->mutable_indices()->add_int64_data(4);
  attr("tp", AP::TYPE_PROTO)->mutable_tp()->mutable_tensor_type()->set_elem_type(TP::INT8);
  custom->mutable_attribute(0)->set_doc_string("attr doc");
  add_node(g, "Identity", {"b"}, {"y"});

  auto* sparse_init = g->add_sparse_initializer();
  sparse_init->CopyFrom(*sp);
  sparse_init->mutable_values()->set_name("sparse_w");
  auto* qa = g->add_quantization_annotation();
  qa->set_tensor_name("a");
  auto* qkv = qa->add_quant_parameter_tensor_names();
  qkv->set_key("SCALE_TENSOR");
  qkv->set_value("w");

  auto* fn = m.add_functions();
  fn->set_name("MyFunc");
  fn->set_domain("com.example");
  fn->add_input("fi");
  fn->add_output("fo");
  auto* fnode = fn->add_node();
  fnode->set_op_type("Relu");
  fnode->add_input("fi");
  fnode->add_output("fo");
  auto* ref = fnode->add_attribute();
  ref->set_name("alpha");
  ref->set_ref_attr_name("alpha");
  ref->set_type(AP::FLOAT);
  auto* fop = fn->add_opset_import();
  fop->set_domain("");
  fop->set_version(13);
  auto* ti = m.add_training_info();
  ti->mutable_initialization()->set_name("init");
  auto* binding = ti->add_update_binding();
  binding->set_key("w");
  binding->set_value("w_new");

  auto model = po::parse_model(m.SerializeAsString(), ".");
  ASSERT_TRUE(model) << model.status().message();
  EXPECT_EQ(model->opset("com.example"), 2);
  EXPECT_EQ(model->graph.nodes[1].domain, "com.example");
  EXPECT_EQ(model->graph.nodes[1].attr_int("i", 0), -42);
  EXPECT_EQ(model->graph.inputs[0].type.dims->at(0), ir::Dim::symbol("batch"));
  EXPECT_FALSE(model->graph.inputs[0].type.dims->at(2).known());
  EXPECT_TRUE(model->graph.inputs[0].type.dims->at(2).param.empty());
  EXPECT_FALSE(model->graph.outputs[0].type.dims.has_value());
  EXPECT_EQ(po::type_name(model->graph.inputs[1].type), "seq(tensor(float))");

  TempDir dir;
  ASSERT_TRUE(po::save_model(*model, dir / "m.onnx").is_ok());
  ::onnx::ModelProto saved = read_proto(dir / "m.onnx");
  std::string diff;
  EXPECT_TRUE(protos_equivalent(m, saved, &diff)) << diff;
  // Deterministic: saving the reloaded model writes the same bytes.
  auto back = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(back) << back.status().message();
  expect_models_eq(*model, *back);
  ASSERT_TRUE(po::save_model(*back, dir / "m2.onnx").is_ok());
  EXPECT_EQ(read_file(dir / "m.onnx"), read_file(dir / "m2.onnx"));
}

// An attribute type code this build does not know (a later ONNX's) cannot be interpreted, but
// it is carried through untouched: protobuf keeps the unknown enum value as an unknown field.
TEST(RoundTrip, UnknownAttributeTypeCarriedOpaque) {
  ::onnx::ModelProto m = relu_model();
  auto* attr = m.mutable_graph()->mutable_node(0)->add_attribute();
  attr->set_name("future");
  attr->set_i(5);
  // type = 77 (field 20): what a parser meets in a newer file.
  attr->GetReflection()->MutableUnknownFields(attr)->AddVarint(20, 77);
  const std::string bytes = m.SerializeAsString();
  auto model = po::parse_model(bytes, ".");
  ASSERT_TRUE(model) << model.status().message();
  const ir::Attribute* a = model->graph.nodes[0].attr("future");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, ir::AttrType::kUndefined);
  TempDir dir;
  ASSERT_TRUE(po::save_model(*model, dir / "m.onnx").is_ok());
  EXPECT_EQ(read_file(dir / "m.onnx"), bytes);
}

// Graph::inferred is filled by shape inference (symbolic dims kept) and never written back.
//   x[N,4] ──► Relu ──► r ──► Transpose ──► y
TEST(RoundTrip, ShapeInferenceFillsInferredOnly) {
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_output(0, "r");
  add_node(g, "Transpose", {"r"}, {"y"});
  g->mutable_output(0)->clear_type();
  auto model = po::parse_model(m.SerializeAsString(), ".");
  ASSERT_TRUE(model) << model.status().message();
  const ir::ValueInfo* r = model->graph.find_value_info("r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->type.dtype, ir::DType::kFloat32);
  EXPECT_EQ(ir::dims_str(r->type.dims), "[N, 4]");
  bool found_y = false;
  for (const ir::ValueInfo& v : model->graph.inferred) {
    if (v.name == "y") {
      found_y = true;
      EXPECT_EQ(ir::dims_str(v.type.dims), "[4, N]");
    }
  }
  EXPECT_TRUE(found_y);
  EXPECT_TRUE(model->graph.value_info.empty());

  po::LoadOptions no_inference;
  no_inference.infer_shapes = false;
  auto plain = po::parse_model(m.SerializeAsString(), ".", no_inference);
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->graph.inferred.empty());

  TempDir dir;
  ASSERT_TRUE(po::save_model(*model, dir / "m.onnx").is_ok());
  const auto saved = read_proto(dir / "m.onnx");
  EXPECT_EQ(saved.graph().value_info_size(), 0);
  EXPECT_FALSE(saved.graph().output(0).has_type());
}

TEST(CheckModel, AcceptsValidAndRejectsInvalid) {
  auto good = po::parse_model(relu_model().SerializeAsString(), ".");
  ASSERT_TRUE(good);
  EXPECT_TRUE(po::check_model(*good).is_ok()) << po::check_model(*good).message();

  ir::Model bad = *good;
  bad.graph.nodes[0].op_type = "NoSuchOp";
  Status s = po::check_model(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("NoSuchOp"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);

  // IR versions newer than libonnx 1.12 knows (9, 10) are checked under its newest rules.
  ir::Model newer = *good;
  newer.ir_version = 10;
  EXPECT_TRUE(po::check_model(newer).is_ok()) << po::check_model(newer).message();

  // Strict shape inference is part of the full check: Relu's output declared int64.
  ir::Model mistyped = *good;
  mistyped.graph.outputs[0].type.dtype = ir::DType::kInt64;
  Status t = po::check_model(mistyped);
  EXPECT_FALSE(t.is_ok());
}

TEST(GraphHash, StableAndSensitive) {
  ir::Model m = model_with_all_dtypes();
  m.graph.doc_string = "graph doc";  // fields after the initializers, and in one
  m.graph.mutable_initializers().front().doc_string = "first weight";
  const std::string h = po::graph_hash(m);
  EXPECT_EQ(h.size(), 64u);
  EXPECT_EQ(h, reference_graph_hash(m));  // every dtype, strings, a scalar, an empty tensor
  TempDir dir;
  po::SaveOptions ext;
  ext.external_data = true;
  ext.external_min_bytes = 0;
  ASSERT_TRUE(po::save_model(m, dir / "m.onnx", ext).is_ok());
  auto back = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(po::graph_hash(*back), h);  // storage form does not change the identity
  ir::Tensor* w = back->graph.mutable_initializer("w_float32");
  w->data<uint32_t>()[3] ^= 1u;  // one bit of one weight
  EXPECT_NE(po::graph_hash(*back), h);
}
