// calibration::calibrate() on small models built here, against an independent reference: the
// model's tensors computed by one plain run (no observers), fed to the serial reference
// statistics of calibrators/histogram.cpp. Also batch/order/thread invariance, the sharded
// two-pass flow, progress, and the non-finite rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "calib_test_util.h"
#include "ptq/calibration.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using testing::TempDir;

struct Fixture {
  ir::Model model;
  std::unique_ptr<runtime::Backend> backend;
  std::unique_ptr<runtime::Executor> executor;
};

Fixture make_fixture(const TempDir& dir, int threads = 1, uint64_t seed = 1) {
  Fixture f;
  f.model = testing::save_and_load(testing::residual_model(seed),
                                   dir / ("model" + std::to_string(seed) + ".onnx"));
  f.backend = runtime::make_cpu_backend();
  auto e = runtime::Executor::create(f.model, *f.backend, {.threads = threads});
  EXPECT_TRUE(e.has_value()) << e.status().message();
  f.executor = std::move(*e);
  return f;
}

data::Dataset open_data(const std::string& npy, const ir::Model& model, int64_t batch,
                        bool shuffle = false, uint64_t seed = 0) {
  data::DatasetSpec spec;
  spec.sources.push_back({"", npy});
  spec.batch = batch;
  spec.shuffle = shuffle;
  spec.seed = seed;
  auto ds = data::Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_TRUE(ds->bind(model.graph).is_ok());
  return std::move(*ds);
}

std::string write_samples(const TempDir& dir, const std::string& name, const ir::Tensor& t) {
  const std::string path = dir / name;
  EXPECT_TRUE(data::save_npy(path, t).is_ok());
  return path;
}

// The reference: every tensor of one plain run over all samples, through the serial
// statistics, then the method.
calib::CalibrationTable reference_table(Fixture& f, const ir::Tensor& samples,
                                        const calib::MethodConfig& method) {
  auto outs = f.executor->run({{"x", samples.view()}});
  EXPECT_TRUE(outs.has_value()) << outs.status().message();
  std::vector<std::pair<std::string, const ir::Tensor*>> tensors{{"x", &samples}};
  for (const auto& [name, t] : *outs) tensors.emplace_back(name, &t);
  calib::Collector c;
  for (const auto& [name, t] : tensors) {
    EXPECT_TRUE(c.add_range(name, t->span<float>(), {0, samples.dim(0)}).is_ok());
  }
  EXPECT_TRUE(c.finish_ranges().is_ok());
  for (const auto& [name, t] : tensors)
    EXPECT_TRUE(c.add_histogram(name, t->span<float>()).is_ok());
  auto table = c.table(method);
  EXPECT_TRUE(table.has_value()) << table.status().message();
  return std::move(*table);
}

void expect_same_range(const calib::TensorRange& a, const calib::TensorRange& b,
                       const std::string& name) {
  EXPECT_EQ(a.amax, b.amax) << name;
  EXPECT_EQ(a.min, b.min) << name;
  EXPECT_EQ(a.max, b.max) << name;
  EXPECT_EQ(a.count, b.count) << name;
  EXPECT_EQ(a.nonfinite, b.nonfinite) << name;
  EXPECT_EQ(a.hist_max, b.hist_max) << name;
  EXPECT_EQ(a.histogram, b.histogram) << name;
}

// The table with the fields that legitimately depend on the batch size cleared.
std::string batch_free_json(calib::CalibrationTable t) {
  t.run.batch = 0;
  for (auto& [name, shape] : t.model.inputs) shape.at(0) = 0;
  return calib::json_cache_string(t);
}

TEST(Calibrate, EveryTensorMatchesTheSerialReference) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  const ir::Tensor samples = testing::residual_samples(20, 42);
  const std::string npy = write_samples(dir, "x.npy", samples);
  for (const char* method : {"entropy", "percentile", "mse", "minmax"}) {
    CalibrationOptions o;
    o.method.name = method;
    o.all_tensors = true;
    data::Dataset ds = open_data(npy, f.model, 3);
    auto table = calibrate(f.model, *f.executor, ds, o);
    ASSERT_TRUE(table.has_value()) << table.status().message();
    const calib::CalibrationTable ref = reference_table(f, samples, o.method);
    EXPECT_EQ(table->method, method);
    ASSERT_EQ(table->tensors.size(), 4u);
    for (const auto& [name, r] : ref.tensors) {
      ASSERT_NE(table->find(name), nullptr) << name;
      calib::TensorRange expected = r;
      if (o.method.name == "minmax") {  // one pass: no histogram is collected
        expected.histogram.clear();
        expected.hist_max = 0.0;
      }
      expect_same_range(*table->find(name), expected, name + " " + method);
    }
  }
}

TEST(Calibrate, RecordsModelIdentityAndRun) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  const std::string npy = write_samples(dir, "x.npy", testing::residual_samples(10, 3));
  data::Dataset ds = open_data(npy, f.model, 4);
  CalibrationOptions o;
  o.method = {"percentile", 99.9};
  o.date = "2024-05-01T12:00:00Z";
  o.backend = "cpu";
  auto t = calibrate(f.model, *f.executor, ds, o);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->model.graph_sha256, onnx::graph_hash(f.model));
  EXPECT_EQ(t->model.opset, 13);
  ASSERT_EQ(t->model.inputs.size(), 1u);
  EXPECT_EQ(t->model.inputs[0].first, "x");
  // batches of 4, 4, 2: the batch dim varied.
  EXPECT_EQ(t->model.inputs[0].second, (std::vector<int64_t>{-1, 16, 4, 4}));
  EXPECT_EQ(t->run.samples, 10);
  EXPECT_EQ(t->run.batch, 4);
  EXPECT_EQ(t->run.backend, "cpu");
  EXPECT_EQ(t->run.date, "2024-05-01T12:00:00Z");
  EXPECT_EQ(t->run.ptqkit_version, ptqkit_version());
  EXPECT_EQ(t->method_params, (std::map<std::string, double>{{"percentile", 99.9}}));
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(iso8601_utc(1714564800), "2024-05-01T12:00:00Z");
}

TEST(Calibrate, DefaultTensorsAreThePlannersQuantizableActivations) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  const std::string npy = write_samples(dir, "x.npy", testing::residual_samples(6, 5));
  data::Dataset ds = open_data(npy, f.model, 2);
  auto t = calibrate(f.model, *f.executor, ds, {});
  ASSERT_TRUE(t.has_value()) << t.status().message();
  auto expected = planner::quantizable_activations(f.model, {});
  ASSERT_TRUE(expected.has_value());
  ASSERT_FALSE(expected->empty());
  std::vector<std::string> got;
  for (const auto& [name, r] : t->tensors) got.push_back(name);
  EXPECT_EQ(got, *expected);
  CalibrationOptions all;
  all.all_tensors = true;
  auto names = calibration_tensors(f.model, all);
  ASSERT_TRUE(names.has_value());
  EXPECT_EQ(*names, (std::vector<std::string>{"c", "r", "x", "y"}));
}

TEST(Calibrate, SameTableForAnyBatchSizeOrderAndThreadCount) {
  TempDir dir;
  const std::string npy = write_samples(dir, "x.npy", testing::residual_samples(23, 9));
  std::string first;
  struct Case {
    int64_t batch;
    bool shuffle;
    int threads;
  };
  for (const Case& c : {Case{1, false, 1}, Case{7, false, 1}, Case{23, false, 1},
                        Case{7, true, 1}, Case{4, true, 2}, Case{64, false, 2}}) {
    Fixture f = make_fixture(dir, c.threads);
    data::Dataset ds = open_data(npy, f.model, c.batch, c.shuffle, 11);
    CalibrationOptions o;
    o.all_tensors = true;
    o.threads = c.threads;
    auto t = calibrate(f.model, *f.executor, ds, o);
    ASSERT_TRUE(t.has_value()) << t.status().message();
    const std::string json = batch_free_json(*t);
    if (first.empty()) {
      first = json;
    } else {
      EXPECT_EQ(json, first) << "batch " << c.batch << " shuffle " << c.shuffle << " threads "
                             << c.threads;
    }
  }
}

// `count` executors of the fixture's model on its backend (the first is the fixture's own).
std::vector<std::unique_ptr<runtime::Executor>> more_executors(Fixture& f, size_t count) {
  std::vector<std::unique_ptr<runtime::Executor>> more;
  while (more.size() + 1 < count) {
    auto e = runtime::Executor::create(f.model, *f.backend, {.threads = 1});
    EXPECT_TRUE(e.has_value()) << e.status().message();
    more.push_back(std::move(*e));
  }
  return more;
}

Expected<calib::CalibrationTable> calibrate_with(Fixture& f, size_t workers,
                                                 const data::Dataset& ds,
                                                 const CalibrationOptions& o) {
  const auto more = more_executors(f, workers);
  std::vector<runtime::Executor*> all{f.executor.get()};
  for (const auto& e : more) all.push_back(e.get());
  return calibrate(f.model, all, ds, o);
}

TEST(Calibrate, SameTableForAnyNumberOfWorkers) {
  TempDir dir;
  const std::string npy = write_samples(dir, "x.npy", testing::residual_samples(23, 12));
  Fixture f = make_fixture(dir);
  for (const char* method : {"entropy", "minmax"}) {
    std::string first;
    for (size_t workers : {1, 2, 3, 5, 9}) {
      data::Dataset ds = open_data(npy, f.model, 3, true, 4);  // 8 batches
      CalibrationOptions o;
      o.method.name = method;
      o.all_tensors = true;
      int64_t last = 0, calls = 0;
      int pass = 1;
      o.progress = [&](const Progress& p) {  // one call at a time, counting up in each pass
        if (p.pass != pass) last = 0;
        pass = p.pass;
        EXPECT_GT(p.samples_done, last) << "workers " << workers;
        last = p.samples_done;
        ++calls;
        return Status::ok();
      };
      auto t = calibrate_with(f, workers, ds, o);
      ASSERT_TRUE(t.has_value()) << t.status().message();
      EXPECT_EQ(calls, std::string(method) == "minmax" ? 8 : 16) << "workers " << workers;
      EXPECT_EQ(last, 23) << "workers " << workers;
      const std::string json = calib::json_cache_string(*t);
      if (first.empty()) first = json;
      EXPECT_EQ(json, first) << method << ", workers " << workers;
    }
  }
}

TEST(Calibrate, WorkersReportTheFirstFailingBatch) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  ir::Tensor samples = testing::residual_samples(24, 8);
  samples.data<float>()[4 * 256 + 9] = std::numeric_limits<float>::quiet_NaN();   // batch 1
  samples.data<float>()[19 * 256 + 2] = std::numeric_limits<float>::infinity();   // batch 6
  const std::string npy = write_samples(dir, "x.npy", samples);
  for (size_t workers : {1, 2, 3, 4, 3, 2}) {
    data::Dataset ds = open_data(npy, f.model, 3);
    auto t = calibrate_with(f, workers, ds, {});
    ASSERT_FALSE(t.has_value());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(t.status().message().find("sample 4 of"), std::string::npos)
        << "workers " << workers << ": " << t.status().message();
  }
}

TEST(Calibrate, MinMaxRunsOnePassAndProgressCountsSamples) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  const ir::Tensor samples = testing::residual_samples(10, 4);
  const std::string npy = write_samples(dir, "x.npy", samples);
  for (const char* method : {"minmax", "entropy"}) {
    data::Dataset ds = open_data(npy, f.model, 4);
    std::vector<Progress> seen;
    CalibrationOptions o;
    o.method.name = method;
    o.progress = [&](const Progress& p) {
      seen.push_back(p);
      return Status::ok();
    };
    auto t = calibrate(f.model, *f.executor, ds, o);
    ASSERT_TRUE(t.has_value()) << t.status().message();
    const int passes = std::string(method) == "minmax" ? 1 : 2;
    ASSERT_EQ(seen.size(), static_cast<size_t>(3 * passes));  // batches of 4, 4, 2 per pass
    for (size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i].passes, passes);
      EXPECT_EQ(seen[i].pass, static_cast<int>(i / 3) + 1);
      EXPECT_EQ(seen[i].samples_total, 10);
      EXPECT_EQ(seen[i].samples_done, std::min<int64_t>(10, 4 * static_cast<int64_t>(i % 3 + 1)));
    }
    EXPECT_EQ(t->has_histograms(), passes == 2);
  }
  // The min-max amax of the input is max |x| of the data.
  data::Dataset ds = open_data(npy, f.model, 4);
  CalibrationOptions o;
  o.method.name = "minmax";
  auto t = calibrate(f.model, *f.executor, ds, o);
  ASSERT_TRUE(t.has_value());
  double m = 0.0;
  for (float v : samples.span<float>()) m = std::max(m, std::fabs(static_cast<double>(v)));
  EXPECT_EQ(t->find("x")->amax, m);
}

TEST(Calibrate, ProgressCallbackCanAbort) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  const std::string npy = write_samples(dir, "x.npy", testing::residual_samples(10, 4));
  data::Dataset ds = open_data(npy, f.model, 2);
  int calls = 0;
  CalibrationOptions o;
  o.progress = [&](const Progress&) {
    return ++calls == 2 ? runtime_error("interrupted") : Status::ok();
  };
  auto t = calibrate(f.model, *f.executor, ds, o);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.status().message(), "interrupted");
  EXPECT_EQ(calls, 2);
}

TEST(Calibrate, ShardedTwoPhaseFlowEqualsOneRun) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  const ir::Tensor samples = testing::residual_samples(30, 21);
  const std::string all = write_samples(dir, "all.npy", samples);
  const std::vector<std::pair<int64_t, int64_t>> parts{{0, 7}, {7, 15}, {22, 8}};
  std::vector<std::string> shards;
  for (size_t k = 0; k < parts.size(); ++k) {
    shards.push_back(write_samples(dir, "shard" + std::to_string(k) + ".npy",
                                   testing::rows(samples, parts[k].first, parts[k].second)));
  }
  for (const char* method : {"entropy", "percentile", "mse"}) {
    CalibrationOptions o;
    o.method.name = method;
    o.all_tensors = true;
    data::Dataset whole = open_data(all, f.model, 5);
    auto one = calibrate(f.model, *f.executor, whole, o);
    ASSERT_TRUE(one.has_value()) << one.status().message();
    // Phase 1: ranges per shard, merged.
    std::vector<calib::CalibrationTable> ranges;
    for (const std::string& s : shards) {
      CalibrationOptions r = o;
      r.ranges_only = true;
      data::Dataset ds = open_data(s, f.model, 3);
      auto t = calibrate(f.model, *f.executor, ds, r);
      ASSERT_TRUE(t.has_value()) << t.status().message();
      EXPECT_EQ(t->method, "minmax");
      EXPECT_FALSE(t->has_histograms());
      ranges.push_back(std::move(*t));
    }
    auto common = calib::merge_tables(ranges);
    ASSERT_TRUE(common.has_value()) << common.status().message();
    // Phase 2: histograms per shard over the common ranges, merged.
    std::vector<calib::CalibrationTable> tables;
    for (const std::string& s : shards) {
      CalibrationOptions h = o;
      h.common_ranges = &*common;
      data::Dataset ds = open_data(s, f.model, 4);
      auto t = calibrate(f.model, *f.executor, ds, h);
      ASSERT_TRUE(t.has_value()) << t.status().message();
      tables.push_back(std::move(*t));
    }
    auto merged = calib::merge_calibrations(tables);
    ASSERT_TRUE(merged.has_value()) << merged.status().message();
    EXPECT_EQ(merged->method, method);
    EXPECT_EQ(merged->run.samples, 30);
    ASSERT_EQ(merged->tensors.size(), one->tensors.size());
    for (const auto& [name, r] : one->tensors) {
      ASSERT_NE(merged->find(name), nullptr);
      expect_same_range(*merged->find(name), r, name + " " + method);
    }
  }
}

TEST(Calibrate, CommonRangesMustComeFromTheSameModelAndCoverTheData) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  Fixture other = make_fixture(dir, 1, 2);
  const std::string npy = write_samples(dir, "x.npy", testing::residual_samples(8, 1));
  CalibrationOptions r;
  r.ranges_only = true;
  data::Dataset ds = open_data(npy, other.model, 4);
  auto theirs = calibrate(other.model, *other.executor, ds, r);
  ASSERT_TRUE(theirs.has_value()) << theirs.status().message();
  CalibrationOptions h;
  h.common_ranges = &*theirs;
  data::Dataset ds2 = open_data(npy, f.model, 4);
  auto t = calibrate(f.model, *f.executor, ds2, h);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(t.status().message().find("another model"), std::string::npos) << t.status().message();

  // Ranges of fewer samples than the shard sees: T would not cover the data.
  const std::string small =
      write_samples(dir, "small.npy", testing::rows(testing::residual_samples(8, 1), 0, 1));
  data::Dataset ds3 = open_data(small, f.model, 1);
  auto mine = calibrate(f.model, *f.executor, ds3, r);
  ASSERT_TRUE(mine.has_value());
  h.common_ranges = &*mine;
  data::Dataset ds4 = open_data(npy, f.model, 4);
  auto u = calibrate(f.model, *f.executor, ds4, h);
  ASSERT_FALSE(u.has_value());
  EXPECT_NE(u.status().message().find("below this data's max"), std::string::npos)
      << u.status().message();
}

TEST(Calibrate, NonFiniteValueNamesTensorAndSourceSample) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  ir::Tensor samples = testing::residual_samples(20, 8);
  samples.data<float>()[13 * 256 + 77] = std::numeric_limits<float>::quiet_NaN();
  const std::string npy = write_samples(dir, "x.npy", samples);
  for (bool shuffle : {false, true}) {
    data::Dataset ds = open_data(npy, f.model, 3, shuffle, 5);
    auto t = calibrate(f.model, *f.executor, ds, {});
    ASSERT_FALSE(t.has_value());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidInput);
    const std::string& msg = t.status().message();
    EXPECT_NE(msg.find("tensor 'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sample 13 of"), std::string::npos) << msg;
    EXPECT_NE(msg.find("x.npy"), std::string::npos) << msg;
  }
}

TEST(Calibrate, IgnoreNonFiniteCountsAndSkips) {
  TempDir dir;
  Fixture f = make_fixture(dir);
  ir::Tensor samples = testing::residual_samples(12, 8);
  float* p = samples.data<float>();
  p[5] = std::numeric_limits<float>::quiet_NaN();
  p[700] = std::numeric_limits<float>::infinity();
  p[3000] = -std::numeric_limits<float>::infinity();
  const std::string npy = write_samples(dir, "x.npy", samples);
  data::Dataset ds = open_data(npy, f.model, 5);
  CalibrationOptions o;
  o.ignore_nonfinite = true;
  o.all_tensors = true;
  auto t = calibrate(f.model, *f.executor, ds, o);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_TRUE(t->run.ignore_nonfinite);
  const calib::TensorRange& x = *t->find("x");
  EXPECT_EQ(x.nonfinite, 3);
  EXPECT_EQ(x.count, samples.size() - 3);
  // The finite values alone give the range.
  double m = 0.0;
  for (float v : samples.span<float>()) {
    if (std::isfinite(v)) m = std::max(m, std::fabs(static_cast<double>(v)));
  }
  EXPECT_EQ(x.hist_max, m);
  // The conv spreads the NaN/Inf over its outputs: they are counted too.
  EXPECT_GT(t->find("c")->nonfinite, 0);
}

}  // namespace
}  // namespace ptq::calibration
