// All-but variants made from the fully quantized base (rewire.h): which plans qualify, and
// what the rewired base reads. That its scores equal quantizing the float model again is
// checked end to end by sweep_test (PrefixReuseMatchesWholeRuns, all-but).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fold.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"
#include "ptq/sensitivity.h"
#include "outlier_model.h"
#include "rewire.h"

namespace ptq::sensitivity {
namespace {

using testing::node;
using testing::outlier_model;

// A range for every activation (graph inputs and node outputs) of `m`.
calib::CalibrationTable table_for(const ir::Model& m) {
  calib::CalibrationTable t;
  t.method = "minmax";
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> dist(0.5, 4.0);
  auto add = [&](const std::string& name) {
    calib::TensorRange r;
    r.amax = dist(rng);
    r.min = -r.amax;
    r.max = r.amax;
    r.count = 100;
    t.tensors[name] = r;
  };
  for (const ir::ValueInfo& v : m.graph.inputs) add(v.name);
  for (const ir::Node& n : m.graph.nodes) add(n.outputs.front());
  return t;
}

planner::Plan plan_skipping(const ir::Model& m, const calib::CalibrationTable& t,
                            std::vector<std::string> skip) {
  planner::PlanOptions o;
  o.skip_units = std::move(skip);
  auto p = planner::plan(m, t, o);
  EXPECT_TRUE(p) << p.status().message();
  return p ? std::move(*p) : planner::Plan{};
}

// Leaving one unit in float drops exactly the edges only that unit wants; the rewired base
// reads the float tensors there (the weight and bias borrowed from the float model again).
TEST(Rewire, AllButVariantIsTheBaseWithoutItsUnitsEdges) {
  const ir::Model m = outlier_model();
  const auto table = table_for(m);
  const planner::Plan base_plan = plan_skipping(m, table, {});
  ir::Model base = m;
  ASSERT_TRUE(planner::apply(base, base_plan));
  const ir::GraphIndex index(base.graph);
  for (const planner::Unit& u : base_plan.units) {
    const planner::Plan plan = plan_skipping(m, table, {u.name});
    const auto dropped = dropped_edges(base_plan, plan);
    ASSERT_TRUE(dropped) << u.name;
    std::vector<std::string> want, got;
    for (const planner::QuantEdge& e : base_plan.edges) {
      if (e.units == std::vector<std::string>{u.name}) want.push_back(e.tensor);
    }
    for (const planner::QuantEdge* e : *dropped) got.push_back(e->tensor);
    EXPECT_EQ(got, want) << u.name;
    EXPECT_FALSE(got.empty()) << u.name;

    const auto rewired = rewired_base(base, index, m, *dropped);
    ASSERT_TRUE(rewired) << u.name;
    for (const planner::QuantEdge* e : *dropped) {
      const ir::Node& planned = m.graph.nodes[e->node];
      const int64_t n = index.producer(planned.outputs.front());
      ASSERT_GE(n, 0);
      EXPECT_EQ(rewired->graph.nodes[static_cast<size_t>(n)].inputs[e->input], e->tensor);
      if (e->role != planner::Role::kActivation) {
        const ir::Tensor* w = rewired->graph.initializer(e->tensor);
        ASSERT_NE(w, nullptr) << e->tensor;
        EXPECT_EQ(w->raw(), m.graph.initializer(e->tensor)->raw());  // borrowed, not copied
      }
    }
  }
}

// Every node reads only values made before it (inputs, initializers, earlier outputs).
bool sorted(const ir::Graph& g) {
  std::set<std::string> known;
  for (const ir::ValueInfo& v : g.inputs) known.insert(v.name);
  for (const ir::Initializer& i : g.initializers()) known.insert(i.name);
  for (const ir::Node& n : g.nodes) {
    for (const std::string& in : n.inputs) {
      if (!in.empty() && !known.contains(in)) return false;
    }
    known.insert(n.outputs.begin(), n.outputs.end());
  }
  return true;
}

runtime::NamedTensors run_model(const ir::Model& m, runtime::Backend& backend, const ir::Tensor& x) {
  auto exec = runtime::Executor::create(m, backend);
  EXPECT_TRUE(exec) << exec.status().message();
  auto out = (*exec)->run({{"x", x.view()}});
  EXPECT_TRUE(out) << out.status().message();
  return out ? std::move(*out) : runtime::NamedTensors{};
}

// Quantizing one unit alone adds exactly the edges that unit wants; the float model given the
// fully quantized model's values there (Q -> DQ chains copied in, in order; dequantized weights
// borrowed) computes bit for bit what quantizing that unit alone and folding does.
TEST(Rewire, OnlyVariantIsTheFloatModelWithTheQuantizedModelsValues) {
  const ir::Model m = outlier_model();
  const auto table = table_for(m);
  auto backend = runtime::make_cpu_backend();
  ConstantFolder folder([&](const ir::Model& part, int threads) {
    return runtime::Executor::create(part, *backend, {.threads = threads});
  });
  planner::PlanOptions all;
  auto full = planner::plan(m, table, all);
  ASSERT_TRUE(full) << full.status().message();
  ir::Model quantized = m;
  ASSERT_TRUE(planner::apply(quantized, *full));
  ASSERT_TRUE(folder.fold(quantized));
  const ir::GraphIndex base_index(m.graph), quantized_index(quantized.graph);
  std::mt19937 gen(9);
  const ir::Tensor x = testing::random_tensor({2, 16, 8, 8}, 1.0, gen);
  const auto float_out = run_model(m, *backend, x);
  ASSERT_EQ(float_out.size(), 1u);
  int quantized_differs = 0;  // units whose variant's output is not the float model's
  for (const planner::Unit& u : full->units) {
    planner::PlanOptions one;
    one.only_units = {u.name};
    auto plan = planner::plan(m, table, one);
    ASSERT_TRUE(plan) << plan.status().message();
    const auto added = added_edges(*full, *plan);
    ASSERT_TRUE(added) << u.name;
    std::vector<std::string> want, got;
    for (const planner::QuantEdge& e : full->edges) {
      if (std::find(e.units.begin(), e.units.end(), u.name) != e.units.end()) want.push_back(e.tensor);
    }
    for (const planner::QuantEdge* e : *added) got.push_back(e->tensor);
    EXPECT_EQ(got, want) << u.name;

    const auto variant = with_quantized_edges(m, base_index, quantized, quantized_index, m, *added);
    ASSERT_TRUE(variant) << u.name;
    EXPECT_TRUE(sorted(variant->graph)) << u.name;
    ir::Model reference = m;
    ASSERT_TRUE(planner::apply(reference, *plan));
    ASSERT_TRUE(folder.fold(reference));
    const auto a = run_model(*variant, *backend, x), b = run_model(reference, *backend, x);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    const auto va = a[0].second.span<float>(), vb = b[0].second.span<float>();
    EXPECT_TRUE(std::equal(va.begin(), va.end(), vb.begin(), vb.end())) << u.name;
    const auto vf = float_out[0].second.span<float>();
    quantized_differs += std::equal(va.begin(), va.end(), vf.begin(), vf.end()) ? 0 : 1;
  }
  EXPECT_EQ(quantized_differs, static_cast<int>(full->units.size()));
}

// A folded BatchNormalization changes the weights a unit reads: not rewired.
TEST(Rewire, FoldedBatchNormIsNotRewired) {
  ir::Model m = outlier_model();
  ir::Graph& g = m.graph;
  std::mt19937 gen(3);
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean"}) {
    g.set_initializer(p, testing::random_tensor({16}, 0.1, gen));
  }
  ir::Tensor var(ir::DType::kFloat32, {16});
  for (float& v : var.span<float>()) v = 1.0f;
  g.set_initializer("bn.var", std::move(var));
  for (ir::Node& n : g.nodes) {
    if (n.name == "reluA") n.inputs = {"a_bn"};
  }
  ir::Node bn = node("bn", "BatchNormalization", {"a", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, "a_bn");
  g.nodes.insert(g.nodes.begin() + 1, bn);
  const auto table = table_for(m);
  const planner::Plan base_plan = plan_skipping(m, table, {});
  ASSERT_FALSE(base_plan.folds.empty());
  EXPECT_FALSE(dropped_edges(base_plan, plan_skipping(m, table, {"convC"})));
}

// A weight two units read keeps scales the dropped unit's bias may have widened: not rewired.
TEST(Rewire, SharedWeightIsNotRewired) {
  ir::Model m = outlier_model();
  for (ir::Node& n : m.graph.nodes) {
    if (n.name == "convC") n.inputs[1] = "convB.w";
  }
  const auto table = table_for(m);
  const planner::Plan base_plan = plan_skipping(m, table, {});
  EXPECT_FALSE(dropped_edges(base_plan, plan_skipping(m, table, {"convC"})));
  EXPECT_TRUE(dropped_edges(base_plan, plan_skipping(m, table, {"fc"})));
}

}  // namespace
}  // namespace ptq::sensitivity
