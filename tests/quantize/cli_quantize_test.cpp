// `ptq quantize` end to end on the bundled example (examples/fashion_cnn.onnx): with --data and
// with --cache (ptqkit JSON and TensorRT text caches), the written model passing the full ONNX
// check, its metadata, the cache checks (--force), --exclude, --requantize, --external-data,
// the ORT target, and the opset conversion of an old model.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/files.h"
#include "ptq/calib_cache.h"
#include "ptq/onnx.h"
#include "quantize_test_util.h"

namespace ptq::quantize_testing {
namespace {

using ptq::testing::read_file;

// One calibrated quantization shared by the tests of a process (entropy calibration, 64
// samples): ctest runs each test alone, so each pays for it once (about a second).
class Quantize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(process_dir("shared"));
    result_ = new ptq::testing::PtqResult(
        run_ptq({"quantize", example_model(), "--data", calib_npy(), "--samples", "64",
                 "--method", "entropy", "-o", (*dir_ / "q.onnx").string(), "--trt-cache",
                 (*dir_ / "q.cache").string()}));
  }
  static void TearDownTestSuite() {
    delete result_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  static fs::path shared(const std::string& name) { return *dir_ / name; }
  static const ptq::testing::PtqResult& first() { return *result_; }

  static fs::path* dir_;
  static ptq::testing::PtqResult* result_;
};
fs::path* Quantize::dir_ = nullptr;
ptq::testing::PtqResult* Quantize::result_ = nullptr;

ir::Model load(const fs::path& p) {
  auto m = onnx::load_model(p);
  EXPECT_TRUE(m.has_value()) << p << ": " << m.status().message();
  return m.has_value() ? std::move(*m) : ir::Model{};
}

TEST_F(Quantize, WithDataWritesCheckedModelMetadataAndCache) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const ir::Model m = load(shared("q.onnx"));
  Status checked = onnx::check_model(m);
  EXPECT_TRUE(checked.is_ok()) << checked.message();
  EXPECT_GE(m.opset(), 13);
  const int64_t q = count_op(m, "QuantizeLinear"), dq = count_op(m, "DequantizeLinear");
  EXPECT_GT(q, 0);
  EXPECT_GT(dq, q);  // every weight has a DQ of its own
  // The summary states the same counts.
  EXPECT_NE(first().out.find(fmt::format("{} QuantizeLinear, {} DequantizeLinear", q, dq)),
            std::string::npos)
      << first().out;
  for (const char* line : {"quantized layers:", "float tensors:", "size:"}) {
    EXPECT_NE(first().out.find(line), std::string::npos) << line << "\n" << first().out;
  }
  // The cache beside the output, and the one the metadata's hash names.
  const fs::path cache = shared("q.calib.json");
  ASSERT_TRUE(fs::exists(cache));
  ASSERT_TRUE(fs::exists(shared("q.cache")));
  ASSERT_NE(m.metadata("ptqkit.cache_hash"), nullptr);
  EXPECT_EQ(*m.metadata("ptqkit.cache_hash"), onnx::sha256_hex(read_file(cache)));
  ASSERT_NE(m.metadata("ptqkit.method"), nullptr);
  EXPECT_EQ(*m.metadata("ptqkit.method"), "entropy");
  ASSERT_NE(m.metadata("ptqkit.version"), nullptr);
  EXPECT_FALSE(m.metadata("ptqkit.version")->empty());
  ASSERT_NE(m.metadata("ptqkit.target"), nullptr);
  EXPECT_EQ(*m.metadata("ptqkit.target"), "tensorrt");
  // The cache records the float model it was calibrated on.
  auto table = calib::read_cache(cache);
  ASSERT_TRUE(table.has_value()) << table.status().message();
  EXPECT_EQ(table->model.graph_sha256, onnx::graph_hash(load(example_model())));
  EXPECT_EQ(table->run.samples, 64);
  // TensorRT rules: the stem conv (1 input channel) stays float; no zero point is non-zero.
  for (const ir::Node& n : m.graph.nodes) {
    if (n.name == "/stem/stem.0/stem.0.0/Conv") {
      EXPECT_EQ(n.inputs[0], "input");
    }
    if (n.op_type == "QuantizeLinear" && n.inputs.size() > 2) {
      const ir::Tensor* zp = m.graph.initializer(n.inputs[2]);
      ASSERT_NE(zp, nullptr);
      EXPECT_EQ(zp->dtype(), ir::DType::kInt8);
      EXPECT_EQ(zp->as_int64(0), 0);
    }
  }
  // Entropy calibration fits the stem output's background spikes (see the EvalCompare tests):
  // the warning names the tensor and the quantized layers reading it.
  EXPECT_NE(first().err.find("'/stem/stem.1/Relu_output_0'"), std::string::npos) << first().err;
  EXPECT_NE(first().err.find("/block1/conv1/conv1.0/Conv, /block1/Add read it"), std::string::npos)
      << first().err;
  // `ptq info` counts them too.
  auto info = run_ptq({"info", shared("q.onnx").string()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(
      info.out.find(fmt::format("{} ({} QuantizeLinear, {} DequantizeLinear)", q + dq, q, dq)),
      std::string::npos)
      << info.out;
}

TEST_F(Quantize, FromJsonCacheIsTheSameModel) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path dir = scratch_dir();
  const fs::path out = dir / "from_cache.onnx";
  auto r = run_ptq({"quantize", example_model(), "--cache", shared("q.calib.json").string(), "-o",
                    out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No cache warning (missing or unknown names); the clipping warning is the model's own.
  EXPECT_EQ(r.err.find("cache"), std::string::npos) << r.err;
  // Same table, same plan: the same bytes (the metadata's cache hash included).
  EXPECT_EQ(read_file(out), read_file(shared("q.onnx")));
  EXPECT_FALSE(fs::exists(dir / "from_cache.calib.json"));  // --cache writes no cache by default
}

TEST_F(Quantize, FromTensorRtCacheMatchesScales) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path out = scratch_dir() / "from_trt.onnx";
  auto r = run_ptq({"quantize", example_model(), "--cache", shared("q.cache").string(), "-o",
                    out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const ir::Model a = load(shared("q.onnx"));
  const ir::Model b = load(out);
  EXPECT_TRUE(onnx::check_model(b).is_ok());
  EXPECT_EQ(count_op(a, "QuantizeLinear"), count_op(b, "QuantizeLinear"));
  EXPECT_EQ(count_op(a, "DequantizeLinear"), count_op(b, "DequantizeLinear"));
  // The TensorRT cache stores each scale as float32 bits: activation scales agree to float32.
  int compared = 0;
  for (const ir::Initializer& init : a.graph.initializers()) {
    if (init.name.size() < 6 || init.name.substr(init.name.size() - 6) != "_scale") continue;
    const ir::Tensor* other = b.graph.initializer(init.name);
    ASSERT_NE(other, nullptr) << init.name;
    ASSERT_EQ(other->size(), init.tensor.size());
    for (int64_t i = 0; i < init.tensor.size(); ++i) {
      EXPECT_NEAR(other->as_double(i), init.tensor.as_double(i), 1e-6 * init.tensor.as_double(i))
          << init.name;
    }
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

// The example with one weight changed: another graph, same tensor names.
fs::path other_model(const fs::path& dir) {
  ir::Model m = load(example_model());
  ir::Tensor* w = m.graph.mutable_initializer("head.bias");
  EXPECT_NE(w, nullptr);
  if (w != nullptr) w->data<float>()[0] += 0.5f;
  const fs::path p = dir / "other.onnx";
  EXPECT_TRUE(onnx::save_model(m, p).is_ok());
  return p;
}

TEST_F(Quantize, CacheOfAnotherModelRefusedUnlessForce) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path dir = scratch_dir();
  const fs::path other = other_model(dir);
  auto refused = run_ptq({"quantize", other.string(), "--cache", shared("q.calib.json").string(),
                          "-o", (dir / "x.onnx").string()});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
  auto forced = run_ptq({"quantize", other.string(), "--cache", shared("q.calib.json").string(),
                         "-o", (dir / "x.onnx").string(), "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("warning"), std::string::npos) << forced.err;
  EXPECT_TRUE(onnx::check_model(load(dir / "x.onnx")).is_ok());
}

TEST_F(Quantize, CacheWithUnknownAndMissingNamesWarns) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path dir = scratch_dir();
  auto table = calib::read_cache(shared("q.calib.json"));
  ASSERT_TRUE(table.has_value());
  const std::string dropped = "/block2/Relu_output_0";
  ASSERT_EQ(table->tensors.erase(dropped), 1u);
  table->tensors["no_such_tensor"] = table->tensors.begin()->second;
  ASSERT_TRUE(calib::write_json_cache(*table, dir / "edited.json").is_ok());
  auto r = run_ptq({"quantize", example_model(), "--cache", (dir / "edited.json").string(), "-o",
                    (dir / "e.onnx").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no_such_tensor"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dropped), std::string::npos) << r.err;
  // The tensor without a scale stays float and the summary lists it.
  EXPECT_NE(r.out.find(dropped), std::string::npos) << r.out;
  const ir::Model m = load(dir / "e.onnx");
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "QuantizeLinear") {
      EXPECT_NE(n.inputs[0], dropped);
    }
  }
}

TEST_F(Quantize, ExcludeNamesANodeOrFailsWithCloseMatches) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path dir = scratch_dir();
  const std::string node = "/block2/conv1/conv1.0/Conv";
  auto bad = run_ptq({"quantize", example_model(), "--cache", shared("q.calib.json").string(),
                      "-o", (dir / "x.onnx").string(), "--exclude", "/block2/conv1/conv1.0/Cnv"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find(node), std::string::npos) << "close match not listed: " << bad.err;
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << "one line: " << bad.err;
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));

  auto ok = run_ptq({"quantize", example_model(), "--cache", shared("q.calib.json").string(), "-o",
                     (dir / "x.onnx").string(), "--exclude", node + ",/head/Gemm"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const ir::Model m = load(dir / "x.onnx");
  ASSERT_NE(m.metadata("ptqkit.excluded_nodes"), nullptr);
  EXPECT_NE(m.metadata("ptqkit.excluded_nodes")->find(node), std::string::npos);
  EXPECT_NE(m.metadata("ptqkit.excluded_nodes")->find("/head/Gemm"), std::string::npos);
  for (const ir::Node& n : m.graph.nodes) {
    if (n.name == node) {
      EXPECT_EQ(n.inputs[0], "/pool1/MaxPool_output_0");  // float input, no DQ
      EXPECT_EQ(m.graph.initializer(n.inputs[1])->dtype(), ir::DType::kFloat32);
    }
  }
  auto ops = run_ptq({"quantize", example_model(), "--cache", shared("q.calib.json").string(),
                      "-o", (dir / "y.onnx").string(), "--exclude-op-types", "Gemm"});
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  for (const ir::Node& n : load(dir / "y.onnx").graph.nodes) {
    if (n.op_type == "Gemm") {
      EXPECT_EQ(n.inputs[0], "/Flatten_output_0");
    }
  }
}

TEST_F(Quantize, AlreadyQuantizedNeedsRequantize) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path dir = scratch_dir();
  auto refused = run_ptq({"quantize", shared("q.onnx").string(), "--cache",
                          shared("q.calib.json").string(), "-o", (dir / "r.onnx").string()});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("--requantize"), std::string::npos) << refused.err;
  // The cache is accepted: it is the one q.onnx records (ptqkit.cache_hash), though the
  // stripped graph's weights are the dequantized ones, not the float model's.
  auto again = run_ptq({"quantize", shared("q.onnx").string(), "--cache",
                        shared("q.calib.json").string(), "-o", (dir / "r.onnx").string(),
                        "--requantize"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const ir::Model a = load(shared("q.onnx"));
  const ir::Model b = load(dir / "r.onnx");
  EXPECT_TRUE(onnx::check_model(b).is_ok());
  EXPECT_EQ(count_op(a, "QuantizeLinear"), count_op(b, "QuantizeLinear"));
  EXPECT_EQ(count_op(a, "DequantizeLinear"), count_op(b, "DequantizeLinear"));
}

TEST_F(Quantize, ExternalDataAndOrtTarget) {
  ASSERT_EQ(first().exit_code, 0) << first().err;
  const fs::path dir = scratch_dir();
  auto ext = run_ptq({"quantize", example_model(), "--cache", shared("q.calib.json").string(),
                      "-o", (dir / "ext.onnx").string(), "--external-data"});
  ASSERT_EQ(ext.exit_code, 0) << ext.err;
  EXPECT_TRUE(fs::exists(dir / "ext.onnx.data"));
  EXPECT_TRUE(onnx::check_model(load(dir / "ext.onnx")).is_ok());

  auto ort = run_ptq({"quantize", example_model(), "--cache", shared("q.calib.json").string(),
                      "-o", (dir / "ort.onnx").string(), "--target", "ort", "--activation-type",
                      "uint8"});
  ASSERT_EQ(ort.exit_code, 0) << ort.err;
  const ir::Model m = load(dir / "ort.onnx");
  EXPECT_TRUE(onnx::check_model(m).is_ok());
  EXPECT_EQ(*m.metadata("ptqkit.target"), "ort");
  bool int32_bias = false;
  for (const ir::Initializer& i : m.graph.initializers())
    int32_bias |= i.tensor.dtype() == ir::DType::kInt32;
  EXPECT_TRUE(int32_bias);
}

TEST(QuantizeUsage, NeedsExactlyOneOfDataAndCache) {
  const fs::path dir = scratch_dir();
  auto none = run_ptq({"quantize", example_model(), "-o", (dir / "x.onnx").string()});
  EXPECT_EQ(none.exit_code, 2) << none.err;
  auto both = run_ptq({"quantize", example_model(), "--data", calib_npy(), "--cache", "c.json",
                       "-o", (dir / "x.onnx").string()});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  auto help = run_ptq({"quantize", "--help"});
  EXPECT_NE(help.out.find("OUT.calib.json"), std::string::npos) << help.out;
}

// The example at opset 11 with a Softmax head (axis 1 on [N,10]: the opset-13 change needs the
// converter): quantize converts it to 13 and the result passes the check.
TEST(QuantizeOpset, OldOpsetIsConverted) {
  const fs::path dir = scratch_dir();
  ir::Model m = load(example_model());
  m.ir_version = 6;
  m.set_opset("", 11);
  ir::Node soft;
  soft.op_type = "Softmax";
  soft.name = "/head/Softmax";
  soft.inputs = {"logits"};
  soft.outputs = {"probs"};
  m.graph.nodes.push_back(soft);
  m.graph.outputs[0].name = "probs";
  const fs::path old = dir / "opset11.onnx";
  ASSERT_TRUE(onnx::save_model(m, old).is_ok());
  auto r = run_ptq({"quantize", old.string(), "--data", calib_npy(), "--samples", "16", "--method",
                    "minmax", "-o", (dir / "q.onnx").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("from opset 11 to 13"), std::string::npos) << r.err;
  const ir::Model q = load(dir / "q.onnx");
  EXPECT_EQ(q.opset(), 13);
  Status checked = onnx::check_model(q);
  EXPECT_TRUE(checked.is_ok()) << checked.message();
  EXPECT_GT(count_op(q, "QuantizeLinear"), 0);
  // The cache it wrote is accepted for the model as given (hash of the converted graph).
  auto again = run_ptq({"quantize", old.string(), "--cache", (dir / "q.calib.json").string(), "-o",
                        (dir / "q2.onnx").string()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
}

}  // namespace
}  // namespace ptq::quantize_testing
