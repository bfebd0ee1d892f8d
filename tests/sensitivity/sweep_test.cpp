// Sensitivity sweeps on a synthetic CNN whose second conv reads an activation with one channel
// ~1000x larger than the others (per-tensor INT8 then rounds the other channels away): that
// unit must rank first in both modes. Prefix reuse must give the same metrics as whole runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "ptq/calibration.h"
#include "ptq/data.h"
#include "ptq/sensitivity.h"

namespace ptq::sensitivity {
namespace {

namespace fs = std::filesystem;

ir::Tensor random_tensor(ir::Shape shape, double stddev, std::mt19937& gen) {
  ir::Tensor t(ir::DType::kFloat32, std::move(shape));
  std::normal_distribution<float> d(0.0f, static_cast<float>(stddev));
  for (float& v : t.span<float>()) v = d(gen);
  return t;
}

ir::Node node(std::string name, std::string op, std::vector<std::string> in, std::string out) {
  ir::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  return n;
}

ir::Node conv(const std::string& name, const std::string& in, const std::string& out) {
  ir::Node n = node(name, "Conv", {in, name + ".w", name + ".b"}, out);
  ir::Attribute pads;
  pads.name = "pads";
  pads.type = ir::AttrType::kInts;
  pads.ints = {1, 1, 1, 1};
  n.set_attr(pads);
  return n;
}

// x[N,16,8,8] -> convA -> Relu -> convB -> Relu -> convC -> Relu -> GAP -> Flatten -> fc -> y[N,10]
ir::Model outlier_model() {
  std::mt19937 gen(7);
  ir::Model m;
  m.set_opset("", 13);
  ir::Graph& g = m.graph;
  g.name = "outlier";
  ir::TypeInfo in_type{ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(16), ir::Dim::of(8), ir::Dim::of(8)}, ""};
  g.inputs.push_back({"x", in_type, ""});
  ir::TypeInfo out_type{ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(10)}, ""};
  g.outputs.push_back({"y", out_type, ""});
  const double s = std::sqrt(2.0 / (16 * 9));
  for (const char* c : {"convA", "convB", "convC"}) {
    g.set_initializer(std::string(c) + ".w", random_tensor({16, 16, 3, 3}, s, gen));
    g.set_initializer(std::string(c) + ".b", random_tensor({16}, 0.1, gen));
  }
  // The outlier channel: convA's output channel 0 is 1000x larger; convB reads it 1000x weaker,
  // so the float network is unaffected but convB's per-tensor input scale is 1000x too coarse.
  ir::Tensor* wa = g.mutable_initializer("convA.w");
  for (int64_t i = 0; i < 16 * 9; ++i) wa->data<float>()[i] *= 1000.0f;
  ir::Tensor* wb = g.mutable_initializer("convB.w");
  for (int64_t o = 0; o < 16; ++o) {
    for (int64_t k = 0; k < 9; ++k) wb->data<float>()[o * 16 * 9 + k] *= 1e-3f;
  }
  g.set_initializer("fc.w", random_tensor({16, 10}, 0.3, gen));
  g.set_initializer("fc.b", random_tensor({10}, 0.1, gen));
  g.nodes.push_back(conv("convA", "x", "a"));
  g.nodes.push_back(node("reluA", "Relu", {"a"}, "ar"));
  g.nodes.push_back(conv("convB", "ar", "b"));
  g.nodes.push_back(node("reluB", "Relu", {"b"}, "br"));
  g.nodes.push_back(conv("convC", "br", "c"));
  g.nodes.push_back(node("reluC", "Relu", {"c"}, "cr"));
  g.nodes.push_back(node("gap", "GlobalAveragePool", {"cr"}, "p"));
  g.nodes.push_back(node("flat", "Flatten", {"p"}, "f"));
  g.nodes.push_back(node("fc", "MatMul", {"f", "fc.w"}, "mm"));
  g.nodes.push_back(node("fc_bias", "Add", {"mm", "fc.b"}, "y"));
  return m;
}

class SweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = outlier_model();
    dir_ = fs::temp_directory_path() / ("ptq_sens_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::mt19937 gen(11);
    ASSERT_TRUE(data::save_npy(dir_ / "x.npy", random_tensor({48, 16, 8, 8}, 1.0, gen)).is_ok());
    data::DatasetSpec spec;
    spec.sources = {{"", dir_ / "x.npy"}};
    spec.default_batch = 16;
    auto ds = data::Dataset::open(spec);
    ASSERT_TRUE(ds) << ds.status().message();
    data_ = std::make_unique<data::Dataset>(std::move(*ds));
    ASSERT_TRUE(data_->bind(model_.graph).is_ok());
    backend_ = runtime::make_cpu_backend();
    auto exec = runtime::Executor::create(model_, *backend_);
    ASSERT_TRUE(exec) << exec.status().message();
    calibration::CalibrationOptions co;
    co.method.name = "minmax";
    auto table = calibration::calibrate(model_, **exec, *data_, co);
    ASSERT_TRUE(table) << table.status().message();
    table_ = std::move(*table);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Evaluator evaluator(Metric metric) {
    auto ev = Evaluator::create(model_, *backend_, *data_, nullptr, {.metric = metric, .threads = 1});
    EXPECT_TRUE(ev) << ev.status().message();
    return std::move(*ev);
  }

  SweepResult run(const Evaluator& ev, Mode mode, bool reuse, int parallel = 1) {
    SweepOptions o;
    o.mode = mode;
    o.reuse = reuse;
    o.parallel = parallel;
    auto r = sweep(table_, ev, o);
    EXPECT_TRUE(r) << r.status().message();
    return r ? std::move(*r) : SweepResult{};
  }

  ir::Model model_;
  fs::path dir_;
  std::unique_ptr<data::Dataset> data_;
  std::unique_ptr<runtime::Backend> backend_;
  calib::CalibrationTable table_;
};

TEST_F(SweepTest, OutlierLayerRanksFirstInBothModes) {
  for (Metric metric : {Metric::kSqnr, Metric::kCosine, Metric::kMse}) {
    Evaluator ev = evaluator(metric);
    for (Mode mode : {Mode::kOnly, Mode::kAllBut}) {
      SweepResult r = run(ev, mode, true);
      ASSERT_GE(r.layers.size(), 4u);
      EXPECT_EQ(r.layers.front().name, "convB")
          << metric_name(metric) << " " << mode_name(mode) << ": first is " << r.layers.front().name;
    }
  }
}

TEST_F(SweepTest, EveryUnitIsSweptOnce) {
  Evaluator ev = evaluator(Metric::kSqnr);
  auto plan = planner::plan(model_, table_, {});
  ASSERT_TRUE(plan);
  SweepResult r = run(ev, Mode::kOnly, true);
  std::vector<std::string> swept, units;
  for (const auto& l : r.layers) swept.push_back(l.name);
  for (const auto& u : plan->units) units.push_back(u.name);
  std::sort(swept.begin(), swept.end());
  std::sort(units.begin(), units.end());
  EXPECT_EQ(swept, units);
  EXPECT_TRUE(std::find(units.begin(), units.end(), "convB") != units.end());
}

// The cut must not change a single value: scores with reuse equal whole-model runs.
TEST_F(SweepTest, PrefixReuseMatchesWholeRuns) {
  for (Metric metric : {Metric::kSqnr, Metric::kMse, Metric::kTop1}) {
    Evaluator ev = evaluator(metric);
    for (Mode mode : {Mode::kOnly, Mode::kAllBut}) {
      SweepResult naive = run(ev, mode, false);
      SweepResult reused = run(ev, mode, true, 2);
      ASSERT_EQ(naive.layers.size(), reused.layers.size());
      for (size_t i = 0; i < naive.layers.size(); ++i) {
        EXPECT_EQ(naive.layers[i].name, reused.layers[i].name);
        EXPECT_DOUBLE_EQ(naive.layers[i].score.value, reused.layers[i].score.value)
            << naive.layers[i].name << " " << mode_name(mode);
      }
      // Reuse runs fewer nodes for a unit late in the graph.
      int64_t naive_nodes = 0, cut_nodes = 0;
      for (const auto& l : naive.layers) naive_nodes += l.subgraph_nodes;
      for (const auto& l : reused.layers) cut_nodes += l.subgraph_nodes;
      EXPECT_LT(cut_nodes, naive_nodes);
    }
  }
}

// Independent check of one unit: the sweep's score equals a whole evaluation of that variant.
TEST_F(SweepTest, SweepScoreEqualsWholeVariantScore) {
  Evaluator ev = evaluator(Metric::kSqnr);
  SweepResult r = run(ev, Mode::kOnly, true);
  for (const auto& l : r.layers) {
    planner::PlanOptions p;
    p.only_units = {l.name};
    ir::Model m = model_;
    ASSERT_TRUE(planner::quantize(m, table_, p));
    auto s = ev.evaluate(m);
    ASSERT_TRUE(s);
    EXPECT_DOUBLE_EQ(s->value, l.score.value) << l.name;
  }
  EXPECT_TRUE(std::isinf(ev.float_score().value));
}

TEST_F(SweepTest, SelectionMeetsSqnrTarget) {
  Evaluator ev = evaluator(Metric::kSqnr);
  SweepResult r = run(ev, Mode::kOnly, true);
  const double target = r.quantized_score.value + 10.0;  // needs at least convB float
  auto sel = select(model_, table_, ev, {}, r.layers, target, -1);
  ASSERT_TRUE(sel) << sel.status().message();
  EXPECT_TRUE(sel->met);
  ASSERT_FALSE(sel->float_set.empty());
  EXPECT_EQ(sel->float_set.front(), "convB");
  EXPECT_GE(sel->score.value, target);
  EXPECT_EQ(sel->trail.size(), sel->float_set.size() + 1);
  // Re-evaluating the partial model independently gives the reported final metric.
  auto m = partial_model(model_, table_, {}, sel->float_set);
  ASSERT_TRUE(m);
  auto s = ev.evaluate(*m);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->value, sel->score.value);
  // A cap of zero float layers stops at the fully quantized model.
  auto capped = select(model_, table_, ev, {}, r.layers, target, 0);
  ASSERT_TRUE(capped);
  EXPECT_TRUE(capped->float_set.empty());
  EXPECT_FALSE(capped->met);
}

TEST(SensitivityNames, ParseAndRoundTrip) {
  for (const char* n : {"top1", "sqnr", "cosine", "mse"}) {
    auto m = parse_metric(n);
    ASSERT_TRUE(m);
    EXPECT_EQ(metric_name(*m), n);
  }
  EXPECT_FALSE(parse_metric("top5"));
  EXPECT_EQ(parse_mode("all-but").value(), Mode::kAllBut);
  EXPECT_FALSE(parse_mode("some"));
  EXPECT_TRUE(meets_target(Metric::kTop1, 0.905, 0.91, 0.01));
  EXPECT_FALSE(meets_target(Metric::kTop1, 0.89, 0.91, 0.01));
  EXPECT_TRUE(meets_target(Metric::kMse, 0.01, 0.0, 0.02));
}

}  // namespace
}  // namespace ptq::sensitivity
