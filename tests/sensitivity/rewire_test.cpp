// All-but variants made from the fully quantized base (rewire.h): which plans qualify, and
// what the rewired base reads. That its scores equal quantizing the float model again is
// checked end to end by sweep_test (PrefixReuseMatchesWholeRuns, all-but).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cut.h"
#include "fold.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"
#include "ptq/sensitivity.h"
#include "outlier_model.h"
#include "rewire.h"

namespace ptq::sensitivity {
namespace {

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

    const auto rewiring = rewiring_dropping(base, index, m, *dropped);
    ASSERT_TRUE(rewiring) << u.name;
    const ir::Model variant = rewired(base, *rewiring);
    for (const planner::QuantEdge* e : *dropped) {
      const ir::Node& planned = m.graph.nodes[e->node];
      const int64_t n = index.producer(planned.outputs.front());
      ASSERT_GE(n, 0);
      EXPECT_EQ(variant.graph.nodes[static_cast<size_t>(n)].inputs[e->input], e->tensor);
      if (e->role != planner::Role::kActivation) {
        const ir::Tensor* w = variant.graph.initializer(e->tensor);
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

runtime::NamedTensors run_model(const ir::Model& m, runtime::Backend& backend,
                                const ir::Tensor& x) {
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
  const ir::Tensor x = ptq::testing::normal_tensor(gen, {2, 16, 8, 8}, 1.0f);
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
      if (std::find(e.units.begin(), e.units.end(), u.name) != e.units.end())
        want.push_back(e.tensor);
    }
    for (const planner::QuantEdge* e : *added) got.push_back(e->tensor);
    EXPECT_EQ(got, want) << u.name;

    const auto rewiring = rewiring_adding(m, base_index, quantized, quantized_index, m, *added);
    ASSERT_TRUE(rewiring) << u.name;
    const ir::Model variant = rewired(m, *rewiring);
    EXPECT_TRUE(sorted(variant.graph)) << u.name;
    ir::Model reference = m;
    ASSERT_TRUE(planner::apply(reference, *plan));
    ASSERT_TRUE(folder.fold(reference));
    const auto a = run_model(variant, *backend, x), b = run_model(reference, *backend, x);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    const auto va = a[0].second.span<float>(), vb = b[0].second.span<float>();
    EXPECT_TRUE(std::equal(va.begin(), va.end(), vb.begin(), vb.end())) << u.name;
    const auto vf = float_out[0].second.span<float>();
    quantized_differs += std::equal(va.begin(), va.end(), vf.begin(), vf.end()) ? 0 : 1;
  }
  EXPECT_EQ(quantized_differs, static_cast<int>(full->units.size()));
}

// A cut compared in full: its nodes in order (op, inputs, outputs), boundary, borrowed
// initializers (by name and address), inputs and outputs.
std::vector<std::string> describe(const Cut& c) {
  std::vector<std::string> v;
  for (const ir::Node& n : c.sub.graph.nodes) {
    std::string line = n.op_type + "(";
    for (const std::string& in : n.inputs) line += in + ",";
    line += ")->";
    for (const std::string& out : n.outputs) line += out + ",";
    v.push_back(line);
  }
  for (const std::string& b : c.boundary) v.push_back("boundary " + b);
  std::vector<std::string> inits;
  for (const ir::Initializer& i : c.sub.graph.initializers()) {
    inits.push_back("init " + i.name + " @" +
                    std::to_string(reinterpret_cast<uintptr_t>(i.tensor.raw())));
  }
  std::sort(inits.begin(), inits.end());
  v.insert(v.end(), inits.begin(), inits.end());
  for (const ir::ValueInfo& in : c.sub.graph.inputs) v.push_back("input " + in.name);
  for (const ir::ValueInfo& out : c.sub.graph.outputs) v.push_back("output " + out.name);
  for (int64_t o : c.sub_output) v.push_back("sub_output " + std::to_string(o));
  return v;
}

// The outlier model with a shape subgraph at its end (x -> convA -> ar -> convB -> b ->
// Reshape(b, Shape(ar)) -> y): a cut through convB recomputes the Shape.
ir::Model shape_model() {
  ir::Model m = outlier_model();
  ir::Graph& g = m.graph;
  g.nodes.resize(3);  // convA, reluA, convB
  g.nodes.push_back(ir::make_node("Shape", "shape", {"ar"}, {"s"}));
  g.nodes.push_back(ir::make_node("Reshape", "reshape", {"b", "s"}, {"y"}));
  for (const char* name : {"convC.w", "convC.b", "fc.w", "fc.b"}) g.remove_initializer(name);
  return m;
}

// The cut CutMaker finds from a rewiring on the base's indexes is exactly the cut of the
// variant the rewiring makes, in both modes, for every unit.
TEST(Rewire, CutOfARewiringIsTheCutOfItsVariant) {
  auto backend = runtime::make_cpu_backend();
  for (const ir::Model& m : {outlier_model(), shape_model()}) {
    // A folder per model: it remembers the tensors it folded, which die with the model.
    ConstantFolder folder([&](const ir::Model& part, int threads) {
      return runtime::Executor::create(part, *backend, {.threads = threads});
    });
    const auto table = table_for(m);
    const planner::Plan full = plan_skipping(m, table, {});
    ir::Model quantized = m;
    ASSERT_TRUE(planner::apply(quantized, full));
    ASSERT_TRUE(folder.fold(quantized));
    const ir::GraphIndex float_index(m.graph), quantized_index(quantized.graph);
    const CutMaker float_cuts(m), quantized_cuts(quantized);
    int shapes = 0;  // cuts holding the Shape node
    for (const planner::Unit& u : full.units) {
      const auto dropped = dropped_edges(full, plan_skipping(m, table, {u.name}));
      ASSERT_TRUE(dropped) << u.name;
      const auto all_but = rewiring_dropping(quantized, quantized_index, m, *dropped);
      ASSERT_TRUE(all_but) << u.name;
      planner::PlanOptions one;
      one.only_units = {u.name};
      auto plan = planner::plan(m, table, one);
      ASSERT_TRUE(plan) << plan.status().message();
      const auto added = added_edges(full, *plan);
      ASSERT_TRUE(added) << u.name;
      const auto only = rewiring_adding(m, float_index, quantized, quantized_index, m, *added);
      ASSERT_TRUE(only) << u.name;
      for (auto [cuts, r] :
           {std::pair{&quantized_cuts, &*all_but}, std::pair{&float_cuts, &*only}}) {
        const ir::Model variant = rewired(cuts->base(), *r);
        auto direct = cuts->cut(*r);
        auto made = cuts->cut(variant);
        ASSERT_TRUE(direct) << direct.status().message();
        ASSERT_TRUE(made) << made.status().message();
        EXPECT_GT(direct->nodes, 0) << u.name;
        EXPECT_EQ(direct->nodes, made->nodes) << u.name;
        EXPECT_EQ(describe(*direct), describe(*made)) << u.name;
        for (const ir::Node& n : direct->sub.graph.nodes) shapes += n.op_type == "Shape" ? 1 : 0;
      }
    }
    EXPECT_EQ(shapes > 0, m.graph.nodes.size() == 5u);
  }
}

// A folded BatchNormalization changes the weights a unit reads: not rewired.
TEST(Rewire, FoldedBatchNormIsNotRewired) {
  ir::Model m = outlier_model();
  ir::Graph& g = m.graph;
  std::mt19937 gen(3);
  for (const char* p : {"bn.scale", "bn.bias", "bn.mean"}) {
    g.set_initializer(p, ptq::testing::normal_tensor(gen, {16}, 0.1f));
  }
  ir::Tensor var(ir::DType::kFloat32, {16});
  for (float& v : var.span<float>()) v = 1.0f;
  g.set_initializer("bn.var", std::move(var));
  for (ir::Node& n : g.nodes) {
    if (n.name == "reluA") n.inputs = {"a_bn"};
  }
  ir::Node bn = ir::make_node("BatchNormalization", "bn",
                              {"a", "bn.scale", "bn.bias", "bn.mean", "bn.var"}, {"a_bn"});
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
