// The flags ONNX Runtime's, ModelOpt's and trtexec's users know (aliases give the same output as
// ptqkit's own), the node selections, the log (--log-level, --log-file, -q keeping warnings),
// `--json` of calibrate and quantize read back with a JSON parser, and --target ort choosing
// the activation type for --ort-ep. On the bundled example, calibrated once on 8 samples
// (every tensor, so the cache serves either target).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/files.h"

using ptq::testing::PtqResult;
using ptq::testing::run_ptq;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

using ptq::testing::read_file;

std::string example(const std::string& file) {
  return std::string(PTQ_SOURCE_DIR) + "/examples/" + file;
}

class Flags : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("ptq_flags_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    const PtqResult r = run_ptq({"calibrate", model(), "--data", example("data/calib.npy"),
                                 "--samples", "8", "--method", "minmax", "--all-tensors", "-o",
                                 path("c.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string model() { return example("fashion_cnn.onnx"); }

  // `ptq quantize` from the shared cache into `out` with `flags`.
  static PtqResult quantize(const std::string& out, std::vector<std::string> flags) {
    std::vector<std::string> args = {"quantize", model(), "--cache", path("c.json"), "-o",
                                     path(out)};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_ptq(args);
  }
  // quantize(...) --json, parsed.
  static Json quantize_json(const std::string& out, std::vector<std::string> flags) {
    flags.push_back("--json");
    const PtqResult r = quantize(out, flags);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out);
  }

  static fs::path* dir_;
};
fs::path* Flags::dir_ = nullptr;

TEST_F(Flags, NodeAliasesWriteWhatTheOriginalFlagsWrite) {
  struct Case {
    std::vector<std::string> original, alias;
  };
  const std::string conv = "/block1/conv1/conv1.0/Conv";
  const std::vector<Case> cases = {
      {{"--exclude", conv}, {"--nodes-to-exclude", conv}},
      {{"--exclude", conv}, {"--nodes_to_exclude", conv}},
      {{"--exclude-op-types", "Gemm,Add"}, {"--op-types-to-exclude", "Gemm,Add"}},
      {{"--exclude-op-types", "Gemm"}, {"--op_types_to_exclude", "Gemm"}},
  };
  ASSERT_EQ(quantize("all.onnx", {}).exit_code, 0);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.alias[0]);
    const PtqResult a = quantize("a.onnx", c.original);
    const PtqResult b = quantize("a.onnx", c.alias);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const std::string original = read_file(path("a.onnx"));
    ASSERT_EQ(quantize("b.onnx", c.alias).exit_code, 0);
    EXPECT_EQ(read_file(path("b.onnx")), original);
    EXPECT_NE(original, read_file(path("all.onnx")));  // the flag did exclude something
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.err, b.err);
  }
}

TEST_F(Flags, CalibrationMethodAliasesCalibrateAsMinmax) {
  const auto tensors = [&](const std::vector<std::string>& method) {
    std::vector<std::string> args = {"calibrate", model(), "--data", example("data/calib.npy"),
                                     "--samples", "8", "-o", path("m.json"), "--json"};
    args.insert(args.end(), method.begin(), method.end());
    const PtqResult r = run_ptq(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Json::parse(r.out).at("tensors");
  };
  const Json minmax = tensors({"--method", "minmax"});
  ASSERT_FALSE(minmax.empty());
  EXPECT_EQ(minmax[0].at("method"), "minmax");
  EXPECT_EQ(tensors({"--calibration-method", "max"}), minmax);        // ModelOpt
  EXPECT_EQ(tensors({"--calibration_method", "max"}), minmax);        // ModelOpt's spelling
  EXPECT_EQ(tensors({"--calibration-method", "MinMax"}), minmax);     // ONNX Runtime
  const PtqResult bad = run_ptq({"calibrate", model(), "--data", example("data/calib.npy"),
                                 "--calibration-method", "Distribution", "-o", path("x.json")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "ptq: error: unknown calibration method 'Distribution' (known: entropy, minmax, mse, "
            "percentile)\n");
}

TEST_F(Flags, NodesAndOpTypesToQuantizeRestrictThePlan) {
  const Json convs = quantize_json("q1.onnx", {"--op-types-to-quantize", "Conv"});
  const Json convs_modelopt = quantize_json("q1b.onnx", {"--op_types_to_quantize", "Conv"});
  EXPECT_EQ(read_file(path("q1.onnx")), read_file(path("q1b.onnx")));
  std::set<std::string> quantized(convs.at("quantized_nodes").begin(),
                                  convs.at("quantized_nodes").end());
  EXPECT_EQ(quantized.size(), 8u);  // the nine convs but the stem (one input channel)
  for (const std::string& n : quantized) EXPECT_NE(n.find("Conv"), std::string::npos) << n;
  bool gemm_said = false;
  for (const Json& n : convs.at("float").at("nodes")) {
    if (n.at("name") == "/head/Gemm") {
      gemm_said = n.at("reason") == "op type Gemm is not among the op types to quantize";
    }
  }
  EXPECT_TRUE(gemm_said) << convs.at("float").dump();

  const Json two = quantize_json("q2.onnx", {"--nodes-to-quantize", "/block2/conv.*,/head/Gemm"});
  EXPECT_EQ(two.at("quantized_nodes"),
            Json({"/block2/conv1/conv1.0/Conv", "/block2/conv2/conv2.0/Conv", "/head/Gemm"}));

  const PtqResult none = quantize("q3.onnx", {"--nodes-to-quantize", "/block9/Conv"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.rfind("ptq: error: node to quantize '/block9/Conv' matches no node name", 0),
            0u)
      << none.err;
  EXPECT_EQ(none.err.find('\n'), none.err.size() - 1);
  EXPECT_FALSE(fs::exists(path("q3.onnx")));
}

TEST_F(Flags, LogLevelFiltersAndQuietKeepsWarnings) {
  const std::string warning =
      "ptq: warning: excluded op type 'Foo' is not in the model (did you mean 'Add', 'Conv'?)\n";
  const std::vector<std::string> foo = {"--exclude-op-types", "Foo"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), foo.begin(), foo.end());
    return quantize("l.onnx", more);
  };
  EXPECT_EQ(with({}).err, warning);
  EXPECT_EQ(with({"-q"}).err, warning);  // -q hides progress only
  const PtqResult quiet = with({"-q"});
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(with({"--log-level", "warning"}).err, warning);
  EXPECT_EQ(with({"--log-level", "error"}).err, "");
  const PtqResult logged = with({"--log-level", "error", "--log-file", path("log.txt")});
  EXPECT_EQ(logged.exit_code, 0) << logged.err;
  EXPECT_EQ(read_file(path("log.txt")), "");  // the file sees what the level shows
  with({"--log-file", path("log.txt")});
  EXPECT_EQ(read_file(path("log.txt")), warning);
  // Errors reach the log file too.
  const PtqResult failed = run_ptq({"quantize", model(), "--cache", path("missing.json"), "-o",
                                    path("l2.onnx"), "--log-file", path("err.txt")});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_EQ(read_file(path("err.txt")), failed.err);

  const PtqResult bad = with({"--log-level", "loud"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "ptq: error: unknown log level 'loud' (choose error, warning, info or debug)\n");
}

TEST_F(Flags, QuantizeJsonSaysWhatWasWrittenTheTensorsTheFloatSetAndTimes) {
  const PtqResult r = quantize("j.onnx", {"--exclude", "/head/Gemm", "--cache-out",
                                          path("j.calib.json"), "--trt-cache", path("j.cache"),
                                          "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("command"), "quantize");
  EXPECT_EQ(j.at("written"), Json({{"model", path("j.onnx")},
                                   {"cache", path("j.calib.json")},
                                   {"trt_cache", path("j.cache")}}));
  for (const char* f : {"j.onnx", "j.calib.json", "j.cache"}) EXPECT_TRUE(fs::exists(path(f)));
  EXPECT_EQ(j.at("target"), "tensorrt");
  EXPECT_EQ(j.at("activation_type"), "int8");
  EXPECT_EQ(j.at("method"), "minmax");
  EXPECT_EQ(j.at("tensors").size(), j.at("quantize_linear_nodes").get<size_t>());
  for (const Json& t : j.at("tensors")) {
    EXPECT_GT(t.at("scale").get<double>(), 0.0) << t.dump();
    EXPECT_EQ(t.at("zero_point"), 0);
    EXPECT_LE(t.at("min").get<double>(), t.at("max").get<double>());
    EXPECT_EQ(t.at("method"), "minmax");
  }
  EXPECT_EQ(j.at("float").at("nodes"),
            Json::array({{{"name", "/stem/stem.0/stem.0.0/Conv"},
                          {"op_type", "Conv"},
                          {"reason", "1 input channels < min_conv_channels 16 (float by default)"}},
                         {{"name", "/head/Gemm"},
                          {"op_type", "Gemm"},
                          {"reason", "excluded by node pattern '/head/Gemm'"}}}));
  EXPECT_EQ(j.at("float").at("tensors"), Json::array());
  const Json& s = j.at("seconds");
  for (const char* phase : {"load model", "read cache", "quantize", "write model", "total"}) {
    EXPECT_GE(s.at(phase).get<double>(), 0.0) << phase;
  }
}

TEST_F(Flags, CalibrateJsonSaysWhatWasWrittenAndTheTensors) {
  const PtqResult r = run_ptq({"calibrate", model(), "--data", example("data/calib.npy"),
                               "--samples", "8", "--method", "percentile", "-o", path("p.json"),
                               "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j.at("command"), "calibrate");
  EXPECT_EQ(j.at("written"), Json({{"cache", path("p.json")}}));
  EXPECT_EQ(j.at("method"), "percentile");
  EXPECT_EQ(j.at("samples"), 8);
  const Json cache = Json::parse(read_file(path("p.json")));
  ASSERT_EQ(j.at("tensors").size(), cache.at("tensors").size());
  for (const Json& t : j.at("tensors")) {
    EXPECT_NEAR(t.at("scale").get<double>(), t.at("amax").get<double>() / 127.0, 1e-12);
    EXPECT_LE(t.at("amax").get<double>(),
              std::max(-t.at("min").get<double>(), t.at("max").get<double>()) + 1e-12);
  }
  EXPECT_GE(j.at("seconds").at("calibrate").get<double>(), 0.0);
}

TEST_F(Flags, TargetOrtPicksTheActivationTypeForTheExecutionProvider) {
  struct Case {
    std::vector<std::string> flags;
    std::string type;
    std::string info;  // "" when nothing was chosen
  };
  const std::vector<Case> cases = {
      {{"--target", "ort"},
       "uint8",
       "ptq: info: --target ort --ort-ep cpu: uint8 activations: ONNX Runtime's x86 CPU kernels "
       "run U8S8 (uint8 activations, int8 weights) far faster than S8S8 (--activation-type "
       "overrides)\n"},
      {{"--target", "ort", "--ort-ep", "cuda"},
       "int8",
       "ptq: info: --target ort --ort-ep cuda: int8 activations: ONNX Runtime's CUDA kernels take "
       "symmetric int8 (S8S8) (--activation-type overrides)\n"},
      {{"--target", "ort", "--ort-ep", "tensorrt"},
       "int8",
       "ptq: info: --target ort --ort-ep tensorrt: int8 activations: TensorRT takes symmetric "
       "int8 only (--activation-type overrides)\n"},
      {{"--target", "ort", "--activation-type", "int8"}, "int8", ""},
      {{"--target", "ort", "--ort-ep", "cpu", "--activation-type", "int8"}, "int8", ""},
      {{}, "int8", ""},  // TensorRT: unchanged, nothing said
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.flags));
    std::vector<std::string> flags = c.flags;
    flags.push_back("--json");
    const PtqResult r = quantize("o.onnx", flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Json::parse(r.out).at("activation_type"), c.type);
    EXPECT_EQ(r.err, c.info);
  }
  const PtqResult quiet = quantize("o.onnx", {"--target", "ort", "--log-level", "warning"});
  EXPECT_EQ(quiet.err, "");
}

TEST_F(Flags, BadValuesAreOneLineErrors) {
  struct Case {
    std::vector<std::string> flags;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"--target", "ort", "--ort-ep", "rocm"},
       "ptq: error: unknown ONNX Runtime execution provider 'rocm' (choose cpu, cuda or "
       "tensorrt)\n"},
      {{"--ort-ep", "cuda"}, "ptq: error: --ort-ep applies to --target ort\n"},
      {{"--target", "ort", "--activation-type", "int4"},
       "ptq: error: unknown activation type 'int4' (choose int8 or uint8)\n"},
      {{"--activation-type", "uint8"},
       "ptq: error: uint8 activations need --target ort (TensorRT takes INT8 only)\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.err);
    const PtqResult r = quantize("bad.onnx", c.flags);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, c.err);
  }
  EXPECT_FALSE(fs::exists(path("bad.onnx")));
}

}  // namespace
