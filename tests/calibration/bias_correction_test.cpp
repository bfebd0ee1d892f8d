// Bias correction (calibration::measure_bias_corrections, applied by planner::apply) on a small
// conv built in code, and the quantize settings a cache records (record/adopt, JSON round trip).
//
//   x[N,16,6,6] ──► Conv(W[8,16,3,3], pads 1, no bias) ──► y
#include <cmath>

#include <gtest/gtest.h>

#include "calib_test_util.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/ir/builders.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using testing::TempDir;

constexpr int64_t kIn = 16, kOut = 8, kSize = 6, kSamples = 12;

ir::Model conv_model() {
  ir::Model m;
  m.ir_version = 8;
  m.set_opset("", 13);
  ir::Graph& g = m.graph;
  const std::vector<ir::Dim> in{ir::Dim::symbol("N"), ir::Dim::of(kIn), ir::Dim::of(kSize),
                                ir::Dim::of(kSize)};
  const std::vector<ir::Dim> out{ir::Dim::symbol("N"), ir::Dim::of(kOut), ir::Dim::of(kSize),
                                 ir::Dim::of(kSize)};
  g.inputs.push_back({"x", {ir::DType::kFloat32, in, {}}, {}});
  g.outputs.push_back({"y", {ir::DType::kFloat32, out, {}}, {}});
  ir::Tensor w = testing::random_tensor({kOut, kIn, 3, 3}, 5, 0.2);
  w.data<float>()[7] = 3.0f;  // an outlier: per-tensor scales round the other weights coarsely
  g.set_initializer("W", std::move(w));
  ir::Node conv = ptq::testing::output_node("Conv", {"x", "W"}, {"y"});
  conv.attributes.push_back(ir::ints_attr("pads", {1, 1, 1, 1}));
  g.nodes.push_back(std::move(conv));
  return m;
}

// Non-negative inputs (post-ReLU-like): their mean is not zero, so weight error shifts the mean.
ir::Tensor samples() {
  ir::Tensor t = testing::random_tensor({kSamples, kIn, kSize, kSize}, 9);
  for (float& v : t.span<float>()) v = std::fabs(v);
  return t;
}

struct Fixture {
  TempDir dir;
  ir::Model model = conv_model();
  ir::Tensor x = samples();
  data::Dataset data = open();
  calib::CalibrationTable table = calibrate_minmax();

  data::Dataset open() {
    const std::string path = dir / "x.npy";
    EXPECT_TRUE(data::save_npy(path, x).is_ok());
    data::DatasetSpec spec;
    spec.sources.push_back({"", path});
    spec.batch = 5;  // a short last batch too
    auto ds = data::Dataset::open(spec);
    EXPECT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_TRUE(ds->bind(model.graph).is_ok());
    return std::move(*ds);
  }
  calib::CalibrationTable calibrate_minmax() {
    auto cpu = runtime::make_cpu_backend();
    auto exec = runtime::Executor::create(model, *cpu, {});
    EXPECT_TRUE(exec.has_value());
    CalibrationOptions o;
    o.method = {.name = "minmax"};
    auto t = calibrate(model, **exec, data, o);
    EXPECT_TRUE(t.has_value()) << t.status().message();
    return std::move(*t);
  }
  planner::PlanOptions options(bool per_tensor) const {
    planner::PlanOptions p;
    p.per_tensor_weights = per_tensor;
    return p;
  }
  std::vector<double> measure(bool per_tensor) {
    auto c = measure_bias_corrections(model, table, options(per_tensor), data, 1);
    EXPECT_TRUE(c.has_value()) << c.status().message();
    EXPECT_EQ(c->size(), 1u);
    return c->begin()->second;
  }
};

// The correction in float64 from the definition: W quantized symmetric int8 (scale max|W|/127
// per output channel or per tensor, round half to even), then the mean over samples and
// positions of sum (Wq - W) * x over the zero-padded 3x3 window.
std::vector<double> reference(const ir::Tensor& wt, const ir::Tensor& x, bool per_tensor) {
  const float* w = wt.data<float>();
  const int64_t per_out = kIn * 9;
  std::vector<double> dw(static_cast<size_t>(kOut * per_out));
  double all = 0.0;
  for (int64_t i = 0; i < kOut * per_out; ++i) all = std::max(all, std::fabs(double{w[i]}));
  for (int64_t o = 0; o < kOut; ++o) {
    double amax = all;
    if (!per_tensor) {
      amax = 0.0;
      for (int64_t i = 0; i < per_out; ++i) {
        amax = std::max(amax, std::fabs(double{w[o * per_out + i]}));
      }
    }
    const float scale = static_cast<float>(amax / 127.0);
    for (int64_t i = o * per_out; i < (o + 1) * per_out; ++i) {
      const double q = std::nearbyint(static_cast<double>(w[i]) / scale);
      dw[static_cast<size_t>(i)] = static_cast<double>(static_cast<float>(q) * scale) - w[i];
    }
  }
  std::vector<double> mean(kOut, 0.0);
  const float* xs = x.data<float>();
  for (int64_t n = 0; n < kSamples; ++n) {
    for (int64_t o = 0; o < kOut; ++o) {
      for (int64_t h = 0; h < kSize; ++h) {
        for (int64_t v = 0; v < kSize; ++v) {
          for (int64_t c = 0; c < kIn; ++c) {
            for (int64_t kh = 0; kh < 3; ++kh) {
              for (int64_t kw = 0; kw < 3; ++kw) {
                const int64_t ih = h + kh - 1, iw = v + kw - 1;
                if (ih < 0 || iw < 0 || ih >= kSize || iw >= kSize) continue;
                mean[o] += dw[((o * kIn + c) * 3 + kh) * 3 + kw] *
                           xs[((n * kIn + c) * kSize + ih) * kSize + iw];
              }
            }
          }
        }
      }
    }
  }
  for (double& m : mean) m /= static_cast<double>(kSamples * kSize * kSize);
  return mean;
}

TEST(BiasCorrection, EqualsTheFloat64Definition) {
  Fixture f;
  for (bool per_tensor : {false, true}) {
    const std::vector<double> got = f.measure(per_tensor);
    const std::vector<double> want = reference(*f.model.graph.initializer("W"), f.x, per_tensor);
    ASSERT_EQ(got.size(), want.size());
    double largest = 0.0;
    for (size_t o = 0; o < got.size(); ++o) {
      EXPECT_NEAR(got[o], want[o], 1e-5 * std::fabs(want[o]) + 1e-6) << "channel " << o;
      largest = std::max(largest, std::fabs(want[o]));
    }
    EXPECT_GT(largest, 1e-3) << "the test model should have a visible shift";
  }
}

// Per-channel mean of (quantized model - float model) over the samples.
std::vector<double> mean_error(const ir::Model& q, const ir::Model& fp, const ir::Tensor& x) {
  auto cpu = runtime::make_cpu_backend();
  std::vector<double> err(kOut, 0.0);
  for (int sign : {1, -1}) {
    auto exec = runtime::Executor::create(sign > 0 ? q : fp, *cpu, {});
    EXPECT_TRUE(exec.has_value()) << exec.status().message();
    auto out = (*exec)->run({{"x", x.view()}});
    EXPECT_TRUE(out.has_value()) << out.status().message();
    const float* y = (*out)[0].second.data<float>();
    for (int64_t i = 0; i < (*out)[0].second.size(); ++i) {
      err[static_cast<size_t>((i / (kSize * kSize)) % kOut)] += sign * double{y[i]};
    }
  }
  for (double& e : err) e /= static_cast<double>(kSamples * kSize * kSize);
  return err;
}

TEST(BiasCorrection, ShrinksThePerChannelMeanError) {
  Fixture f;
  for (bool per_tensor : {false, true}) {
    planner::PlanOptions p = f.options(per_tensor);
    ir::Model plain = f.model;
    auto r0 = planner::quantize(plain, f.table, p);
    ASSERT_TRUE(r0.has_value()) << r0.status().message();
    EXPECT_EQ(r0->corrected_biases, 0);
    auto c = measure_bias_corrections(f.model, f.table, p, f.data, 1);
    ASSERT_TRUE(c.has_value()) << c.status().message();
    p.bias_corrections = *c;
    ir::Model corrected = f.model;
    auto r1 = planner::quantize(corrected, f.table, p);
    ASSERT_TRUE(r1.has_value()) << r1.status().message();
    EXPECT_EQ(r1->corrected_biases, 1);  // the conv had none: one was added
    ASSERT_EQ(corrected.graph.nodes.back().inputs.size(), 3u);
    double before = 0.0, after = 0.0;
    const std::vector<double> e0 = mean_error(plain, f.model, f.x);
    const std::vector<double> e1 = mean_error(corrected, f.model, f.x);
    for (int64_t o = 0; o < kOut; ++o) {
      before += std::fabs(e0[o]);
      after += std::fabs(e1[o]);
    }
    EXPECT_LT(after, 0.5 * before) << (per_tensor ? "per-tensor" : "per-channel");
  }
}

// A bias read through an Identity of a constant (exporters share equal constants so) is
// corrected: the conv reads a fresh corrected initializer.
TEST(BiasCorrection, BiasBehindAnIdentity) {
  Fixture f;
  ir::Model m = f.model;
  m.graph.set_initializer("B0", testing::random_tensor({kOut}, 3, 0.1));
  m.graph.nodes.insert(m.graph.nodes.begin(), ptq::testing::output_node("Identity", {"B0"}, {"B"}));
  m.graph.nodes.back().inputs.push_back("B");
  planner::PlanOptions p;
  auto c = measure_bias_corrections(m, f.table, p, f.data, 1);
  ASSERT_TRUE(c.has_value()) << c.status().message();
  p.bias_corrections = *c;
  auto r = planner::quantize(m, f.table, p);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->corrected_biases, 1);
  const ir::Node& conv = m.graph.nodes.back();
  ASSERT_EQ(conv.op_type, "Conv");
  const ir::Tensor* b = m.graph.initializer(conv.inputs[2]);
  ASSERT_NE(b, nullptr) << conv.inputs[2];
  const ir::Tensor* b0 = m.graph.initializer("B0");
  ASSERT_NE(b0, nullptr);
  const std::vector<double>& d = c->begin()->second;
  for (int64_t o = 0; o < kOut; ++o) {
    EXPECT_FLOAT_EQ(b->data<float>()[o], static_cast<float>(b0->data<float>()[o] - d[o]));
  }
}

TEST(QuantizeSettings, RecordedInTheCacheAndAdopted) {
  Fixture f;
  QuantizeSettings made;
  made.plan.per_tensor_weights = true;
  made.plan.exclude_nodes = {"a", "b.*"};
  made.bias_correction = true;
  calib::CalibrationTable t = f.table;
  t.options["smoothquant"] = "0.5";  // another option's key is kept
  record_settings(made, t);
  t.bias_corrections = {{"y_node", {0.25, -1e-9, 3.0}}};
  auto back = calib::parse_json_cache(calib::json_cache_string(t), "c.json");
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->options, t.options);
  EXPECT_EQ(back->options.at("smoothquant"), "0.5");
  EXPECT_EQ(back->bias_corrections, t.bias_corrections);
  EXPECT_EQ(calib::json_cache_string(*back), calib::json_cache_string(t));

  QuantizeSettings taken;  // nothing given: everything recorded is adopted
  auto w = adopt_settings(*back, "c.json", {}, false, taken);
  ASSERT_TRUE(w.has_value()) << w.status().message();
  EXPECT_TRUE(taken.plan.per_tensor_weights);
  EXPECT_TRUE(taken.bias_correction);
  EXPECT_EQ(taken.plan.exclude_nodes, made.plan.exclude_nodes);

  QuantizeSettings other;  // --target ort given, the cache says tensorrt: the given one wins
  other.plan.target = planner::Target::kOrt;
  auto wins = adopt_settings(*back, "c.json", {"--target"}, false, other);
  ASSERT_TRUE(wins.has_value()) << wins.status().message();
  EXPECT_TRUE(wins->empty());
  EXPECT_EQ(other.plan.target, planner::Target::kOrt);
  EXPECT_TRUE(other.plan.per_tensor_weights);  // not given: the cache's

  // Per-channel weights given where the corrections were measured per tensor: refused.
  QuantizeSettings per_channel;
  auto refused = adopt_settings(*back, "c.json", {"--per-tensor-weights"}, false, per_channel);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(refused.status().message().find("--per-tensor-weights"), std::string::npos);
  EXPECT_NE(refused.status().message().find("c.json"), std::string::npos);
  auto forced = adopt_settings(*back, "c.json", {"--per-tensor-weights"}, true, per_channel);
  ASSERT_TRUE(forced.has_value()) << forced.status().message();
  EXPECT_EQ(forced->size(), 1u);
  EXPECT_FALSE(per_channel.plan.per_tensor_weights);
}

}  // namespace
}  // namespace ptq::calibration
