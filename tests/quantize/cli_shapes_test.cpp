// `ptq quantize` on a model with a symbolic dim the planner needs (MatMul M and N decide
// "matrix-vector stays float"): shapes from --data, a JSON cache's recorded inputs or
// --input-shape; a TensorRT text cache alone (no shapes) is a one-line error, exit 3. The
// written model keeps its symbolic dims.
#include <gtest/gtest.h>

#include <random>

#include "common/files.h"
#include "common/paths.h"
#include "ptq/calib_cache.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "quantize_test_util.h"

namespace ptq::quantize_testing {
namespace {

using ptq::testing::read_file;

ir::ValueInfo tensor_info(const std::string& name, std::vector<ir::Dim> dims) {
  ir::ValueInfo v;
  v.name = name;
  v.type.dtype = ir::DType::kFloat32;
  v.type.dims = std::move(dims);
  return v;
}

ir::Node& add_node(ir::Model& m, const std::string& op, const std::string& name,
                   std::vector<std::string> in, std::vector<std::string> out) {
  ir::Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  m.graph.nodes.push_back(std::move(n));
  return m.graph.nodes.back();
}

// A small attention block, x: [1, seq, 16] with seq symbolic:
//
//   x ─► attn/q (MatMul Wq) ─► q ───────────────────┐
//   x ─► attn/k (MatMul Wk) ─► k ─► Transpose ─► kt ─┴► attn/scores ─► s ─► Softmax ─► p ─┐
//   x ─► attn/v (MatMul Wv) ─► v ──────────────────────────────────────────────────────────┴►
//      attn/ctx ─► o ─► attn/out (MatMul Wo) ─► y
ir::Model attention_model() {
  ir::Model m;
  m.set_opset("", 17);
  const std::vector<ir::Dim> dims = {ir::Dim::of(1), ir::Dim::symbol("seq"), ir::Dim::of(16)};
  m.graph.inputs.push_back(tensor_info("x", dims));
  m.graph.outputs.push_back(tensor_info("y", dims));
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  auto weight = [&](const std::string& name) {
    ir::Tensor w(ir::DType::kFloat32, {16, 16});
    for (float& v : w.span<float>()) v = dist(rng);
    m.graph.set_initializer(name, std::move(w));
    return name;
  };
  for (const std::string w : {"q", "k", "v"})
    add_node(m, "MatMul", "attn/" + w, {"x", weight("W" + w)}, {w});
  ir::Attribute perm;
  perm.name = "perm";
  perm.type = ir::AttrType::kInts;
  perm.ints = {0, 2, 1};
  add_node(m, "Transpose", "attn/kt", {"k"}, {"kt"}).set_attr(perm);
  add_node(m, "MatMul", "attn/scores", {"q", "kt"}, {"s"});
  add_node(m, "Softmax", "attn/softmax", {"s"}, {"p"});
  add_node(m, "MatMul", "attn/ctx", {"p", "v"}, {"o"});
  add_node(m, "MatMul", "attn/out", {"o", weight("Wo")}, {"y"});
  return m;
}

const std::vector<std::string> kMatMuls = {"attn/q",      "attn/k",   "attn/v",
                                           "attn/scores", "attn/ctx", "attn/out"};

// True when input `slot` of node `name` reads a DequantizeLinear.
bool reads_dq(const ir::Model& m, const std::string& name, size_t slot) {
  for (const ir::Node& n : m.graph.nodes) {
    if (n.name != name || slot >= n.inputs.size()) continue;
    for (const ir::Node& p : m.graph.nodes) {
      if (p.op_type == "DequantizeLinear" && p.outputs[0] == n.inputs[slot]) return true;
    }
  }
  return false;
}

ir::Model load(const fs::path& p) {
  auto m = onnx::load_model(p);
  EXPECT_TRUE(m.has_value()) << p << ": " << m.status().message();
  return m.has_value() ? std::move(*m) : ir::Model{};
}

void expect_symbolic_input(const fs::path& written) {
  const ir::Model m = load(written);
  ASSERT_EQ(m.graph.inputs.size(), 1u);
  ASSERT_TRUE(m.graph.inputs[0].type.dims.has_value());
  EXPECT_EQ((*m.graph.inputs[0].type.dims)[1], ir::Dim::symbol("seq"));
}

// The model, 4 samples of x ([4, 8, 16]: seq = 8) and their calibration (JSON and TensorRT
// text caches), made once per test process.
class DynamicShapes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(process_dir("shapes"));
    ASSERT_TRUE(onnx::save_model(attention_model(), model()).is_ok());
    ir::Tensor x(ir::DType::kFloat32, {4, 8, 16});
    std::mt19937 rng(9);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& v : x.span<float>()) v = dist(rng);
    ASSERT_TRUE(data::save_npy(path("x.npy"), x).is_ok());
    auto r = run_ptq({"calibrate", model(), "--data", path("x.npy"), "--method", "minmax", "-o",
                      path("c.json"), "--trt-cache", path("c.cache"), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string model() { return path("attn.onnx"); }

  static fs::path* dir_;
};
fs::path* DynamicShapes::dir_ = nullptr;

TEST_F(DynamicShapes, TensorRtCacheAloneIsAOneLineError) {
  auto r = run_ptq({"quantize", model(), "--cache", path("c.cache"), "-o", path("a.onnx")});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err,
            "ptq: error: MatMul node 'attn/q': dim M of input 'x' is symbolic ('seq'); give "
            "--data, a JSON cache that records input shapes, or --input-shape x=1,<seq>,16\n");
  EXPECT_FALSE(fs::exists(path("a.onnx")));
}

TEST_F(DynamicShapes, InputShapeResolvesAndTheModelKeepsItsSymbolicDim) {
  auto r = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape", "x=1,8,16",
                    "-o", path("b.onnx"), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_symbolic_input(path("b.onnx"));
  const ir::Model m = load(path("b.onnx"));
  EXPECT_TRUE(onnx::check_model(m).is_ok());
  for (const std::string& n : kMatMuls) EXPECT_TRUE(reads_dq(m, n, 0)) << n;
  EXPECT_TRUE(reads_dq(m, "attn/scores", 1));
}

// trtexec's syntax (NAME:DxD…, a comma-separated list; --shapes as trtexec spells the flag)
// writes the same model as ptqkit's NAME=D,D,….
TEST_F(DynamicShapes, TrtexecShapeSyntaxMatchesTheOriginal) {
  auto original = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape",
                           "x=1,1,16", "-o", path("t0.onnx"), "--quiet"});
  ASSERT_EQ(original.exit_code, 0) << original.err;
  for (const char* flag : {"--input-shape", "--shapes"}) {
    auto r = run_ptq({"quantize", model(), "--cache", path("c.cache"), flag, "x:1x1x16", "-o",
                      path("t1.onnx"), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_file(path("t1.onnx")), read_file(path("t0.onnx"))) << flag;
  }
  auto list = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape",
                       "x:1x8x16,z:1x2", "-o", path("t2.onnx")});
  EXPECT_EQ(list.exit_code, 3);  // the list was read whole: z is named
  EXPECT_EQ(list.err, "ptq: error: --input-shape: 'z' is not an input of the model (inputs: x)\n");
  auto bad = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape",
                      "x:1x8xk", "-o", path("t2.onnx")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "ptq: error: --input-shape 'x:1x8xk': 'k' is not a dim (a whole number >= 0)\n");
}

TEST_F(DynamicShapes, DataResolves) {
  auto r = run_ptq({"quantize", model(), "--data", path("x.npy"), "--method", "minmax", "-o",
                    path("c.onnx"), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_symbolic_input(path("c.onnx"));
  const ir::Model m = load(path("c.onnx"));
  for (const std::string& n : kMatMuls) EXPECT_TRUE(reads_dq(m, n, 0)) << n;
}

TEST_F(DynamicShapes, JsonCacheRecordsTheShapesAndResolves) {
  auto table = calib::read_cache(path("c.json"));
  ASSERT_TRUE(table.has_value()) << table.status().message();
  ASSERT_EQ(table->model.inputs.size(), 1u);
  EXPECT_EQ(table->model.inputs[0].second, (std::vector<int64_t>{1, 8, 16}));
  auto r =
      run_ptq({"quantize", model(), "--cache", path("c.json"), "-o", path("d.onnx"), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_symbolic_input(path("d.onnx"));
  // The same plan as with --data: the same Q/DQ.
  ASSERT_EQ(run_ptq({"quantize", model(), "--data", path("x.npy"), "--method", "minmax", "-o",
                     path("d2.onnx"), "--quiet"})
                .exit_code,
            0);
  EXPECT_EQ(count_op(load(path("d.onnx")), "DequantizeLinear"),
            count_op(load(path("d2.onnx")), "DequantizeLinear"));
}

TEST_F(DynamicShapes, SeqOfOneKeepsTheMatrixVectorMatMulsFloat) {
  auto r = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape", "x=1,1,16",
                    "-o", path("e.onnx")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ir::Model m = load(path("e.onnx"));
  for (const std::string& n : kMatMuls) EXPECT_FALSE(reads_dq(m, n, 0)) << n;
  EXPECT_EQ(count_op(m, "DequantizeLinear"), 0);
  EXPECT_NE(r.out.find("quantized layers:  0"), std::string::npos) << r.out;
  expect_symbolic_input(path("e.onnx"));
}

TEST_F(DynamicShapes, BadInputShapesAreClearErrors) {
  auto unknown = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape",
                          "z=1,8,16", "-o", path("f.onnx")});
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_EQ(unknown.err,
            "ptq: error: --input-shape: 'z' is not an input of the model (inputs: x)\n");
  auto syntax = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape", "x=1,a",
                         "-o", path("f.onnx")});
  EXPECT_EQ(syntax.exit_code, 2);
  EXPECT_NE(syntax.err.find("'a' is not a dim"), std::string::npos) << syntax.err;
  auto rank = run_ptq({"quantize", model(), "--cache", path("c.cache"), "--input-shape", "x=8,16",
                       "-o", path("f.onnx")});
  EXPECT_EQ(rank.exit_code, 3);
  EXPECT_NE(rank.err.find("input 'x' has rank 3"), std::string::npos) << rank.err;
  auto conflict = run_ptq({"quantize", model(), "--data", path("x.npy"), "--input-shape",
                           "x=1,4,16", "-o", path("f.onnx")});
  EXPECT_EQ(conflict.exit_code, 3);
  EXPECT_NE(conflict.err.find("input 'x': --input-shape gives shape 1,4,16 but --data gave 1,8,16"),
            std::string::npos)
      << conflict.err;
  EXPECT_FALSE(fs::exists(path("f.onnx")));
}

// The exported transformer: its attention MatMuls read Reshapes of computed shapes that shape
// inference cannot follow, so their M and N are measured by one run on the bound shapes.
TEST(DynamicShapesTransformer, DimsInferenceCannotFollowAreMeasured) {
  const fs::path model = ptq::testing::test_models_dir() / "transformer.onnx";
  const ir::Model float_model = load(model);
  calib::CalibrationTable table;
  table.method = "minmax";
  for (const ir::Node& n : float_model.graph.nodes) {
    for (const std::string& o : n.outputs) table.tensors[o].amax = 2.0;
  }
  table.tensors["input"].amax = 2.0;
  const fs::path dir = process_dir("transformer");
  auto version = calib::parse_trt_version("8.6.1");
  ASSERT_TRUE(version.has_value());
  calib::WriteOptions wo{.format = calib::CacheFormat::kTensorRT};
  wo.trt.version = *version;
  ASSERT_TRUE(calib::write_cache(table, dir / "t.cache", wo).is_ok());
  const std::string out = (dir / "t.onnx").string();
  auto none =
      run_ptq({"quantize", model.string(), "--cache", (dir / "t.cache").string(), "-o", out});
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(
      none.err.find("MatMul node '/layers/layers.0/attn/MatMul': dim M of input "
                    "'/layers/layers.0/attn/Transpose_output_0' is unknown; give --data, a "
                    "JSON cache that records input shapes, or --input-shape input=<batch>,16,64"),
      std::string::npos)
      << none.err;
  auto bound = run_ptq({"quantize", model.string(), "--cache", (dir / "t.cache").string(),
                        "--input-shape", "input=2,16,64", "-o", out, "--quiet"});
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  const ir::Model m = load(out);
  EXPECT_TRUE(reads_dq(m, "/layers/layers.0/attn/MatMul", 0));
  EXPECT_TRUE(reads_dq(m, "/layers/layers.0/attn/MatMul", 1));
  EXPECT_TRUE(reads_dq(m, "/layers/layers.1/attn/MatMul_1", 0));
  EXPECT_EQ((*m.graph.inputs[0].type.dims)[0], ir::Dim::symbol("batch"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ptq::quantize_testing
