// `ptq compare --per-tensor`, its gate (--min-sqnr, --min-cosine) and `ptq report --trace` on
// the bundled example, quantized by `ptq quantize`, through the built binary. Per-tensor figures
// are checked against SQNR and cosine this test computes itself, in float64, from both models'
// tensors captured on its own executors; the jump marker against a Q/DQ given a bad scale.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ptq/compare.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/runtime.h"
#include "quantize/quantize_test_util.h"

namespace ptq::quantize_testing {
namespace {

constexpr int kSamples = 64;

// The example's INT8 model (and a damaged copy), made once per test process.
class CompareCli : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  static const fs::path& dir() {
    if (dir_ == nullptr) dir_ = new fs::path(process_dir("compare"));
    return *dir_;
  }
  static std::string int8() {
    const fs::path out = dir() / "int8.onnx";
    if (!fs::exists(out)) {
      auto r = run_ptq({"quantize", example_model(), "--data", calib_npy(), "--samples", "32", "-o",
                        out.string(), "--quiet"});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return out.string();
  }
  static ptq::testing::PtqResult compare(const std::string& model_b,
                                         std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "compare",   example_model(),          model_b,   "--data", test_npy(),
        "--samples", std::to_string(kSamples), "--batch", "32",     "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ptq(args);
  }
  static nlohmann::json trace(const std::string& model_b) {
    auto r = compare(model_b, {"--per-tensor", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parse_json(r.out);
  }

 private:
  static inline fs::path* dir_ = nullptr;
};

// Each batch of `names`' values, copied as they are produced.
class Capture final : public runtime::Observer {
 public:
  explicit Capture(std::vector<std::string> names) : names_(std::move(names)) {}
  std::vector<std::string> wanted(const ir::Graph& /*graph*/) override { return names_; }
  Status observe(const runtime::ObservedTensor& t) override {
    seen[t.name] = ir::owned_copy(*t.host);
    return Status::ok();
  }
  std::map<std::string, ir::Tensor> seen;

 private:
  std::vector<std::string> names_;
};

struct Sums {
  double rr = 0, tt = 0, rt = 0, dd = 0;
  double sqnr_db() const { return 10.0 * std::log10(rr / dd); }
  double cosine() const { return rt / std::sqrt(rr * tt); }
};

// float64 SQNR and cosine of each (reference tensor, test value) pair over the first kSamples
// test images, on executors of this test's own.
std::vector<Sums> independent(const std::string& model_b,
                              const std::vector<std::pair<std::string, std::string>>& pairs) {
  auto a = onnx::load_model(example_model());
  auto b = onnx::load_model(model_b);
  auto images = data::load_npy(test_npy());
  EXPECT_TRUE(a && b && images);
  auto backend = runtime::make_cpu_backend();
  auto ea = runtime::Executor::create(*a, *backend);
  auto eb = runtime::Executor::create(*b, *backend);
  EXPECT_TRUE(ea && eb);
  std::vector<std::string> ref_names, test_names;
  for (const auto& [r, t] : pairs) {
    ref_names.push_back(r);
    test_names.push_back(t);
  }
  Capture ca(ref_names), cb(test_names);
  std::vector<Sums> sums(pairs.size());
  const int64_t per_image = 28 * 28;
  for (int64_t first = 0; first < kSamples; first += 32) {
    ir::Tensor batch(ir::DType::kFloat32, {32, 1, 28, 28});
    for (int64_t i = 0; i < batch.size(); ++i) {
      batch.data<float>()[i] = static_cast<float>(images->as_double(first * per_image + i));
    }
    runtime::NamedTensors in;
    in.emplace_back("input", std::move(batch));
    runtime::Observer* oa[] = {&ca};
    runtime::Observer* ob[] = {&cb};
    EXPECT_TRUE((*ea)->run(in, oa).has_value());
    EXPECT_TRUE((*eb)->run(in, ob).has_value());
    for (size_t p = 0; p < pairs.size(); ++p) {
      const ir::Tensor& r = ca.seen.at(pairs[p].first);
      const ir::Tensor& t = cb.seen.at(pairs[p].second);
      for (int64_t i = 0; i < r.size(); ++i) {
        const double x = r.as_double(i), y = t.as_double(i);
        sums[p].rr += x * x;
        sums[p].tt += y * y;
        sums[p].rt += x * y;
        sums[p].dd += (x - y) * (x - y);
      }
    }
  }
  return sums;
}

// Each traced tensor's position among the float model's node outputs (graph inputs first).
std::map<std::string, size_t> graph_positions() {
  auto m = onnx::load_model(example_model());
  EXPECT_TRUE(m.has_value());
  std::map<std::string, size_t> pos;
  for (const ir::ValueInfo& v : m->graph.inputs) pos.emplace(v.name, pos.size());
  auto order = ir::topological_order(m->graph);
  EXPECT_TRUE(order.has_value());
  for (size_t n : *order) {
    for (const std::string& o : m->graph.nodes[n].outputs) pos.emplace(o, pos.size());
  }
  return pos;
}

TEST_F(CompareCli, PerTensorFiguresMatchAnIndependentComputationInGraphOrder) {
  const nlohmann::json j = trace(int8());
  ASSERT_TRUE(j["tensors"].is_array());
  const nlohmann::json& tensors = j["tensors"];
  ASSERT_GE(tensors.size(), 10u);
  const std::map<std::string, size_t> pos = graph_positions();
  size_t last = 0;
  for (const auto& t : tensors) {
    const std::string name = t["name"].get<std::string>();
    ASSERT_TRUE(pos.count(name)) << name;
    EXPECT_GE(pos.at(name), last) << name << " out of graph order";
    last = pos.at(name);
  }
  // A dequantized tensor and a conv output computed from dequantized values.
  const nlohmann::json* dq = nullptr;
  const nlohmann::json* plain = nullptr;
  for (const auto& t : tensors) {
    if (t["dequantized"].get<bool>() && !dq) dq = &t;
    if (!t["dequantized"].get<bool>() && t["op_type"] == "Conv" && t["sqnr_db"].is_number()) {
      plain = &t;
    }
  }
  ASSERT_TRUE(dq && plain);
  EXPECT_EQ((*dq)["compared_with"], (*dq)["name"].get<std::string>() + "_DequantizeLinear_Output");
  const std::vector<Sums> sums = independent(
      int8(),
      {{(*dq)["name"], (*dq)["compared_with"]}, {(*plain)["name"], (*plain)["compared_with"]}});
  EXPECT_NEAR((*dq)["sqnr_db"].get<double>(), sums[0].sqnr_db(), 0.01);
  EXPECT_NEAR((*dq)["cosine"].get<double>(), sums[0].cosine(), 1e-6);
  EXPECT_NEAR((*plain)["sqnr_db"].get<double>(), sums[1].sqnr_db(), 0.01);
  EXPECT_NEAR((*plain)["cosine"].get<double>(), sums[1].cosine(), 1e-6);
  // The outputs as before, and the model output last among the tensors.
  EXPECT_EQ(j["outputs"][0]["name"], "logits");
  EXPECT_EQ(tensors.back()["name"], "logits");
  EXPECT_EQ(j["outputs"][0]["sqnr_db"], tensors.back()["sqnr_db"]);

  auto text = compare(int8(), {"--per-tensor"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("per tensor, in graph order"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find((*dq)["name"].get<std::string>() + " (dq)"), std::string::npos);
}

// The int8 model with one activation's scale (read by its own Q and DQ only, in the middle of
// the graph) made 50x too coarse; returns the tensor it quantizes.
std::string damage(const std::string& int8, const fs::path& out) {
  auto m = onnx::load_model(int8);
  EXPECT_TRUE(m.has_value());
  std::map<std::string, int> readers;
  for (const ir::Node& n : m->graph.nodes) {
    for (const std::string& in : n.inputs) ++readers[in];
  }
  std::vector<const ir::Node*> candidates;
  for (const ir::Node& n : m->graph.nodes) {
    if (n.op_type == "QuantizeLinear" && readers[n.inputs[1]] == 2) candidates.push_back(&n);
  }
  EXPECT_GE(candidates.size(), 3u);
  const ir::Node* q = candidates[candidates.size() / 2];
  ir::Tensor* scale = m->graph.mutable_initializer(q->inputs[1]);
  scale->data<float>()[0] *= 50.0f;
  const std::string tensor = q->inputs[0];
  EXPECT_TRUE(onnx::save_model(*m, out).is_ok());
  return tensor;
}

TEST_F(CompareCli, TheJumpMarkerLandsOnTheTensorWithABadScaleAndTheReportDrawsIt) {
  const fs::path damaged = dir() / "damaged.onnx";
  const std::string bad = damage(int8(), damaged);
  const nlohmann::json clean = trace(int8());
  const nlohmann::json j = trace(damaged.string());
  std::vector<std::string> jumps, clean_jumps;
  std::string bad_op;
  for (const auto& t : j["tensors"]) {
    if (t["jump"].get<bool>()) jumps.push_back(t["name"]);
    if (t["name"] == bad) bad_op = t["op_type"];
  }
  for (const auto& t : clean["tensors"]) {
    if (t["jump"].get<bool>()) clean_jumps.push_back(t["name"]);
  }
  EXPECT_TRUE(clean_jumps.empty()) << clean_jumps.front();
  ASSERT_EQ(jumps.size(), 1u) << clean.dump();
  EXPECT_EQ(jumps[0], bad);

  const fs::path trace_file = dir() / "trace.json";
  { std::ofstream(trace_file) << j.dump(); }
  const fs::path html = dir() / "report.html";
  auto r = run_ptq({"report", damaged.string(), "--trace", trace_file.string(), "-o", html.string(),
                    "--no-graph"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = read_file(html);
  EXPECT_NE(page.find("id=\"trace\""), std::string::npos);
  EXPECT_NE(page.find("<polyline"), std::string::npos);
  EXPECT_NE(page.find("class=\"jump\""), std::string::npos);
  EXPECT_NE(page.find(bad + " (" + bad_op + "): SQNR"), std::string::npos);  // its tooltip
  EXPECT_EQ(page.find("<script"), std::string::npos);

  { std::ofstream(trace_file) << R"({"outputs": []})"; }
  r = run_ptq({"report", damaged.string(), "--trace", trace_file.string(), "-o", html.string(),
               "--no-graph"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("expected a \"tensors\" array"), std::string::npos) << r.err;
  EXPECT_NE(read_file(html).find("id=\"trace\""), std::string::npos);  // the page is kept
}

TEST_F(CompareCli, TheGateSetsTheExitCodeAfterPrintingTheResult) {
  auto pass = compare(int8(), {"--min-sqnr", "5", "--min-cosine", "0.9"});
  EXPECT_EQ(pass.exit_code, 0) << pass.err;
  auto low_sqnr = compare(int8(), {"--min-sqnr", "200"});
  EXPECT_EQ(low_sqnr.exit_code, 3);
  EXPECT_NE(low_sqnr.out.find("logits"), std::string::npos);  // the result is printed
  EXPECT_NE(low_sqnr.err.find("output 'logits': SQNR"), std::string::npos) << low_sqnr.err;
  EXPECT_NE(low_sqnr.err.find("below --min-sqnr 200"), std::string::npos) << low_sqnr.err;
  EXPECT_EQ(std::count(low_sqnr.err.begin(), low_sqnr.err.end(), '\n'), 1) << low_sqnr.err;
  auto low_cosine = compare(int8(), {"--min-cosine", "1.5", "--json"});
  EXPECT_EQ(low_cosine.exit_code, 3);
  EXPECT_TRUE(parse_json(low_cosine.out).is_object());
  EXPECT_NE(low_cosine.err.find("output 'logits': cosine"), std::string::npos) << low_cosine.err;
  EXPECT_NE(low_cosine.err.find("below --min-cosine 1.5"), std::string::npos);
  // Tracing reads every tensor on the host: refused on Vulkan before any device starts.
  auto vulkan = compare(int8(), {"--per-tensor", "--backend", "vulkan"});
  EXPECT_EQ(vulkan.exit_code, 2);
  EXPECT_NE(vulkan.err.find("--per-tensor reads every tensor on the host"), std::string::npos)
      << vulkan.err;
}

TEST_F(CompareCli, ModelsSharingNoTensorOrTakingOtherInputsAreRefused) {
  // The float model with every value renamed: outputs still pair up by position.
  auto m = onnx::load_model(example_model());
  ASSERT_TRUE(m.has_value());
  std::map<std::string, std::string> renamed;
  for (ir::Node& n : m->graph.nodes) {
    for (std::string& o : n.outputs) o = renamed[o] = "other_" + o;
  }
  for (ir::Node& n : m->graph.nodes) {
    for (std::string& in : n.inputs) {
      if (renamed.count(in)) in = renamed[in];
    }
  }
  for (ir::ValueInfo& v : m->graph.outputs) v.name = renamed[v.name];
  m->graph.value_info.clear();
  const fs::path other = dir() / "renamed.onnx";
  ASSERT_TRUE(onnx::save_model(*m, other).is_ok());
  EXPECT_EQ(compare(other.string()).exit_code, 0);
  auto r = compare(other.string(), {"--per-tensor"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("compute no tensor of the same name"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("renamed.onnx"), std::string::npos) << r.err;

  const std::string transformer = std::string(PTQ_TEST_DATA) + "/models/transformer.onnx";
  r = compare(transformer);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("input 'input' of " + example_model() +
                       " is [batch, 1, 28, 28] but "
                       "'input' of " +
                       transformer + " is [batch, 16, 64]"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace ptq::quantize_testing
