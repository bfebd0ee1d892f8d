// compare::compare on a small graph built in code and quantized by the planner, with data from
// a .npy: the traced tensors, their agreement with the output figures, and executors reused by a
// second comparison.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include "planner/builder.h"
#include "ptq/compare.h"
#include "ptq/data.h"
#include "ptq/planner.h"

namespace ptq::compare {
namespace {

namespace fs = std::filesystem;

//   x ─► conv1 ─► c1 ─► Relu ─► r1 ─► conv2 ─► y
class CompareLib : public ::testing::Test {
 protected:
  void SetUp() override {
    b_.input("x", {4, 16, 6, 6});
    b_.conv("conv1", "x", "c1", 16, 16);
    b_.node("Relu", "relu", {"c1"}, {"r1"});
    b_.conv("conv2", "r1", "y", 16, 16);
    b_.output("y");
    q_ = b_.model;
    ASSERT_TRUE(planner::quantize(q_, b_.table(), {}).has_value());
    dir_ = fs::temp_directory_path() / ("ptq_compare_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ASSERT_TRUE(data::save_npy(dir_ / "x.npy", b_.random_tensor({8, 16, 6, 6}, 1.0f)).is_ok());
    backend_ = runtime::make_cpu_backend();
  }
  void TearDown() override { fs::remove_all(dir_); }

  data::Dataset dataset(const ir::Model& m) {
    data::DatasetSpec spec;
    spec.sources = {{"", dir_ / "x.npy", nullptr}};
    spec.batch = 4;
    auto ds = data::Dataset::open(spec);
    EXPECT_TRUE(ds.has_value()) << ds.status().message();
    EXPECT_TRUE(ds->bind(m.graph).is_ok());
    return std::move(*ds);
  }
  std::unique_ptr<runtime::Executor> executor(const ir::Model& m) {
    auto e = runtime::Executor::create(m, *backend_);
    EXPECT_TRUE(e.has_value()) << e.status().message();
    return std::move(*e);
  }

  planner::testing::Builder b_;
  ir::Model q_;
  fs::path dir_;
  std::unique_ptr<runtime::Backend> backend_;
};

TEST_F(CompareLib, TracesEveryTensorAndAgreesWithTheOutputFigures) {
  data::Dataset da = dataset(b_.model), db = dataset(q_);
  auto ea = executor(b_.model), eb = executor(q_);
  const Side a{b_.model, *ea, da, "fp32"}, q{q_, *eb, db, "int8"};
  int64_t progress = 0;
  Options options;
  options.per_tensor = true;
  options.progress = [&](int64_t n) { progress = n; };
  auto r = compare(a, q, options);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(r->samples, 8);
  EXPECT_EQ(progress, 8);
  ASSERT_EQ(r->tensors.size(), 4u);  // x (dq), c1, r1 (dq), y
  EXPECT_EQ(r->tensors[0].pair.reference, "x");
  EXPECT_EQ(r->tensors[3].pair.reference, "y");
  EXPECT_EQ(r->tensors[3].inputs, std::vector<std::string>{"r1"});
  EXPECT_EQ(r->tensors[3].agreement.count(), 8 * 16 * 6 * 6);
  EXPECT_NEAR(r->tensors[3].agreement.sqnr_db(), r->outputs[0].agreement.sqnr_db(), 1e-9);
  for (const TensorTrace& t : r->tensors) {
    EXPECT_TRUE(std::isfinite(t.agreement.sqnr_db())) << t.pair.reference;  // made-up ranges
  }

  // The same executors again (a new tracer, perhaps at the old one's address): the same sums.
  data::Dataset da2 = dataset(b_.model), db2 = dataset(q_);
  auto again = compare({b_.model, *ea, da2, "fp32"}, {q_, *eb, db2, "int8"}, options);
  ASSERT_TRUE(again.has_value()) << again.status().message();
  EXPECT_EQ(result_json(*again), result_json(*r));
}

TEST_F(CompareLib, AFloatModelAgainstItselfIsExactEverywhere) {
  data::Dataset da = dataset(b_.model), db = dataset(b_.model);
  auto ea = executor(b_.model), eb = executor(b_.model);
  Options options;
  options.per_tensor = true;
  auto r = compare({b_.model, *ea, da, "fp32"}, {b_.model, *eb, db, "fp32"}, options);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  ASSERT_EQ(r->tensors.size(), 3u);  // c1, r1, y: the input is fed the same
  for (const TensorTrace& t : r->tensors) {
    EXPECT_TRUE(std::isinf(t.agreement.sqnr_db())) << t.pair.reference;
    EXPECT_FALSE(t.jump);
  }
  EXPECT_TRUE(check_gate(*r, {.min_sqnr_db = 1000.0, .min_cosine = 1.0}).is_ok());
}

}  // namespace
}  // namespace ptq::compare
