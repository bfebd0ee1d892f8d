// Executor behaviour on small graphs built in code, run on a test backend whose ops are
// trivial and instrumented (so failures point at the executor, not at a kernel):
//   Inc     y = x + 1 (fresh buffer)         View  y = x viewed flat (aliases x's buffer)
//   Scratch y = x + 1, with a scratch buffer Two   y1 = x + 1, y2 = x + 2
//   Fail    returns an error                 Peek  y = x + 1, records x's data pointer
#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "common/node_builder.h"
#include "pool_allocator.h"
#include "ptq/runtime.h"

namespace ptq::runtime {
namespace {

using ptq::testing::op_node;

using ir::DType;

class FnKernel final : public Kernel {
 public:
  using Fn =
      std::function<Status(std::span<const ir::Tensor* const>, std::span<ir::Tensor>, Allocator&)>;
  explicit FnKernel(Fn fn) : fn_(std::move(fn)) {}
  Status run(std::span<const ir::Tensor* const> in, std::span<ir::Tensor> out,
             Allocator& a) override {
    return fn_(in, out, a);
  }

 private:
  Fn fn_;
};

ir::Tensor add(const ir::Tensor& x, float v, Allocator& a) {
  ir::Tensor y = a.allocate(DType::kFloat32, x.shape());
  for (int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = x.data<float>()[i] + v;
  return y;
}

class StatsOf final : public TensorStatistics {
 public:
  explicit StatsOf(const ir::Tensor& t) : t_(t) {}
  MinMaxStats minmax() const override {
    MinMaxStats s{INFINITY, -INFINITY, 0, 0, -1};
    for (float v : t_.span<float>()) {
      s.min = std::min<double>(s.min, v);
      s.max = std::max<double>(s.max, v);
      s.abs_max = std::max<double>(s.abs_max, std::abs(v));
    }
    return s;
  }
  void histogram(double, std::span<uint64_t>) const override {}

 private:
  const ir::Tensor& t_;
};

class TestBackend final : public Backend {
 public:
  std::string name() const override { return "test"; }
  bool supports(const ir::Node& node, int64_t) const override {
    return node.op_type == "Inc" || node.op_type == "View" || node.op_type == "Scratch" ||
           node.op_type == "Two" || node.op_type == "Fail" || node.op_type == "Peek" ||
           node.op_type == "Constant";  // never asked for a kernel: the plan holds its value
  }
  Expected<std::unique_ptr<Kernel>> create_kernel(const KernelContext& ctx) override {
    ++created;
    const std::string op = ctx.node.op_type;
    return std::unique_ptr<Kernel>(std::make_unique<FnKernel>(
        [this, op](std::span<const ir::Tensor* const> in, std::span<ir::Tensor> out,
                   Allocator& a) -> Status {
          const ir::Tensor& x = *in[0];
          if (op == "Inc") out[0] = add(x, 1, a);
          if (op == "View") out[0] = ir::Tensor::borrow(x.dtype(), {x.size()}, x.raw());
          if (op == "Scratch") {
            ir::Tensor tmp = add(x, 0.5f, a);
            out[0] = add(tmp, 0.5f, a);
          }
          if (op == "Two") {
            out[0] = add(x, 1, a);
            if (out.size() > 1) out[1] = add(x, 2, a);
          }
          if (op == "Peek") {
            seen.push_back(x.raw());
            out[0] = add(x, 1, a);
          }
          if (op == "Fail") return runtime_error("boom");
          return Status::ok();
        }));
  }
  std::unique_ptr<TensorStatistics> statistics(const ir::Tensor& t, int) const override {
    return std::make_unique<StatsOf>(t);
  }
  int created = 0;
  std::vector<const void*> seen;
};

ir::ValueInfo float_input(std::string name, std::vector<ir::Dim> dims) {
  ir::ValueInfo v;
  v.name = std::move(name);
  v.type.dtype = DType::kFloat32;
  v.type.dims = std::move(dims);
  return v;
}

ir::Model model_with(std::vector<ir::Node> nodes, std::vector<std::string> outputs) {
  ir::Model m;
  m.set_opset("", 17);
  m.graph.inputs.push_back(float_input("x", {ir::Dim::symbol("batch"), ir::Dim::of(4)}));
  m.graph.nodes = std::move(nodes);
  for (auto& o : outputs) m.graph.outputs.push_back(float_input(o, {}));
  return m;
}

NamedTensors input_x(int64_t batch, float base = 0.0f) {
  ir::Tensor x(DType::kFloat32, {batch, 4});
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = base + static_cast<float>(i);
  NamedTensors in;
  in.emplace_back("x", std::move(x));
  return in;
}

std::unique_ptr<Executor> make(const ir::Model& m, Backend& b, ExecutorOptions o = {}) {
  auto e = Executor::create(m, b, o);
  EXPECT_TRUE(e.has_value()) << e.status().message();
  return e ? std::move(*e) : nullptr;
}

//   x -> Inc -> a -> Inc -> b -> Inc -> c (output)
TEST(Executor, ChainReusesBuffersAndPeaksAtTwoActivations) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"}), op_node("Inc", {"a"}, {"b"}),
                            op_node("Inc", {"b"}, {"c"})},
                           {"c"});
  auto exec = make(m, backend);
  auto out = exec->run(input_x(2));
  ASSERT_TRUE(out.has_value()) << out.status().message();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].first, "c");
  EXPECT_EQ((*out)[0].second.data<float>()[5], 8.0f);
  const RunStats first = exec->last_run_stats();
  EXPECT_EQ(first.peak_live_bytes, 2 * 8 * 4);  // a and b, or b and c: never three
  EXPECT_EQ(first.pool_bytes, 2 * 64);          // two blocks, each rounded up to 64 bytes
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(exec->run(input_x(2)).has_value());
  EXPECT_EQ(exec->last_run_stats().pool_bytes, first.pool_bytes);  // nothing new allocated
  EXPECT_EQ(backend.created, 3);  // kernels made once
}

// The output is a copy that outlives the executor.
TEST(Executor, OutputsAreOwned) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"}), op_node("View", {"a"}, {"v"})}, {"v"});
  NamedTensors result;
  {
    auto exec = make(m, backend);
    auto out = exec->run(input_x(1));
    ASSERT_TRUE(out.has_value());
    result = std::move(*out);
  }
  EXPECT_TRUE(result[0].second.owns_data());
  EXPECT_EQ(result[0].second.shape(), (ir::Shape{4}));
  EXPECT_EQ(result[0].second.data<float>()[3], 4.0f);
}

// Spent outputs handed back are written into where they fit (same storage, new contents);
// one of another shape, a borrowed one or none gets fresh storage.
TEST(Executor, RunReusingWritesIntoSpentOutputsThatFit) {
  TestBackend backend;
  ir::Model m =
      model_with({op_node("Inc", {"x"}, {"a"}), op_node("Inc", {"a"}, {"b"})}, {"a", "b"});
  auto exec = make(m, backend);
  auto first = exec->run(input_x(1));
  ASSERT_TRUE(first.has_value());
  const void* a_storage = (*first)[0].second.raw();
  float outside[4] = {};
  NamedTensors spent;
  spent.emplace_back("a", std::move((*first)[0].second));
  spent.emplace_back("b", ir::Tensor::borrow(ir::DType::kFloat32, {1, 4}, outside));
  auto second = exec->run_reusing(input_x(1), std::move(spent));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ((*second)[0].second.raw(), a_storage);  // written in place
  EXPECT_NE((*second)[1].second.raw(), static_cast<const void*>(outside));  // borrowed: fresh
  EXPECT_TRUE((*second)[1].second.owns_data());
  auto want = exec->run(input_x(1));
  ASSERT_TRUE(want.has_value());
  for (size_t i = 0; i < 2; ++i) {
    const auto got = (*second)[i].second.span<float>();
    const auto ref = (*want)[i].second.span<float>();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), ref.begin()));
  }
  NamedTensors wrong;
  wrong.emplace_back("a", ir::Tensor(ir::DType::kFloat32, {1, 5}));  // another shape
  const void* wrong_storage = wrong[0].second.raw();
  auto third = exec->run_reusing(input_x(1), std::move(wrong));
  ASSERT_TRUE(third.has_value());
  EXPECT_NE((*third)[0].second.raw(), wrong_storage);
  EXPECT_EQ((*third)[0].second.shape(), (ir::Shape{1, 4}));
}

//   x -> Inc -> a -> View -> v --------------------------------------> Inc -> d (output)
//   x -> (a has died) Scratch -> b -> Inc -> c (output)
// If a's buffer went back to the pool when `a` died, Scratch's temporary x + 0.5 would land
// on it and corrupt v.
TEST(Executor, ViewKeepsItsBufferAlive) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"}), op_node("View", {"a"}, {"v"}),
                            op_node("Scratch", {"x"}, {"b"}), op_node("Inc", {"b"}, {"c"}),
                            op_node("Inc", {"v"}, {"d"})},
                           {"d", "c"});
  auto exec = make(m, backend);
  auto out = exec->run(input_x(1, 10.0f));
  ASSERT_TRUE(out.has_value()) << out.status().message();
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*out)[0].second.data<float>()[i], 12.0f + i);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*out)[1].second.data<float>()[i], 12.0f + i);
  EXPECT_EQ(exec->last_run_stats().pool_bytes, 3 * 64);
}

// Later runs of a shape take their buffers from an arena planned from the first run's
// lifetimes: the results stay right (the view of `a` must survive Scratch's temporary, which
// now lands in the arena), the arena is no larger than the first run's live peak, and a second
// batch size gets its own plan in the same arena without disturbing the results.
TEST(Executor, PlannedArenaKeepsResultsAcrossRunsAndShapes) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"}), op_node("View", {"a"}, {"v"}),
                            op_node("Scratch", {"x"}, {"b"}), op_node("Inc", {"b"}, {"c"}),
                            op_node("Inc", {"v"}, {"d"})},
                           {"d", "c"});
  auto exec = make(m, backend);
  std::vector<int64_t> pool;
  for (int64_t batch : {1, 1, 1, 40, 40, 1, 40, 1, 40}) {
    auto out = exec->run(input_x(batch, 10.0f));
    ASSERT_TRUE(out.has_value()) << out.status().message();
    for (int64_t i = 0; i < 4 * batch; ++i) {
      EXPECT_EQ((*out)[0].second.data<float>()[i], 12.0f + i) << "batch " << batch;
      EXPECT_EQ((*out)[1].second.data<float>()[i], 12.0f + i) << "batch " << batch;
    }
    pool.push_back(exec->last_run_stats().pool_bytes);
  }
  EXPECT_EQ(pool[0], 3 * 64);             // recorded: the live peak, three 64-byte buffers
  EXPECT_LE(pool[1], pool[0]);            // the arena of batch 1
  EXPECT_EQ(pool[4], 3 * 640);            // batch 40 (640 bytes per tensor) widened it
  for (size_t i = 5; i < pool.size(); ++i) EXPECT_EQ(pool[i], pool[4]) << i;  // no new records
}

// A recording run hands the buffer of a dead value (up to 4 MiB) to the next request of its
// exact size, instead of mapping and faulting in a fresh one, and counts it in its pool bytes
// while it waits; another size does not get it.
TEST(PoolAllocator, RecordingRunReusesDeadBuffersOfTheirSize) {
  PoolAllocator pool;
  pool.begin_run({1});
  const ir::Shape mib{256 * 1024};  // 1 MiB of floats
  const ir::Tensor a = pool.allocate(DType::kFloat32, mib);
  std::vector<Block*> blocks = pool.take_fresh();
  const float* at = a.data<float>();
  pool.release(blocks[0]);
  EXPECT_EQ(pool.pool_bytes(), int64_t{1} << 20);
  const ir::Tensor other = pool.allocate(DType::kFloat32, {1000});
  EXPECT_NE(other.data<float>(), at);
  const ir::Tensor b = pool.allocate(DType::kFloat32, mib);
  EXPECT_EQ(b.data<float>(), at);
  EXPECT_EQ(pool.pool_bytes(), (int64_t{1} << 20) + 4032);  // 4,000 bytes rounded to 64
  for (Block* block : pool.take_fresh()) pool.release(block);
  pool.end_run(true);
}

// Scratch buffers go back to the pool; an unconsumed second output is freed at once.
TEST(Executor, ScratchAndUnusedOutputsAreReturned) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Scratch", {"x"}, {"a"}),
                            op_node("Two", {"a"}, {"b", "unused"}), op_node("Inc", {"b"}, {"c"})},
                           {"c"});
  auto exec = make(m, backend);
  auto out = exec->run(input_x(4));
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ((*out)[0].second.data<float>()[0], 3.0f);
  // Live at most: a, b and unused (during Two) = 3 tensors of 64 bytes.
  EXPECT_EQ(exec->last_run_stats().peak_live_bytes, 3 * 64);
}

// Nodes listed out of order run in dependency order; initializers are passed in place.
TEST(Executor, TopologicalOrderAndBorrowedInitializers) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"b"}, {"c"}), op_node("Peek", {"w"}, {"b"})}, {"c"});
  m.graph.nodes[1].inputs = {"w"};
  m.graph.set_initializer("w", ir::make_tensor<float>({2}, {5, 6}));
  m.graph.inputs.clear();
  auto exec = make(m, backend, {.optimize = false});  // not folded: the kernels see `w`
  auto out = exec->run({});
  ASSERT_TRUE(out.has_value()) << out.status().message();
  EXPECT_EQ((*out)[0].second.data<float>()[1], 8.0f);
  ASSERT_EQ(backend.seen.size(), 1u);
  EXPECT_EQ(backend.seen[0], m.graph.initializer("w")->raw());
  EXPECT_EQ(exec->last_run_stats().weight_bytes, 8);
}

// A graph that is no DAG fails at creation, naming the fault, whether its nodes come in file
// order or not: a value given twice, a cycle, a graph output nothing gives.
TEST(Executor, BrokenGraphsFailNamingTheFault) {
  TestBackend backend;
  auto fails_with = [&](const ir::Model& m, const std::string& what) {
    auto exec = Executor::create(m, backend);
    ASSERT_FALSE(exec.has_value()) << what;
    EXPECT_NE(exec.status().message().find(what), std::string::npos) << exec.status().message();
  };
  fails_with(model_with({op_node("Inc", {"x"}, {"a"}), op_node("Inc", {"x"}, {"a"})}, {"a"}),
             "two producers");
  fails_with(model_with({op_node("Inc", {"x"}, {"a"}), op_node("Inc", {"a"}, {"x"})}, {"a"}),
             "two producers");
  fails_with(model_with({op_node("Inc", {"b"}, {"a"}), op_node("Inc", {"a"}, {"b"})}, {"a"}),
             "cycle");
  fails_with(model_with({op_node("Inc", {"x"}, {"a"})}, {"z"}), "'z' is produced by no node");
}

// A Constant node is no step: its value is made once, when the plan is, and every run reads
// that one tensor (the test backend makes no Constant kernel: `created` counts the others).
TEST(Executor, ConstantNodeValuesAreHeldLikeInitializers) {
  TestBackend backend;
  ir::Node constant = op_node("Constant", {}, {"w"});
  ir::Attribute value;
  value.name = "value";
  value.type = ir::AttrType::kTensor;
  value.t = ir::make_tensor<float>({2}, {5, 6});
  constant.attributes.push_back(value);
  ir::Model m =
      model_with({op_node("Inc", {"b"}, {"c"}), op_node("Peek", {"w"}, {"b"}), constant}, {"c"});
  m.graph.inputs.clear();
  auto exec = make(m, backend, {.optimize = false});  // not folded: the kernels see `w`
  EXPECT_EQ(backend.created, 2);
  for (int run = 0; run < 2; ++run) {
    auto out = exec->run({});
    ASSERT_TRUE(out.has_value()) << out.status().message();
    EXPECT_EQ((*out)[0].second.data<float>()[1], 8.0f);
    EXPECT_EQ(exec->last_run_stats().steps, 2);
  }
  ASSERT_EQ(backend.seen.size(), 2u);
  EXPECT_EQ(backend.seen[0], backend.seen[1]);
}

class Recorder final : public Observer {
 public:
  explicit Recorder(std::vector<std::string> want) : want_(std::move(want)) {}
  std::vector<std::string> wanted(const ir::Graph&) override {
    ++asked;
    return want_;
  }
  Status observe(const ObservedTensor& t) override {
    order.push_back(t.name);
    first_value[t.name] = t.host->data<float>()[0];
    max[t.name] = t.stats.minmax().max;
    producers[t.name] = t.producer ? t.producer->op_type : "";
    return Status::ok();
  }
  int asked = 0;
  std::vector<std::string> order;
  std::map<std::string, float> first_value;
  std::map<std::string, double> max;
  std::map<std::string, std::string> producers;

 private:
  std::vector<std::string> want_;
};

TEST(Executor, ObserversSeeWantedValuesInOrderAndAreAskedOnce) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"}), op_node("View", {"a"}, {"v"}),
                            op_node("Inc", {"v"}, {"b"})},
                           {"b"});
  auto exec = make(m, backend);
  Recorder r1({"b", "x", "v"}), r2({"a"});
  Observer* obs[] = {&r1, &r2};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(exec->run(input_x(2), obs).has_value());
  EXPECT_EQ(r1.asked, 1);
  EXPECT_EQ(r2.asked, 1);
  ASSERT_EQ(r1.order.size(), 9u);
  EXPECT_EQ(r1.order[0], "x");
  EXPECT_EQ(r1.order[1], "v");
  EXPECT_EQ(r1.order[2], "b");
  EXPECT_EQ(r2.order.size(), 3u);
  EXPECT_EQ(r1.first_value["x"], 0.0f);
  EXPECT_EQ(r1.first_value["v"], 1.0f);
  EXPECT_EQ(r1.max["b"], 9.0);
  EXPECT_EQ(r1.producers["x"], "");
  EXPECT_EQ(r1.producers["b"], "Inc");
  Recorder bad({"nope"});
  Observer* b[] = {&bad};
  auto e = exec->run(input_x(2), b);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("'nope'"), std::string::npos);
}

TEST(Executor, UnsupportedOpsAreListedTogether) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Zeta", {"x"}, {"a"}), op_node("Inc", {"a"}, {"b"}),
                            op_node("Alpha", {"b"}, {"c"}), op_node("Zeta", {"c"}, {"d"})},
                           {"d"});
  EXPECT_EQ(unsupported_ops(m, backend), (std::vector<std::string>{"Alpha", "Zeta"}));
  auto e = Executor::create(m, backend);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(e.status().message().find("Alpha, Zeta"), std::string::npos) << e.status().message();
}

TEST(Executor, InputValidationNamesTheInputAndShapes) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"})}, {"a"});
  auto exec = make(m, backend);
  auto expect_error = [&](const NamedTensors& in, std::vector<std::string> parts) {
    auto r = exec->run(in);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    for (const auto& p : parts) {
      EXPECT_NE(r.status().message().find(p), std::string::npos) << r.status().message();
    }
  };
  expect_error({}, {"missing input 'x'", "[batch, 4]"});
  NamedTensors unknown = input_x(1);
  unknown.emplace_back("y", ir::Tensor(DType::kFloat32, {1}));
  expect_error(unknown, {"unknown input 'y'"});
  NamedTensors wrong_dim;
  wrong_dim.emplace_back("x", ir::Tensor(DType::kFloat32, {2, 5}));
  expect_error(wrong_dim, {"'x'", "[2, 5]", "[batch, 4]"});
  NamedTensors wrong_rank;
  wrong_rank.emplace_back("x", ir::Tensor(DType::kFloat32, {4}));
  expect_error(wrong_rank, {"'x'", "[4]", "[batch, 4]"});
  NamedTensors wrong_type;
  wrong_type.emplace_back("x", ir::Tensor(DType::kInt64, {1, 4}));
  expect_error(wrong_type, {"'x'", "int64", "float32"});
  EXPECT_TRUE(exec->run(input_x(3)).has_value());  // still usable
}

TEST(Executor, KernelErrorsNameTheNodeAndLeaveTheExecutorUsable) {
  TestBackend backend;
  ir::Model m = model_with({op_node("Inc", {"x"}, {"a"}), op_node("Fail", {"a"}, {"b"})}, {"b"});
  auto exec = make(m, backend);
  for (int i = 0; i < 2; ++i) {
    auto r = exec->run(input_x(1));
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.status().message().find("Fail node 'Fail_b'"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("boom"), std::string::npos);
  }
}

}  // namespace
}  // namespace ptq::runtime
