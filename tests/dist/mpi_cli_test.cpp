// `ptq` under mpirun (docs/DISTRIBUTED.md) against the same command run alone: calibration
// split over 1, 2 and 3 ranks writes the same cache bytes, a sensitivity sweep the same report
// and partial model, and a bad record on rank 1 ends the job with its error from rank 0 and
// nothing written. Ranks are few and the model the small example: mpirun's start dominates.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "ptq/data.h"

namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;
using ptq::testing::PtqResult;
using ptq::testing::run_program;
using ptq::testing::run_ptq;

std::string example(const std::string& file) {
  return std::string(PTQ_SOURCE_DIR) + "/examples/" + file;
}

// `ptq args...` on `ranks` ranks of one machine.
PtqResult mpirun(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> all{"--oversubscribe",
                               "--bind-to",
                               "none",
                               "-np",
                               std::to_string(ranks),
                               ptq::testing::ptq_binary().string()};
  all.insert(all.end(), args.begin(), args.end());
  return run_program("mpirun", all);
}

class MpiCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ptq_mpi_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);  // the caches' date
    // CI runs as root; Open MPI refuses that unless both are set (for this test's mpirun only).
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    // Open MPI's components stay loaded at exit, so LeakSanitizer can name them (lsan.supp).
    ::setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 1);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// 44 samples in batches of 8: six batches, the last of 4, so the ranks' shares differ in size
// and the fed batch dim (-1: batches differ) must come out as one process records it.
std::vector<std::string> calibrate_args(const std::string& out, const std::string& method) {
  return {"calibrate",   example("fashion_cnn.onnx"),
          "--data",      example("data/calib.npy"),
          "--samples",   "44",
          "--batch",     "8",
          "--method",    method,
          "--threads",   "1",
          "-o",          out,
          "--trt-cache", out + ".cache",
          "--quiet"};
}

TEST_F(MpiCli, CalibrationCacheIsByteIdenticalForAnyRankCount) {
  // mse: a histogram method (both passes); minmax: one pass. Few ranks: mpirun's start costs.
  for (const std::string method : {"mse", "minmax"}) {
    const std::string alone = path("alone_" + method + ".json");
    const PtqResult a = run_ptq(calibrate_args(alone, method));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    for (int ranks : method == "mse" ? std::vector<int>{1, 2, 3} : std::vector<int>{2}) {
      const std::string out = path(method + "_" + std::to_string(ranks) + ".json");
      const PtqResult r = mpirun(ranks, calibrate_args(out, method));
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      EXPECT_EQ(read_file(out), read_file(alone)) << method << " on " << ranks << " ranks";
      EXPECT_EQ(read_file(out + ".cache"), read_file(alone + ".cache"))
          << method << " on " << ranks;
    }
  }
}

TEST_F(MpiCli, QuantizeWritesTheSameModelAsOneProcess) {
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{"quantize",  example("fashion_cnn.onnx"),
                                    "--data",    example("data/calib.npy"),
                                    "--samples", "32",
                                    "--batch",   "8",
                                    "--threads", "1",
                                    "-o",        out,
                                    "--quiet"};
  };
  const PtqResult a = run_ptq(args(path("alone.onnx")));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const PtqResult r = mpirun(2, args(path("two.onnx")));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_file(path("two.onnx")), read_file(path("alone.onnx")));
  EXPECT_EQ(read_file(path("two.calib.json")), read_file(path("alone.calib.json")));
}

// The report without its wall times.
nlohmann::json scores(const std::string& file) {
  nlohmann::json j = nlohmann::json::parse(read_file(file));
  for (const char* k :
       {"sweep_seconds", "float_pass_seconds", "sweep_cpu_seconds", "float_pass_cpu_seconds"}) {
    j.erase(k);
  }
  return j;
}

TEST_F(MpiCli, SensitivitySweepEqualsOneProcess) {
  const std::string cache = path("c.json");
  ASSERT_EQ(run_ptq(calibrate_args(cache, "minmax")).exit_code, 0);
  for (const std::string mode : {"only", "all-but"}) {
    auto args = [&](const std::string& stem) {
      return std::vector<std::string>{"sensitivity",
                                      example("fashion_cnn.onnx"),
                                      "--cache",
                                      cache,
                                      "--eval",
                                      example("data/test.npy"),
                                      "--eval-samples",
                                      "48",
                                      "--metric",
                                      "sqnr",
                                      "--mode",
                                      mode,
                                      "--target-drop",
                                      "35",
                                      "--threads",
                                      "1",
                                      "-o",
                                      path(stem + ".json"),
                                      "--write",
                                      path(stem + ".onnx"),
                                      "--quiet"};
    };
    const PtqResult a = run_ptq(args("alone_" + mode));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    for (int ranks : mode == "only" ? std::vector<int>{2, 3} : std::vector<int>{2}) {
      const std::string stem = mode + "_" + std::to_string(ranks);
      const PtqResult r = mpirun(ranks, args(stem));
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      EXPECT_EQ(scores(path(stem + ".json")), scores(path("alone_" + mode + ".json")))
          << mode << " on " << ranks << " ranks";
      EXPECT_EQ(read_file(path(stem + ".onnx")), read_file(path("alone_" + mode + ".onnx")));
    }
  }
}

TEST_F(MpiCli, BadRecordOnRankOneEndsTheJobWithItsError) {
  // A NaN in sample 9: batch 1 of 8, which rank 1 runs.
  auto t = ptq::data::load_npy(example("data/calib.npy"));
  ASSERT_TRUE(t.has_value());
  t->data<uint16_t>()[9 * 28 * 28 + 5] = 0x7e00;
  const std::string bad = path("bad.npy");
  ASSERT_TRUE(ptq::data::save_npy(bad, *t).is_ok());
  const std::string out = path("c.json");
  std::vector<std::string> args = calibrate_args(out, "mse");
  args[3] = bad;
  const PtqResult alone = run_ptq(args);
  ASSERT_EQ(alone.exit_code, 3) << alone.err;
  const PtqResult r = mpirun(2, args);
  EXPECT_NE(r.exit_code, 0);
  // One error line, rank 0's, saying what the single process says.
  EXPECT_NE(r.err.find(alone.err), std::string::npos) << r.err;
  size_t lines = 0;
  for (size_t at = r.err.find("ptq: error:"); at != std::string::npos;
       at = r.err.find("ptq: error:", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << r.err;
  EXPECT_NE(alone.err.find("sample 9 of"), std::string::npos) << alone.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".cache"));
}

}  // namespace
