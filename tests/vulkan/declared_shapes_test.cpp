// declared_shape_facts() against the truth it replaces: the CPU executor run once on the same
// batch. For the three test models and three zoo models (dynamic batch, Constant and
// Shape->Reshape chains, nodes after them settled by the op rules) every value's dtype and shape
// and every folded static value must equal what the CPU run saw; and inputs the declared types
// do not settle must say so (nullopt), never guess.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "common/paths.h"
#include "declared_shapes.h"
#include "host_values.h"
#include "ptq/data.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/onnx.h"
#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

std::filesystem::path model_path(const std::string& name) {
  return ptq::testing::test_models_dir() / (name + ".onnx");
}

// Every real input and node output as the CPU executor produced it.
class Everything final : public runtime::Observer {
 public:
  std::vector<std::string> wanted(const ir::Graph& graph) override {
    return vulkan::every_value_name(graph);
  }
  Status observe(const runtime::ObservedTensor& t) override {
    seen[t.name] = {t.dtype, t.shape};
    if (t.host == nullptr || t.dtype == ir::DType::kString) return Status::ok();
    values.emplace(t.name, ir::owned_copy(*t.host));  // the host tensor dies after this call
    return Status::ok();
  }
  std::map<std::string, std::pair<ir::DType, ir::Shape>> seen;
  std::map<std::string, ir::Tensor> values;
};

ir::Tensor random_input(const ir::ValueInfo& in, int64_t batch, std::mt19937& rng) {
  ir::Shape shape;
  for (const ir::Dim& d : *in.type.dims) shape.push_back(d.known() ? d.value : batch);
  return random_tensor(rng, shape);
}

// Checks the declared facts for `feeds` against a CPU run; returns the nodes run on stand-ins.
int expect_same_facts(const std::string& name, const ir::Model& model,
                      const runtime::NamedTensors& feeds) {
  auto statics = static_values(model.graph);
  EXPECT_TRUE(statics.has_value()) << statics.status().message();
  if (!statics) return -1;
  auto cpu = runtime::make_cpu_backend();
  std::string why;
  auto declared = declared_shape_facts(model.graph, model.opset(""), feeds, *statics, *cpu, why);
  EXPECT_TRUE(declared.has_value()) << declared.status().message();
  if (!declared) return -1;
  EXPECT_TRUE(declared->has_value()) << name << ": not settled: " << why;
  if (!declared->has_value()) return -1;

  auto exec = runtime::Executor::create(model, *cpu, runtime::ExecutorOptions{});
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  if (!exec) return -1;
  Everything truth;
  runtime::Observer* obs[] = {&truth};
  auto out = (*exec)->run(feeds, obs);
  EXPECT_TRUE(out.has_value()) << out.status().message();

  const ShapeFacts& facts = **declared;
  EXPECT_EQ(facts.facts.size(), truth.seen.size()) << name;
  for (const auto& [value, seen] : truth.seen) {
    auto f = facts.facts.find(value);
    EXPECT_NE(f, facts.facts.end()) << name << ": no fact for " << value;
    if (f == facts.facts.end()) continue;
    EXPECT_EQ(f->second.dtype, seen.first) << name << " " << value;
    EXPECT_EQ(f->second.shape, seen.second) << name << " " << value;
  }
  for (const auto& [value, tensor] : facts.folded) {
    auto t = truth.values.find(value);
    EXPECT_NE(t, truth.values.end()) << name << ": folded " << value << " not seen on the CPU";
    if (t == truth.values.end()) continue;
    EXPECT_EQ(tensor.nbytes(), t->second.nbytes()) << value;
    // An empty tensor may hold no buffer: memcmp must not see its null pointer.
    if (tensor.nbytes() != t->second.nbytes() || tensor.nbytes() == 0) continue;
    EXPECT_EQ(std::memcmp(tensor.raw(), t->second.raw(), tensor.nbytes()), 0)
        << name << " " << value;
  }
  return facts.stand_in_runs;
}

int expect_same_facts(const std::string& name, int64_t batch) {
  auto model = onnx::load_model(model_path(name));
  EXPECT_TRUE(model.has_value()) << "missing test model (run scripts/make-testdata.sh): "
                                 << model.status().message();
  if (!model) return -1;
  std::mt19937 rng(7);
  const ir::ValueInfo& in = *model->graph.real_inputs().front();
  return expect_same_facts(name, *model, {{in.name, random_input(in, batch, rng)}});
}

// A zoo model (build/testdata/zoo) fed the first `batch` samples of its test data, one .npy
// per input.
int expect_same_zoo_facts(const std::string& name, int64_t batch) {
  const std::filesystem::path zoo = model_path("x").parent_path().parent_path() / "zoo";
  auto model = onnx::load_model(zoo / (name + ".onnx"));
  EXPECT_TRUE(model.has_value()) << "missing zoo model (make zoo): " << model.status().message();
  if (!model) return -1;
  runtime::NamedTensors feeds;
  for (const ir::ValueInfo* in : model->graph.real_inputs()) {
    auto all = data::load_npy(zoo / name / "test" / (in->name + ".npy"));
    EXPECT_TRUE(all.has_value()) << all.status().message();
    if (!all) return -1;
    ir::Shape shape = all->shape();
    shape[0] = batch;
    ir::Tensor t(all->dtype(), shape);
    std::memcpy(t.raw(), all->raw(), t.nbytes());
    feeds.emplace_back(in->name, std::move(t));
  }
  return expect_same_facts(name, *model, feeds);
}

TEST(DeclaredShapes, ResNet18MatchesCpuRun) {
  expect_same_facts("resnet18", 1);
  expect_same_facts("resnet18", 3);
}
TEST(DeclaredShapes, MobileNetV2MatchesCpuRun) { expect_same_facts("mobilenet_v2", 2); }
// Exported transformers reshape by shapes computed in the graph, which load-time inference
// leaves open from the first such Reshape on: the op rules (shape_rules.h) settle every node
// after it, none runs on stand-ins.
TEST(DeclaredShapes, TransformerMatchesCpuRun) {
  EXPECT_EQ(expect_same_facts("transformer", 1), 0);
  EXPECT_EQ(expect_same_facts("transformer", 5), 0);
}
TEST(DeclaredShapes, ZooBertMatchesCpuRun) {
  EXPECT_EQ(expect_same_zoo_facts("bert_opset17", 2), 0);
}
// Window attention: Pad, Gather, Where, Equal, Not and Cast after computed Reshapes.
TEST(DeclaredShapes, ZooSwinMatchesCpuRun) { EXPECT_EQ(expect_same_zoo_facts("swin_t", 1), 0); }
// Slices and Convs after a computed Reshape (channel shuffle).
TEST(DeclaredShapes, ZooShuffleNetMatchesCpuRun) {
  EXPECT_EQ(expect_same_zoo_facts("shufflenet_v2", 1), 0);
}

// Relu then a custom-domain op: the custom op's output has no declared type and no CPU kernel
// to run it on stand-ins, so nothing is settled; a fed shape that contradicts a fixed declared dim
// is not settled either.
TEST(DeclaredShapes, UnsettledTypesAreReportedNotGuessed) {
  ir::Model m;
  m.opset_imports = {{"", 13}, {"com.example", 1}};
  ir::ValueInfo x;
  x.name = "x";
  x.type.dtype = ir::DType::kFloat32;
  x.type.dims = std::vector<ir::Dim>{ir::Dim::symbol("n"), ir::Dim::of(4)};
  m.graph.inputs = {x};
  m.graph.nodes.push_back(ir::Node{"relu", "Relu", "", {"x"}, {"r"}, {}, {}});
  m.graph.nodes.push_back(ir::Node{"custom", "Mystery", "com.example", {"r"}, {"y"}, {}, {}});
  ir::ValueInfo r = x;
  r.name = "r";
  m.graph.inferred = {r};
  m.graph.outputs = {{"y", {}, {}}};
  auto statics = static_values(m.graph);
  ASSERT_TRUE(statics.has_value());
  auto cpu = runtime::make_cpu_backend();
  std::mt19937 rng(3);
  std::string why;
  auto custom =
      declared_shape_facts(m.graph, 13, {{"x", random_tensor(rng, {2, 4})}}, *statics, *cpu, why);
  ASSERT_TRUE(custom.has_value());
  EXPECT_FALSE(custom->has_value());
  EXPECT_NE(why.find("'custom'"), std::string::npos) << why;

  m.graph.nodes.pop_back();
  m.graph.outputs = {{"r", {}, {}}};
  auto settled =
      declared_shape_facts(m.graph, 13, {{"x", random_tensor(rng, {2, 4})}}, *statics, *cpu, why);
  ASSERT_TRUE(settled.has_value());
  ASSERT_TRUE(settled->has_value()) << why;
  EXPECT_EQ((**settled).facts.at("r").shape, (ir::Shape{2, 4}));
  auto wrong =
      declared_shape_facts(m.graph, 13, {{"x", random_tensor(rng, {2, 5})}}, *statics, *cpu, why);
  ASSERT_TRUE(wrong.has_value());
  EXPECT_FALSE(wrong->has_value());
  EXPECT_NE(why.find("'x'"), std::string::npos) << why;
}

}  // namespace
}  // namespace ptq::vulkan::testing
