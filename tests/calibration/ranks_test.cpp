// calibrate() split over ranks (CalibrationOptions::comm; here threads standing for MPI ranks,
// tests/common/thread_ranks.h): rank 0's table is one process's, byte for byte, for every
// method, any number of ranks (more ranks than batches included) and a short last batch; the
// error of a failing batch reaches every rank and is the one a single process reports.
#include <gtest/gtest.h>

#include <limits>

#include "calib_test_util.h"
#include "common/thread_ranks.h"
#include "ptq/calib_cache.h"
#include "ptq/calibration.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using testing::TempDir;

// One rank's run: its own backend, executor and dataset, as a process of its own would have.
Expected<calib::CalibrationTable> run_rank(const ir::Model& model, const std::string& npy,
                                           CalibrationOptions o, dist::Communicator* comm) {
  std::unique_ptr<runtime::Backend> backend = runtime::make_cpu_backend();
  PTQ_ASSIGN_OR_RETURN(auto exec, runtime::Executor::create(model, *backend, {.threads = 1}));
  data::DatasetSpec spec;
  spec.sources.push_back({"", npy});
  spec.batch = 4;
  PTQ_ASSIGN_OR_RETURN(data::Dataset ds, data::Dataset::open(spec));
  PTQ_RETURN_IF_ERROR(ds.bind(model.graph));
  o.comm = comm;
  return calibrate(model, *exec, ds, o);
}

std::vector<Expected<calib::CalibrationTable>> run_ranks(int ranks, const ir::Model& model,
                                                         const std::string& npy,
                                                         const CalibrationOptions& o) {
  std::vector<Expected<calib::CalibrationTable>> out(static_cast<size_t>(ranks),
                                                     calib::CalibrationTable{});
  ptq::testing::ThreadRanks group(ranks);
  group.run([&](dist::Communicator& comm) {
    out[static_cast<size_t>(comm.rank())] = run_rank(model, npy, o, &comm);
  });
  return out;
}

TEST(CalibrateOverRanks, RankZerosTableIsOneProcessesForAnyRankCount) {
  TempDir dir;
  const ir::Model model = testing::save_and_load(testing::residual_model(3), dir / "m.onnx");
  const std::string npy = dir / "x.npy";
  ASSERT_TRUE(data::save_npy(npy, testing::residual_samples(22, 5)).is_ok());  // 6 batches
  for (const char* method : {"mse", "entropy", "percentile", "minmax"}) {
    CalibrationOptions o;
    o.method.name = method;
    o.all_tensors = true;
    o.date = "2024-01-01T00:00:00Z";
    auto one = run_rank(model, npy, o, nullptr);
    ASSERT_TRUE(one.has_value()) << one.status().message();
    const std::string expected = calib::json_cache_string(*one);
    for (int ranks : {1, 2, 3, 7}) {
      auto out = run_ranks(ranks, model, npy, o);
      ASSERT_TRUE(out[0].has_value()) << out[0].status().message();
      EXPECT_EQ(calib::json_cache_string(*out[0]), expected) << method << ", " << ranks << " ranks";
      for (size_t r = 1; r < out.size(); ++r) {
        ASSERT_TRUE(out[r].has_value()) << out[r].status().message();
        EXPECT_TRUE(out[r]->tensors.empty());  // only rank 0 holds the table
      }
    }
  }
}

TEST(CalibrateOverRanks, RangesOnlyRunEqualsOneProcesses) {
  TempDir dir;
  const ir::Model model = testing::save_and_load(testing::residual_model(4), dir / "m.onnx");
  const std::string npy = dir / "x.npy";
  ASSERT_TRUE(data::save_npy(npy, testing::residual_samples(13, 6)).is_ok());
  CalibrationOptions o;
  o.ranges_only = true;
  auto one = run_rank(model, npy, o, nullptr);
  ASSERT_TRUE(one.has_value()) << one.status().message();
  auto out = run_ranks(2, model, npy, o);
  ASSERT_TRUE(out[0].has_value()) << out[0].status().message();
  EXPECT_EQ(calib::json_cache_string(*out[0]), calib::json_cache_string(*one));
}

TEST(CalibrateOverRanks, EveryRankReportsTheFirstFailingBatch) {
  TempDir dir;
  const ir::Model model = testing::save_and_load(testing::residual_model(2), dir / "m.onnx");
  ir::Tensor samples = testing::residual_samples(24, 8);
  samples.data<float>()[5 * 256 + 9] = std::numeric_limits<float>::quiet_NaN();  // batch 1
  samples.data<float>()[17 * 256 + 2] = std::numeric_limits<float>::infinity();  // batch 4
  const std::string npy = dir / "x.npy";
  ASSERT_TRUE(data::save_npy(npy, samples).is_ok());
  const CalibrationOptions o;
  auto one = run_rank(model, npy, o, nullptr);
  ASSERT_FALSE(one.has_value());
  EXPECT_NE(one.status().message().find("sample 5 of"), std::string::npos)
      << one.status().message();
  for (int ranks : {2, 3}) {  // batch 1 is rank 1's; batch 4 rank 0's (2 ranks) or 1's (3)
    for (const auto& r : run_ranks(ranks, model, npy, o)) {
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.status().code(), one.status().code());
      EXPECT_EQ(r.status().message(), one.status().message()) << ranks << " ranks";
    }
  }
}

}  // namespace
}  // namespace ptq::calibration
