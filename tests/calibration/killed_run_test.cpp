// A calibration killed while it runs leaves the caches of an earlier run as they were: nothing
// is written before the table is complete, and each cache is then replaced whole
// (util::AtomicFile). The second run is a forked child whose progress callback, once pass 2
// has begun, tells the parent and then waits like a data source that stalls; the parent kills
// it there. Everything runs on one thread, so the child inherits no thread pool.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "calib_test_util.h"
#include "common/files.h"
#include "ptq/calibration.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using ptq::testing::read_file;
using testing::TempDir;

// The executor borrows the model, so a run lives at one address (the heap) from its start.
struct Calibration {
  ir::Model model;
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
  std::optional<data::Dataset> data;
};

std::unique_ptr<Calibration> make_run(const TempDir& dir) {
  auto run = std::make_unique<Calibration>();
  run->model = testing::save_and_load(testing::residual_model(), dir / "model.onnx");
  const std::string npy = dir / "x.npy";
  EXPECT_TRUE(data::save_npy(npy, testing::residual_samples(64, 3)).is_ok());
  data::DatasetSpec spec;
  spec.sources.push_back({"", npy});
  spec.batch = 8;
  auto ds = data::Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_TRUE(ds->bind(run->model.graph).is_ok());
  run->data.emplace(std::move(*ds));
  run->backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(run->model, *run->backend, {.threads = 1});
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  run->executor = std::move(*exec);
  return run;
}

// Calibrates and writes the JSON and TensorRT caches, as `ptq calibrate -o … --trt-cache …`.
Status calibrate_into(Calibration& run, const std::string& method, const TempDir& dir,
                      const ProgressFn& progress) {
  CalibrationOptions o;
  o.method.name = method;
  o.progress = progress;
  PTQ_ASSIGN_OR_RETURN(calib::CalibrationTable t,
                       calibrate(run.model, *run.executor, *run.data, o));
  PTQ_RETURN_IF_ERROR(calib::write_cache(t, dir / "c.json", {.format = calib::CacheFormat::kJson}));
  calib::WriteOptions trt{.format = calib::CacheFormat::kTensorRT};
  trt.trt.algorithm = "EntropyCalibration2";
  return calib::write_cache(t, dir / "c.cache", trt);
}

TEST(KilledRun, LeavesTheEarlierCachesIntact) {
  TempDir dir;
  const std::unique_ptr<Calibration> run = make_run(dir);
  ASSERT_TRUE(calibrate_into(*run, "minmax", dir, nullptr).is_ok());
  const std::string before = read_file(dir / "c.json"), before_trt = read_file(dir / "c.cache");
  ASSERT_FALSE(before.empty());
  ASSERT_FALSE(before_trt.empty());

  int in_pass2[2];
  ASSERT_EQ(::pipe(in_pass2), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(in_pass2[0]);
    auto stall = [&](const Progress& p) -> Status {
      if (p.pass == 2) {
        const char c = '2';
        if (::write(in_pass2[1], &c, 1) != 1) ::_exit(2);
        while (true) ::pause();
      }
      return Status::ok();
    };
    ::_exit(calibrate_into(*run, "entropy", dir, stall).is_ok() ? 0 : 1);
  }
  ::close(in_pass2[1]);
  char c = 0;
  const ssize_t got = ::read(in_pass2[0], &c, 1);
  ::close(in_pass2[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_EQ(got, 1) << "the run ended before pass 2 (status " << status << ")";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  EXPECT_EQ(read_file(dir / "c.json"), before);
  EXPECT_EQ(read_file(dir / "c.cache"), before_trt);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    files.push_back(e.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"c.cache", "c.json", "model.onnx", "x.npy"}));
}

}  // namespace
}  // namespace ptq::calibration
