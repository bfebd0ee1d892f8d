// Sensitivity sweeps on a synthetic CNN whose second conv reads an activation with one channel
// ~1000x larger than the others (outlier_model.h): that unit must rank first in both modes.
// Prefix reuse must give the same metrics as whole runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <tuple>
#include <utility>

#include "common/thread_ranks.h"
#include "cut.h"
#include "ptq/calibration.h"
#include "ptq/data.h"
#include "ptq/sensitivity.h"
#include "outlier_model.h"

namespace ptq::sensitivity {
namespace {

namespace fs = std::filesystem;
using ptq::sensitivity::testing::outlier_model;
using ptq::testing::normal_tensor;

class SweepTest : public ::testing::Test {
 protected:
  virtual ir::Model make_model() const { return outlier_model(); }

  void SetUp() override {
    model_ = make_model();
    dir_ = fs::temp_directory_path() / ("ptq_sens_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::mt19937 gen(11);
    ASSERT_TRUE(data::save_npy(dir_ / "x.npy", normal_tensor(gen, {48, 16, 8, 8}, 1.0f)).is_ok());
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

  Evaluator evaluator(Metric metric, int threads = 1) {
    auto ev = Evaluator::create(model_, *backend_, *data_, nullptr,
                                {.metric = metric, .threads = threads});
    EXPECT_TRUE(ev) << ev.status().message();
    return std::move(*ev);
  }

  SweepResult run(Evaluator& ev, Mode mode, bool reuse, int parallel = 1,
                  SweepOptions::BaseOverlap overlap = SweepOptions::BaseOverlap::kAuto) {
    SweepOptions o;
    o.mode = mode;
    o.reuse = reuse;
    o.parallel = parallel;
    o.overlap = overlap;
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
      EXPECT_EQ(r.layers.front().name, "convB") << metric_name(metric) << " " << mode_name(mode)
                                                << ": first is " << r.layers.front().name;
    }
  }
}

// Over ranks (threads standing for MPI ranks), rank 0's result is one process's: the variants
// are dealt to the ranks, each scores its own, rank 0 gathers.
TEST_F(SweepTest, RanksGiveOneProcessesResult) {
  for (Mode mode : {Mode::kOnly, Mode::kAllBut}) {
    Evaluator ev = evaluator(Metric::kSqnr);
    const SweepResult one = run(ev, mode, true);
    for (int ranks : {2, 3}) {
      std::vector<Expected<SweepResult>> out(static_cast<size_t>(ranks), SweepResult{});
      ptq::testing::ThreadRanks group(ranks);
      group.run([&](dist::Communicator& comm) {
        auto mine = Evaluator::create(model_, *backend_, *data_, nullptr,
                                      {.metric = Metric::kSqnr, .threads = 1});
        SweepOptions o;
        o.mode = mode;
        o.parallel = 1;
        o.comm = &comm;
        out[static_cast<size_t>(comm.rank())] =
            mine ? sweep(table_, *mine, o) : Expected<SweepResult>(mine.status());
      });
      ASSERT_TRUE(out[0]) << out[0].status().message();
      const SweepResult& r = *out[0];
      EXPECT_EQ(r.float_score.value, one.float_score.value);
      EXPECT_EQ(r.quantized_score.value, one.quantized_score.value);
      ASSERT_EQ(r.layers.size(), one.layers.size());
      for (size_t i = 0; i < r.layers.size(); ++i) {
        EXPECT_EQ(r.layers[i].name, one.layers[i].name) << mode_name(mode) << " " << ranks;
        EXPECT_EQ(r.layers[i].score.value, one.layers[i].score.value) << r.layers[i].name;
        EXPECT_EQ(r.layers[i].score.per_output, one.layers[i].score.per_output);
        EXPECT_EQ(r.layers[i].subgraph_nodes, one.layers[i].subgraph_nodes);
      }
      for (size_t k = 1; k < out.size(); ++k) EXPECT_TRUE(out[k]) << out[k].status().message();
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

// By default a sweep takes a worker per evaluator thread (one thread each) for a model this
// small, and scores exactly as one worker on all threads does.
TEST_F(SweepTest, AutomaticWorkersScoreAsOneWorker) {
  Evaluator ev = evaluator(Metric::kSqnr, 3);
  EXPECT_GT(ev.float_pool_bytes(), 0);
  EXPECT_EQ(auto_parallel(ev, 17), 3);
  EXPECT_EQ(auto_parallel(ev, 2), 2);  // no more workers than jobs
  for (Mode mode : {Mode::kOnly, Mode::kAllBut}) {
    SweepResult one = run(ev, mode, true, 1);
    SweepResult automatic = run(ev, mode, true, 0);
    ASSERT_EQ(one.layers.size(), automatic.layers.size());
    for (size_t i = 0; i < one.layers.size(); ++i) {
      EXPECT_EQ(one.layers[i].name, automatic.layers[i].name);
      EXPECT_EQ(one.layers[i].score.value, automatic.layers[i].score.value) << mode_name(mode);
    }
    EXPECT_EQ(one.quantized_score.value, automatic.quantized_score.value);
  }
}

// The cut must not change a single value: scores with reuse equal whole-model runs.
// The base's run overlapping the cuts (one worker runs it on the next batch after its cuts,
// one worker possibly running nothing else), or alone between batches: the same scores as one
// worker, for 2 and 3 workers (the model has 5 units: with 3 workers one may get none).
TEST_F(SweepTest, BaseOverlapNeverChangesScores) {
  using Overlap = SweepOptions::BaseOverlap;
  Evaluator ev = evaluator(Metric::kSqnr, 2);
  for (Mode mode : {Mode::kOnly, Mode::kAllBut}) {
    const SweepResult want = run(ev, mode, true, 1);
    for (int workers : {2, 3}) {
      for (Overlap overlap : {Overlap::kOn, Overlap::kOff, Overlap::kAuto}) {
        const SweepResult got = run(ev, mode, true, workers, overlap);
        ASSERT_EQ(want.layers.size(), got.layers.size());
        for (size_t i = 0; i < want.layers.size(); ++i) {
          EXPECT_EQ(want.layers[i].name, got.layers[i].name);
          EXPECT_EQ(want.layers[i].score.value, got.layers[i].score.value)
              << mode_name(mode) << " workers " << workers << " overlap "
              << static_cast<int>(overlap);
        }
        EXPECT_EQ(want.quantized_score.value, got.quantized_score.value);
      }
    }
  }
}

// An evaluator that ran the FP32 model on the first batch alone, or on none, gets the rest of
// its reference from an only-mode sweep's base (the FP32 model, run on every batch anyway):
// bit for bit the outputs a full evaluator holds, so every score is the same (with one worker
// and with two, the base overlapping the cuts). Until then it cannot evaluate, and an all-but
// sweep (whose base is the quantized model) cannot complete it.
TEST_F(SweepTest, OnlySweepCompletesAPartialReference) {
  using Overlap = SweepOptions::BaseOverlap;
  Evaluator full = evaluator(Metric::kSqnr, 2);
  ASSERT_EQ(full.num_batches(), 3);
  EXPECT_EQ(full.float_pass_batches(), 3);
  for (auto [workers, overlap, first] :
       {std::tuple{1, Overlap::kOff, 1}, std::tuple{2, Overlap::kOn, 1},
        std::tuple{1, Overlap::kOff, 0}, std::tuple{2, Overlap::kOn, 0},
        std::tuple{0, Overlap::kAuto, 0}}) {
    auto partial =
        Evaluator::create(model_, *backend_, *data_, nullptr,
                          {.metric = Metric::kSqnr, .threads = 2, .reference_batches = first});
    ASSERT_TRUE(partial) << partial.status().message();
    EXPECT_EQ(partial->float_pass_batches(), first);
    EXPECT_EQ(partial->has_reference(0), first == 1);
    EXPECT_FALSE(partial->has_reference(1));
    EXPECT_TRUE(std::isnan(partial->float_score().value));
    EXPECT_FALSE(partial->evaluate(model_));
    SweepOptions all_but;
    all_but.mode = Mode::kAllBut;
    EXPECT_FALSE(sweep(table_, *partial, all_but));

    const SweepResult want = run(full, Mode::kOnly, true, workers, overlap);
    const SweepResult got = run(*partial, Mode::kOnly, true, workers, overlap);
    ASSERT_TRUE(partial->has_all_references());
    for (int64_t b = 0; b < full.num_batches(); ++b) {
      const auto& x = full.reference(b);
      const auto& y = partial->reference(b);
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const auto vx = x[i].second.span<float>(), vy = y[i].second.span<float>();
        EXPECT_TRUE(std::equal(vx.begin(), vx.end(), vy.begin(), vy.end())) << "batch " << b;
      }
    }
    EXPECT_EQ(got.float_score.value, full.float_score().value);
    EXPECT_EQ(partial->float_score().value, full.float_score().value);
    ASSERT_EQ(want.layers.size(), got.layers.size());
    for (size_t i = 0; i < want.layers.size(); ++i) {
      EXPECT_EQ(want.layers[i].name, got.layers[i].name);
      EXPECT_EQ(want.layers[i].score.value, got.layers[i].score.value) << want.layers[i].name;
    }
    EXPECT_EQ(want.quantized_score.value, got.quantized_score.value);
    auto again = partial->evaluate(model_);
    ASSERT_TRUE(again) << again.status().message();
  }
}

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
    // The sweep folds the quantized weights' DequantizeLinear once (fold.h), so a Conv/MatMul
    // packs that weight ahead and may sum in another order than evaluate() on the model as
    // written: equal up to float reassociation (~1e-7 relative in the output, far less in dB).
    EXPECT_NEAR(s->value, l.score.value, 1e-6 * std::abs(s->value)) << l.name;
  }
  EXPECT_TRUE(std::isinf(ev.float_score().value));
}

// The outlier model with convC's weight and fc's bias given by Constant nodes (a `value` tensor
// and `value_floats`): the sweep reads those as initializers, and every unit's score still
// equals that of the model quantized as written, in both modes.
class ConstantNodeSweepTest : public SweepTest {
 protected:
  ir::Model make_model() const override {
    ir::Model m = outlier_model();
    ir::Graph& g = m.graph;
    ir::Node w = ir::make_node("Constant", "convC_w", {}, {"convC.w"});
    ir::Attribute value;
    value.name = "value";
    value.type = ir::AttrType::kTensor;
    value.t = *g.initializer("convC.w");
    w.set_attr(value);
    ir::Node b = ir::make_node("Constant", "fc_b", {}, {"fc.b"});
    ir::Attribute floats;
    floats.name = "value_floats";
    floats.type = ir::AttrType::kFloats;
    const auto bias = g.initializer("fc.b")->span<float>();
    floats.floats.assign(bias.begin(), bias.end());
    b.set_attr(floats);
    g.remove_initializer("convC.w");
    g.remove_initializer("fc.b");
    g.nodes.insert(g.nodes.begin(), {w, b});
    return m;
  }
};

TEST_F(ConstantNodeSweepTest, ScoresEqualWholeVariantScores) {
  Evaluator ev = evaluator(Metric::kSqnr);
  for (Mode mode : {Mode::kOnly, Mode::kAllBut}) {
    SweepResult r = run(ev, mode, true, 2);
    ASSERT_EQ(r.layers.size(), 5u);  // convA, convB, convC, gap, fc
    for (const auto& l : r.layers) {
      planner::PlanOptions p;
      (mode == Mode::kOnly ? p.only_units : p.skip_units) = {l.name};
      ir::Model m = model_;
      ASSERT_TRUE(planner::quantize(m, table_, p));
      auto s = ev.evaluate(m);
      ASSERT_TRUE(s);
      EXPECT_NEAR(s->value, l.score.value, 1e-6 * std::abs(s->value)) << l.name;
    }
  }
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

// A cut recomputes the shape values its nodes read instead of taking them at its boundary (the
// Vulkan executor needs shape inputs computable from its own graph):
//   x -> convA -> a -> Relu -> ar -> convB -> b -> Reshape(b, s) -> y
//                              ar -> Shape -> s
// Quantizing convB alone: the cut holds convB's Q/DQ, convB, the Reshape and the Shape; its
// boundary is ar, not s.
TEST(MakeCut, RecomputesShapeValues) {
  ir::Model m = outlier_model();
  ir::Graph& g = m.graph;
  g.nodes.resize(3);  // convA, reluA, convB
  g.nodes.push_back(ir::make_node("Shape", "shape", {"ar"}, {"s"}));
  g.nodes.push_back(ir::make_node("Reshape", "reshape", {"b", "s"}, {"y"}));
  g.outputs.front().type.dims =
      std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(16), ir::Dim::of(8), ir::Dim::of(8)};
  for (const char* name : {"convC.w", "convC.b", "fc.w", "fc.b"}) g.remove_initializer(name);

  const fs::path dir = fs::temp_directory_path() / ("ptq_sens_cut_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937 gen(3);
  ASSERT_TRUE(data::save_npy(dir / "x.npy", normal_tensor(gen, {8, 16, 8, 8}, 1.0f)).is_ok());
  data::DatasetSpec spec;
  spec.sources = {{"", dir / "x.npy"}};
  auto ds = data::Dataset::open(spec);
  ASSERT_TRUE(ds) << ds.status().message();
  ASSERT_TRUE(ds->bind(g).is_ok());
  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_TRUE(exec) << exec.status().message();
  calibration::CalibrationOptions co;
  co.method.name = "minmax";
  auto table = calibration::calibrate(m, **exec, *ds, co);
  fs::remove_all(dir);
  ASSERT_TRUE(table) << table.status().message();

  planner::PlanOptions p;
  p.only_units = {"convB"};
  auto variant = partial_model(m, *table, p, {});
  ASSERT_TRUE(variant) << variant.status().message();
  auto cut = make_cut(m, *variant);
  ASSERT_TRUE(cut) << cut.status().message();
  EXPECT_EQ(cut->boundary, std::vector<std::string>{"ar"});
  std::vector<std::string> ops;
  for (const ir::Node& n : cut->sub.graph.nodes) ops.push_back(n.op_type);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Shape"), ops.end());
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Reshape"), ops.end());
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "Relu"), ops.end());
  EXPECT_EQ(cut->sub_output, std::vector<int64_t>{0});

  // Nodes out of order are sorted first: the same nodes are cut (in an order of their own).
  // A value with two producers is an error.
  auto names = [](const Cut& c) {
    std::vector<std::string> v;
    for (const ir::Node& n : c.sub.graph.nodes) v.push_back(n.name);
    std::sort(v.begin(), v.end());
    return v;
  };
  ir::Model shuffled = *variant;
  std::reverse(shuffled.graph.nodes.begin(), shuffled.graph.nodes.end());
  auto again = make_cut(m, shuffled);
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ(again->boundary, cut->boundary);
  EXPECT_EQ(names(*again), names(*cut));
  ir::Model twice = *variant;
  twice.graph.nodes.push_back(twice.graph.nodes.back());
  auto bad = make_cut(m, twice);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("two producers"), std::string::npos)
      << bad.status().message();
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
