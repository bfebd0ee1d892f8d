// SmoothQuant on small models built in code: the channel maxima pass, the factors' rule, and the
// three ways the division lands (LayerNorm scale, a spelled-out affine Mul/Add, an inserted
// Mul). Each smoothed model must compute what the original does (relative L2 <= 1e-5).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "calib_test_util.h"
#include "ptq/calibration.h"
#include "ptq/ir/builders.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using ptq::testing::output_node;
using testing::random_tensor;
using testing::TempDir;

constexpr int64_t kChannels = 8;

ir::Model empty_model(const std::string& name, ir::Shape input) {
  ir::Model m;
  m.ir_version = 8;
  m.set_opset("", 17);
  m.graph.name = name;
  std::vector<ir::Dim> dims{ir::Dim::symbol("N")};
  for (size_t d = 1; d < input.size(); ++d) dims.push_back(ir::Dim::of(input[d]));
  m.graph.inputs.push_back({"x", {ir::DType::kFloat32, dims, {}}, {}});
  return m;
}

void add_output(ir::Model& m, const std::string& name) {
  m.graph.outputs.push_back({name, {ir::DType::kFloat32, {}, {}}, {}});
}

// A LayerNorm whose gamma has two outlier channels, as trained language models have.
void add_layernorm(ir::Model& m, const std::string& in, const std::string& out) {
  ir::Tensor gamma = random_tensor({kChannels}, 11, 0.3);
  gamma.data<float>()[1] = 40.0f;
  gamma.data<float>()[5] = -25.0f;
  m.graph.set_initializer("ln.scale", std::move(gamma));
  m.graph.set_initializer("ln.bias", random_tensor({kChannels}, 12, 0.1));
  m.graph.nodes.push_back(
      output_node("LayerNormalization", {in, "ln.scale", "ln.bias"}, {out}));
}

//   x[N,6,8] ─► LayerNormalization ─► h ─┬─► MatMul(Wq) ─► q
//                                        ├─► MatMul(Wk) ─► k
//                                        └─► MatMul(Wv) ─► v
ir::Model qkv_model() {
  ir::Model m = empty_model("qkv", {1, 6, kChannels});
  add_layernorm(m, "x", "h");
  uint64_t seed = 20;
  for (const char* out : {"q", "k", "v"}) {
    const std::string w = std::string("W") + out;
    m.graph.set_initializer(w, random_tensor({kChannels, kChannels}, seed++, 0.5));
    m.graph.nodes.push_back(output_node("MatMul", {"h", w}, {out}));
    add_output(m, out);
  }
  return m;
}

//   x[N,6,8] ─► LayerNormalization ─► h ─► MatMul(W) ─► m ─► Add(m, h) ─► y
//                                     └──────────────────────────┘
ir::Model residual_model() {
  ir::Model m = empty_model("post_norm", {1, 6, kChannels});
  add_layernorm(m, "x", "h");
  m.graph.set_initializer("W", random_tensor({kChannels, kChannels}, 30, 0.5));
  m.graph.nodes.push_back(output_node("MatMul", {"h", "W"}, {"m"}));
  m.graph.nodes.push_back(output_node("Add", {"m", "h"}, {"y"}));
  add_output(m, "y");
  return m;
}

//   x[N,8] ─► Mul(g) ─► p ─► Add(b) ─► h ─► Gemm(W[4,8], C, transB=1) ─► y
ir::Model affine_gemm_model() {
  ir::Model m = empty_model("affine", {1, kChannels});
  m.graph.set_initializer("g", ir::make_tensor<float>({kChannels}, {1.0f, 0.8f, 1.2f, 0.9f, 1.1f,
                                                                     1.05f, 0.95f, 0.85f}));
  m.graph.set_initializer("b", random_tensor({kChannels}, 41, 0.2));
  m.graph.set_initializer("W", random_tensor({4, kChannels}, 42, 0.5));
  m.graph.set_initializer("C", random_tensor({4}, 43, 0.1));
  m.graph.nodes.push_back(output_node("Mul", {"x", "g"}, {"p"}));
  m.graph.nodes.push_back(output_node("Add", {"p", "b"}, {"h"}));
  ir::Node gemm = output_node("Gemm", {"h", "W", "C"}, {"y"});
  gemm.set_attr(ir::int_attr("transB", 1));
  m.graph.nodes.push_back(std::move(gemm));
  add_output(m, "y");
  return m;
}

// Samples of `shape`; with `outlier`, channel 2 of the last axis is 30x the others.
std::string write_samples(const TempDir& dir, ir::Shape shape, bool outlier) {
  ir::Tensor t = random_tensor(std::move(shape), 50);
  if (outlier) {
    std::span<float> v = t.span<float>();
    for (size_t i = 2; i < v.size(); i += kChannels) v[i] *= 30.0f;
  }
  const std::string path = dir / "samples.npy";
  EXPECT_TRUE(data::save_npy(path, t).is_ok());
  return path;
}

data::Dataset open_data(const std::string& npy, const ir::Model& model) {
  data::DatasetSpec spec;
  spec.sources.push_back({"", npy});
  spec.batch = 3;
  auto ds = data::Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_TRUE(ds->bind(model.graph).is_ok());
  return std::move(*ds);
}

runtime::NamedTensors run(const ir::Model& model, const data::Dataset& dataset) {
  const auto backend = runtime::make_cpu_backend();
  auto executor = runtime::Executor::create(model, *backend);
  EXPECT_TRUE(executor.has_value()) << executor.status().message();
  runtime::NamedTensors all;
  for (int64_t b = 0; b < dataset.num_batches(); ++b) {
    auto out = (*executor)->run(*dataset.batch(b));
    EXPECT_TRUE(out.has_value()) << out.status().message();
    for (auto& o : *out) all.push_back(std::move(o));
  }
  return all;
}

double relative_l2(const runtime::NamedTensors& a, const runtime::NamedTensors& b) {
  double diff = 0.0, norm = 0.0;
  EXPECT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    std::span<const float> x = a[i].second.span<float>(), y = b[i].second.span<float>();
    for (size_t k = 0; k < x.size(); ++k) {
      diff += (double(x[k]) - y[k]) * (double(x[k]) - y[k]);
      norm += double(x[k]) * x[k];
    }
  }
  return std::sqrt(diff / norm);
}

struct Smoothed {
  ir::Model model;
  calib::SmoothQuantRecord record;
  double rel_l2 = 0.0;
};

// Smooths a copy of `original` on its samples and measures it against the original.
Smoothed smooth(const ir::Model& original, const std::string& samples, double alpha = 0.5) {
  const TempDir dir("smoothed");
  Smoothed s{testing::save_and_load(original, dir / "m.onnx"), {}, 0.0};
  const data::Dataset data = open_data(samples, s.model);
  const auto backend = runtime::make_cpu_backend();
  SmoothQuantRunOptions options;
  options.smoothing.alpha = alpha;
  auto record = smoothquant(s.model, *backend, data, options);
  EXPECT_TRUE(record.has_value()) << record.status().message();
  if (record) s.record = *record;
  s.rel_l2 = relative_l2(run(original, data), run(s.model, data));
  return s;
}

const ir::Tensor& initializer(const ir::Model& m, const std::string& name) {
  const ir::Tensor* t = m.graph.initializer(name);
  EXPECT_NE(t, nullptr) << name;
  static const ir::Tensor none;
  return t ? *t : none;
}

TEST(SmoothQuant, ChannelMaximaAreEachChannelsLargestMagnitude) {
  const TempDir dir;
  const ir::Model model = testing::save_and_load(affine_gemm_model(), dir / "m.onnx");
  const ir::Tensor samples = random_tensor({7, kChannels}, 60);
  ASSERT_TRUE(data::save_npy(dir / "s.npy", samples).is_ok());
  const data::Dataset data = open_data(dir / "s.npy", model);  // batches of 3, 3, 1
  const auto backend = runtime::make_cpu_backend();
  auto executor = runtime::Executor::create(model, *backend);
  ASSERT_TRUE(executor.has_value());
  const std::vector<std::string> tensors = {"h"};
  auto maxima = channel_maxima(**executor, data, tensors);
  ASSERT_TRUE(maxima.has_value()) << maxima.status().message();
  std::vector<double> expected(kChannels, 0.0);
  const float* g = initializer(model, "g").data<float>();
  const float* b = initializer(model, "b").data<float>();
  for (int64_t i = 0; i < samples.size(); ++i) {
    const auto c = static_cast<size_t>(i % kChannels);
    const double h = double(samples.data<float>()[i]) * g[c] + b[c];
    expected[c] = std::max(expected[c], std::fabs(h));
  }
  const std::vector<double>& got = maxima->at("h");
  ASSERT_EQ(got.size(), expected.size());
  for (size_t c = 0; c < got.size(); ++c) EXPECT_FLOAT_EQ(float(got[c]), float(expected[c])) << c;
}

TEST(SmoothQuant, OneFactorPerChannelForQkvFoldedIntoTheLayerNorm) {
  const TempDir dir;
  const ir::Model original = testing::save_and_load(qkv_model(), dir / "m.onnx");
  const std::string samples = write_samples(dir, {5, 6, kChannels}, false);
  const Smoothed s = smooth(original, samples);
  ASSERT_EQ(s.record.factors.size(), 1u);
  const std::vector<double>& f = s.record.factors.at("h");
  ASSERT_EQ(f.size(), static_cast<size_t>(kChannels));
  EXPECT_EQ(s.model.graph.nodes.size(), original.graph.nodes.size());  // nothing inserted
  for (size_t j = 0; j < f.size(); ++j) {
    SCOPED_TRACE(j);
    EXPECT_FLOAT_EQ(initializer(s.model, "ln.scale").data<float>()[j],
                    float(initializer(original, "ln.scale").data<float>()[j] * (1.0 / f[j])));
    for (const char* w : {"Wq", "Wk", "Wv"}) {  // row j of every weight times the same s_j
      EXPECT_FLOAT_EQ(initializer(s.model, w).data<float>()[j * kChannels],
                      float(initializer(original, w).data<float>()[j * kChannels] * f[j]));
    }
  }
  // The outlier channels are divided the most.
  EXPECT_GT(f[1], 2.0 * *std::min_element(f.begin(), f.end()));
  EXPECT_LE(s.rel_l2, 1e-5);
}

TEST(SmoothQuant, FactorsFollowThePapersFormulaWithTheLargestWeightOfAllReaders) {
  const ir::Model model = qkv_model();
  std::vector<double> x = {1, 40, 2, 1, 1, 25, 1, 0};  // channel 7 never seen: factor 1
  auto record = planner::smoothquant_factors(model, {{"h", x}}, {.alpha = 0.75});
  ASSERT_TRUE(record.has_value()) << record.status().message();
  EXPECT_EQ(record->alpha, 0.75);
  const std::vector<double>& s = record->factors.at("h");
  for (size_t j = 0; j < x.size(); ++j) {
    double w = 0.0;
    for (const char* name : {"Wq", "Wk", "Wv"}) {
      const float* row = initializer(model, name).data<float>() + j * kChannels;
      for (int64_t n = 0; n < kChannels; ++n) w = std::max(w, std::fabs(double(row[n])));
    }
    const double expected = x[j] == 0.0 ? 1.0 : std::pow(x[j], 0.75) / std::pow(w, 0.25);
    EXPECT_DOUBLE_EQ(s[j], expected) << j;
  }
  // No channel beyond 8x the median: nothing to smooth.
  auto flat = planner::smoothquant_factors(model, {{"h", {1, 7, 2, 1, 1, 3, 1, 1}}}, {});
  ASSERT_TRUE(flat.has_value());
  EXPECT_TRUE(flat->factors.empty());
}

TEST(SmoothQuant, InsertsAMulWhereTheTensorHasOtherReaders) {
  const TempDir dir;
  const ir::Model original = testing::save_and_load(residual_model(), dir / "m.onnx");
  const Smoothed s = smooth(original, write_samples(dir, {5, 6, kChannels}, false));
  ASSERT_EQ(s.record.factors.count("h"), 1u);
  ASSERT_EQ(s.model.graph.nodes.size(), original.graph.nodes.size() + 1);
  const ir::Node& mul = s.model.graph.nodes[1];  // before the MatMul, after the LayerNorm
  EXPECT_EQ(mul.op_type, "Mul");
  EXPECT_EQ(mul.inputs[0], "h");
  EXPECT_EQ(s.model.graph.nodes[2].inputs[0], mul.outputs[0]);  // the MatMul reads X / s
  EXPECT_EQ(s.model.graph.nodes[3].inputs[1], "h");             // the residual does not
  EXPECT_EQ(initializer(s.model, "ln.scale").span<float>()[1],
            initializer(original, "ln.scale").span<float>()[1]);
  EXPECT_LE(s.rel_l2, 1e-5);
}

TEST(SmoothQuant, FoldsIntoASpelledOutAffineBeforeATransposedGemm) {
  const TempDir dir;
  const ir::Model original = testing::save_and_load(affine_gemm_model(), dir / "m.onnx");
  const Smoothed s = smooth(original, write_samples(dir, {9, kChannels}, true), 1.0);
  ASSERT_EQ(s.record.factors.count("h"), 1u);
  const std::vector<double>& f = s.record.factors.at("h");
  EXPECT_EQ(s.model.graph.nodes.size(), original.graph.nodes.size());
  for (size_t j = 0; j < f.size(); ++j) {
    SCOPED_TRACE(j);
    for (const char* v : {"g", "b"}) {
      EXPECT_FLOAT_EQ(initializer(s.model, v).data<float>()[j],
                      float(initializer(original, v).data<float>()[j] * (1.0 / f[j])));
    }
    // W is [4, 8] (transB): column j scales.
    EXPECT_FLOAT_EQ(initializer(s.model, "W").data<float>()[kChannels + j],
                    float(initializer(original, "W").data<float>()[kChannels + j] * f[j]));
  }
  EXPECT_LE(s.rel_l2, 1e-5);
}

TEST(SmoothQuant, NoOutlierLeavesTheModelAlone) {
  const TempDir dir;
  const ir::Model original = testing::save_and_load(affine_gemm_model(), dir / "m.onnx");
  const Smoothed s = smooth(original, write_samples(dir, {9, kChannels}, false));
  EXPECT_TRUE(s.record.factors.empty());
  EXPECT_EQ(onnx::graph_hash(s.model), onnx::graph_hash(original));
}

TEST(SmoothQuant, RefusesAlphaOutsideZeroToOne) {
  for (double alpha : {-0.1, 1.5, std::nan("")}) {
    const planner::SmoothQuantOptions o{.alpha = alpha};
    const Status s = o.validate();
    EXPECT_EQ(s.code(), StatusCode::kUsage) << alpha;
    EXPECT_NE(s.message().find("alpha must be in [0, 1]"), std::string::npos) << s.message();
  }
  EXPECT_TRUE(planner::SmoothQuantOptions{.alpha = 0.0}.validate().is_ok());
  EXPECT_TRUE(planner::SmoothQuantOptions{.alpha = 1.0}.validate().is_ok());
  EXPECT_FALSE(planner::SmoothQuantOptions{.outlier_ratio = 0.5}.validate().is_ok());
}

TEST(SmoothQuant, RefusesFactorsThatDoNotFitTheModel) {
  ir::Model model = qkv_model();
  const Status unknown = planner::apply_smoothquant(model, {.alpha = 0.5, .factors = {{"q", {1}}}});
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidInput);
  EXPECT_NE(unknown.message().find("'q': no MatMul or Gemm"), std::string::npos);
  const Status count =
      planner::apply_smoothquant(model, {.alpha = 0.5, .factors = {{"h", {1, 2}}}});
  EXPECT_NE(count.message().find("2 factors for 8 channels"), std::string::npos);
  EXPECT_EQ(onnx::graph_hash(model), onnx::graph_hash(qkv_model()));  // nothing changed
}

}  // namespace
}  // namespace ptq::calibration
