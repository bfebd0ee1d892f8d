// Malformed nodes are invalid input (one line naming the node), never a crash in libonnx's
// shape inference: the inputs that once crashed it (tests/fuzz/regressions, see its README) and
// each schema check on a small graph built here.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "proto_builders.h"
#include "test_util.h"

using namespace ptq;
using namespace ptq::testing;
namespace po = ptq::onnx;

namespace {

const fs::path kRegressions = fs::path(PTQ_SOURCE_DIR) / "tests" / "fuzz" / "regressions";

void expect_error(const Status& s, std::initializer_list<std::string> parts) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  for (const std::string& p : parts) {
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in: " << s.message();
  }
}

Status load_error(const fs::path& file, const po::LoadOptions& options = {}) {
  auto m = po::load_model(file, options);
  EXPECT_FALSE(m.has_value()) << file << " loads";
  return m.has_value() ? Status{} : m.status();
}

Status load_error(const TempDir& dir, const ::onnx::ModelProto& proto,
                  const po::LoadOptions& options = {}) {
  write_file(dir / "m.onnx", proto.SerializeAsString());
  return load_error(dir / "m.onnx", options);
}

struct Regression {
  const char* file;
  std::vector<std::string> message;  // parts of the expected error
};

// x[1,3,8,8] ──► Conv(w[4,3,3,3]) ──► y, at opset 13.
::onnx::ModelProto conv_model() {
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_input();
  add_value(g->mutable_input(), "x", ::onnx::TensorProto::FLOAT,
            {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  add_raw_initializer(g, "w", ::onnx::TensorProto::FLOAT, {4, 3, 3, 3}, std::string(4 * 108, '\0'));
  add_node(g, "Conv", {"x", "w"}, {"y"}, "conv");
  g->mutable_output(0)->clear_type();
  return m;
}

void add_ints(::onnx::NodeProto* n, const std::string& name, std::vector<int64_t> values) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

}  // namespace

TEST(MalformedNodes, FuzzAndProbeFindsAreOneLineErrors) {
  const Regression cases[] = {
      {"conv_pool_shape_inference.onnx",
       {"Conv node 'conv'", "input 'd' has rank 2 but weight 'w' has rank 4"}},
      {"gemm_duplicate_opset.onnx", {"opset_import lists domain '' twice"}},
      {"conv_transpose_weight_rank1.onnx",
       {"ConvTranspose node 'deconv'", "weight 'w' has rank 1"}},
      {"qlinear_conv_rank_mismatch.onnx", {"QLinearConv node 'qconv'", "weight 'w' has rank 6"}},
      {"conv_stride_zero.onnx", {"Conv node 'conv'", "'strides'", "positive"}},
      {"max_pool_stride_zero.onnx", {"MaxPool node 'pool'", "'strides'", "positive"}},
      {"max_unpool_indices_rank1.onnx", {"MaxUnpool node 'unpool'", "indices 'i' has rank 1"}},
      {"max_unpool_indices_empty.onnx", {"MaxUnpool node 'unpool'", "required input 1", "empty"}},
      {"gemm_opset6_rank0.onnx", {"Gemm node 'gemm'", "input 'a' has rank 0", "rank 2"}},
      {"lstm_opset1_rank1.onnx", {"LSTM node 'lstm'", "input 'x' has rank 1", "rank 3"}},
      {"stft_signal_rank1.onnx", {"STFT node 'stft'", "signal 'x' has rank 1"}},
      {"depth_to_space_huge_blocksize.onnx", {"DepthToSpace node 'd2s'", "'blocksize'"}},
      {"gather_nd_negative_batch_dims.onnx", {"GatherND node 'gnd'", "'batch_dims' is -100"}},
  };
  for (const Regression& r : cases) {
    SCOPED_TRACE(r.file);
    const fs::path file = kRegressions / r.file;
    ASSERT_TRUE(fs::exists(file));
    Status s = load_error(file);
    expect_error(s, {r.file});
    for (const std::string& part : r.message) expect_error(s, {part});
  }
}

TEST(MalformedNodes, UntypedInputSkipsInferenceOfThatNode) {
  // MaxUnpool's indices come from a custom op: not malformed, only not inferable.
  auto m = po::load_model(kRegressions / "max_unpool_untyped_indices.onnx");
  ASSERT_TRUE(m) << m.status().message();
  for (const auto& v : m->graph.inferred) {
    if (v.name == "y") {
      EXPECT_FALSE(v.type.dims) << "MaxUnpool's output got a shape";
    }
  }
  EXPECT_EQ(m->graph.nodes[0].domain, "com.example");
}

TEST(MalformedNodes, EveryRegressionIsInTheTest) {
  // A new file in tests/fuzz/regressions needs its expected message above.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kRegressions))
    files += e.path().extension() == ".onnx";
  EXPECT_EQ(files, 14u);
}

TEST(MalformedNodes, InputAndOutputCounts) {
  TempDir dir;
  ::onnx::ModelProto one_input = conv_model();
  one_input.mutable_graph()->mutable_node(0)->mutable_input()->RemoveLast();
  expect_error(load_error(dir, one_input), {"Conv node 'conv' has 1 inputs", "takes 2 to 3"});

  ::onnx::ModelProto two_outputs = conv_model();
  two_outputs.mutable_graph()->mutable_node(0)->add_output("extra");
  expect_error(load_error(dir, two_outputs), {"Conv node 'conv' has 2 outputs", "gives 1"});

  ::onnx::ModelProto empty_weight = conv_model();
  empty_weight.mutable_graph()->mutable_node(0)->set_input(1, "");
  expect_error(load_error(dir, empty_weight), {"required input 1 ('W')"});
}

TEST(MalformedNodes, RequiredAttribute) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  add_node(g, "Concat", {"x", "x"}, {"y"}, "cat");
  expect_error(load_error(dir, m), {"Concat node 'cat'", "required attribute 'axis'"});
}

TEST(MalformedNodes, WindowAttributes) {
  TempDir dir;
  ::onnx::ModelProto pads = conv_model();
  add_ints(pads.mutable_graph()->mutable_node(0), "kernel_shape", {3, 3});
  add_ints(pads.mutable_graph()->mutable_node(0), "pads", {1, 1});
  expect_error(load_error(dir, pads), {"'pads' has 2 values", "need 4"});

  ::onnx::ModelProto strides = conv_model();
  add_ints(strides.mutable_graph()->mutable_node(0), "kernel_shape", {3, 3});
  add_ints(strides.mutable_graph()->mutable_node(0), "strides", {1, 1, 1});
  expect_error(load_error(dir, strides), {"'strides' has 3 values but 'kernel_shape' has 2"});

  ::onnx::ModelProto dilations = conv_model();
  add_ints(dilations.mutable_graph()->mutable_node(0), "dilations", {1, -2});
  expect_error(load_error(dir, dilations), {"'dilations' holds -2"});
}

TEST(MalformedNodes, CheckedWithoutShapeInferenceToo) {
  TempDir dir;
  ::onnx::ModelProto m = conv_model();
  add_ints(m.mutable_graph()->mutable_node(0), "strides", {0, 0});
  po::LoadOptions no_inference;
  no_inference.infer_shapes = false;
  expect_error(load_error(dir, m, no_inference), {"Conv node 'conv'", "'strides'"});
}

TEST(MalformedNodes, SubgraphNodesAreChecked) {
  //   cond ──► If ──► y      then: Concat(a, a) without axis     else: Identity(a)
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_input();
  add_value(g->mutable_input(), "cond", ::onnx::TensorProto::BOOL, {});
  add_raw_initializer(g, "a", ::onnx::TensorProto::FLOAT, {4}, std::string(16, '\0'));
  auto* node = add_node(g, "If", {"cond"}, {"y"}, "if");
  auto add_branch = [&](const char* name, const char* op, std::vector<std::string> inputs) {
    auto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(::onnx::AttributeProto::GRAPH);
    auto* body = attr->mutable_g();
    body->set_name(name);
    add_node(body, op, inputs, {"r"}, "inner");
    body->add_output()->set_name("r");
  };
  add_branch("then_branch", "Concat", {"a", "a"});
  add_branch("else_branch", "Identity", {"a"});
  g->mutable_output(0)->clear_type();
  expect_error(load_error(dir, m), {"Concat node 'inner'", "required attribute 'axis'"});
}

TEST(MalformedNodes, UnknownAndCustomOpsPassUnchecked) {
  TempDir dir;
  ::onnx::ModelProto m = relu_model();
  auto* g = m.mutable_graph();
  // Counts no schema would allow, on ops libonnx does not know: carried through.
  add_node(g, "Relu", {"y", "y", "y"}, {"z", "w"}, "custom")->set_domain("com.example");
  add_node(g, "NoSuchOp", {}, {"v"}, "unknown");
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  write_file(dir / "m.onnx", m.SerializeAsString());
  auto loaded = po::load_model(dir / "m.onnx");
  ASSERT_TRUE(loaded) << loaded.status().message();
  EXPECT_EQ(loaded->graph.nodes.size(), 3u);
  EXPECT_EQ(loaded->graph.nodes[1].inputs.size(), 3u);
}
