// `ptq info` end to end: text and JSON on a model built here, exit codes and error lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/node_builder.h"
#include "common/paths.h"
#include "common/temp_dir.h"
#include "ptq/onnx.h"

using namespace ptq;
namespace fs = std::filesystem;
using ptq::testing::run_ptq;

namespace {

using ptq::testing::TempDir;
using ptq::testing::output_node;

// x[batch,8] ──► QuantizeLinear(s,z) ──► q ──► DequantizeLinear(s,z) ──► d ──► MatMul(W[8,4]) ──► m
//   ──► Add(B[4]) ──► a ──► Relu ──► r ──► com.acme.Fancy ──► y[batch, ?]
// Parameters: W 32 + B 4 + s 1 (float32) + z 1 (int8) = 38 values, 37 * 4 + 1 = 149 bytes.
ir::Model known_model() {
  ir::Model m;
  m.ir_version = 8;
  m.producer_name = "ptq-cli-test";
  m.producer_version = "0.1";
  m.set_opset("", 13);
  m.set_opset("com.acme", 1);
  ir::Graph& g = m.graph;
  g.inputs.push_back(
      {"x",
       {ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("batch"), ir::Dim::of(8)}, {}},
       {}});
  g.outputs.push_back(
      {"y",
       {ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("batch"), ir::Dim{}}, {}},
       {}});
  g.set_initializer("W", ir::Tensor(ir::DType::kFloat32, {8, 4}));
  g.set_initializer("B", ir::Tensor(ir::DType::kFloat32, {4}));
  g.set_initializer("s", ptq::ir::make_tensor<float>({}, {0.5f}));
  g.set_initializer("z", ir::Tensor(ir::DType::kInt8, {}));
  g.nodes.push_back(output_node("QuantizeLinear", {"x", "s", "z"}, {"q"}));
  g.nodes.push_back(output_node("DequantizeLinear", {"q", "s", "z"}, {"d"}));
  g.nodes.push_back(output_node("MatMul", {"d", "W"}, {"m"}));
  g.nodes.push_back(output_node("Add", {"m", "B"}, {"a"}));
  g.nodes.push_back(output_node("Relu", {"a"}, {"r"}));
  g.nodes.push_back(output_node("Fancy", {"r"}, {"y"}));
  g.nodes.back().domain = "com.acme";
  return m;
}

}  // namespace

TEST(InfoCli, JsonOnKnownModel) {
  TempDir dir;
  ASSERT_TRUE(onnx::save_model(known_model(), dir / "m.onnx").is_ok());
  auto r = run_ptq({"info", (dir / "m.onnx").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ir_version"], 8);
  EXPECT_EQ(j["opset"], 13);
  ASSERT_EQ(j["opsets"].size(), 2u);
  EXPECT_EQ(j["opsets"][1]["domain"], "com.acme");
  EXPECT_EQ(j["producer"]["name"], "ptq-cli-test");
  EXPECT_EQ(j["producer"]["version"], "0.1");
  ASSERT_EQ(j["inputs"].size(), 1u);  // initializers are not inputs to feed
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json::parse(R"(["batch", 8])"));
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::parse(R"(["batch", null])"));
  EXPECT_EQ(j["node_count"], 6);
  EXPECT_EQ(j["op_counts"]["QuantizeLinear"], 1);
  EXPECT_EQ(j["op_counts"]["MatMul"], 1);
  EXPECT_EQ(j["op_counts"]["com.acme.Fancy"], 1);
  EXPECT_EQ(j["parameters"]["count"], 38);
  EXPECT_EQ(j["parameters"]["bytes"], 149);
  EXPECT_EQ(j["parameters"]["initializers"], 4);
  EXPECT_EQ(j["qdq_nodes"]["total"], 2);
  EXPECT_EQ(j["qdq_nodes"]["quantize_linear"], 1);
  EXPECT_EQ(j["qdq_nodes"]["dequantize_linear"], 1);
  // null only in a build without the CPU runtime; the runtime runs every default-domain op here.
  ASSERT_TRUE(j.contains("unsupported_ops"));
  if (!j["unsupported_ops"].is_null()) {
    EXPECT_EQ(j["unsupported_ops"], nlohmann::json::parse(R"(["com.acme.Fancy"])"));
  }
}

TEST(InfoCli, TextOnKnownModel) {
  TempDir dir;
  ASSERT_TRUE(onnx::save_model(known_model(), dir / "m.onnx").is_ok());
  auto r = run_ptq({"info", (dir / "m.onnx").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"ir version:  8\n", "opsets:      ai.onnx 13, com.acme 1\n",
        "producer:    ptq-cli-test 0.1\n", "  x  float32 [batch, 8]\n", "  y  float32 [batch, ?]\n",
        "nodes:       6\n", "  com.acme.Fancy    1\n",
        "parameters:  38 (149 B in 4 initializers)\n",
        "Q/DQ nodes:  2 (1 QuantizeLinear, 1 DequantizeLinear)\n", "unsupported ops (cpu): "}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing '" << line << "' in:\n" << r.out;
  }
}

TEST(InfoCli, ExitCodesAndErrorLines) {
  TempDir dir;
  auto missing = run_ptq({"info", (dir / "missing.onnx").string()});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err.rfind("ptq: error: ", 0), 0u) << missing.err;
  EXPECT_NE(missing.err.find("missing.onnx"), std::string::npos);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;

  std::ofstream(dir / "junk.onnx") << "this is not a model";
  auto junk = run_ptq({"info", (dir / "junk.onnx").string(), "--json"});
  EXPECT_EQ(junk.exit_code, 3);
  EXPECT_EQ(junk.err.rfind("ptq: error: ", 0), 0u) << junk.err;
  EXPECT_EQ(std::count(junk.err.begin(), junk.err.end(), '\n'), 1) << junk.err;

  auto usage = run_ptq({"info"});
  EXPECT_EQ(usage.exit_code, 2) << usage.err;
  auto bad_flag = run_ptq({"info", "m.onnx", "--no-such-flag"});
  EXPECT_EQ(bad_flag.exit_code, 2) << bad_flag.err;
  auto help = run_ptq({"info", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--json"), std::string::npos);
}

// --cpu-isa: info reports the level the CPU kernels run (the best this CPU has by default, a
// forced lower one when asked), in text and JSON; a name that is no level is a usage error.
TEST(InfoCli, ReportsTheCpuKernelsInstructionSet) {
  TempDir dir;
  ASSERT_TRUE(onnx::save_model(known_model(), dir / "m.onnx").is_ok());
  const std::string model = (dir / "m.onnx").string();
  auto best = run_ptq({"info", model, "--json"});
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const std::string level = nlohmann::json::parse(best.out)["cpu_isa"];
  EXPECT_TRUE(level == "baseline" || level == "avx2" || level == "avx512") << level;
  auto forced = run_ptq({"info", model, "--cpu-isa", "baseline"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.out.find("cpu kernels: baseline (this CPU runs up to " + level + ")"),
            std::string::npos) << forced.out;
  auto bad = run_ptq({"info", model, "--cpu-isa", "sse9"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(bad.out, "");
}

// The input the fuzzer found crashing libonnx's Conv shape inference (data rank 2, weight
// rank 4): a one-line error naming the node, exit 3 (tests/fuzz/regressions has the others).
TEST(InfoCli, MalformedNodeIsOneLineError) {
  const fs::path file = fs::path(PTQ_SOURCE_DIR) / "tests" / "fuzz" / "regressions" /
                        "conv_pool_shape_inference.onnx";
  auto r = run_ptq({"info", file.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("ptq: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("Conv node 'conv'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(InfoCli, RealModel) {
  const fs::path file = ptq::testing::test_models_dir() / "resnet18.onnx";
  ASSERT_TRUE(fs::exists(file)) << file << " is missing: run scripts/make-testdata.sh";
  auto model = onnx::load_model(file);
  ASSERT_TRUE(model) << model.status().message();
  auto r = run_ptq({"info", file.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  // The counts agree with the library's view of the same file.
  EXPECT_EQ(j["node_count"], model->graph.nodes.size());
  int64_t params = 0;
  for (const auto& i : model->graph.initializers()) params += i.tensor.size();
  EXPECT_EQ(j["parameters"]["count"], params);
  EXPECT_GT(params, 11000000);
  EXPECT_EQ(j["inputs"][0]["shape"][1], 3);
  EXPECT_TRUE(j["inputs"][0]["shape"][0].is_string());
  EXPECT_EQ(j["op_counts"]["Conv"], 20);
}
