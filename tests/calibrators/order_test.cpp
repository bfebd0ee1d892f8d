// Order independence (specs/calibrators.md): the same samples in batches of 1, 7 and 64,
// shuffled, through HostTensorStatistics on 1 and 2 threads give bit-identical histograms,
// amaxes and cache bytes.
#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

#include "ptq/calib_cache.h"
#include "ptq/calibrators.h"
#include "samples.h"
#include "tensor_statistics.h"

namespace ptq::calib {
namespace {

constexpr int64_t kSampleElems = 4 * 16 * 16;  // a batch of 64 spans two statistics chunks
constexpr size_t kSamples = 150;

struct Dataset {
  std::vector<std::vector<float>> x;  // per sample
};

Dataset make_dataset() {
  Dataset d;
  const std::vector<float> all =
      testing::make_samples(testing::Dist::kHeavyTail, kSamples * kSampleElems, 99);
  for (size_t s = 0; s < kSamples; ++s) {
    d.x.emplace_back(all.begin() + static_cast<int64_t>(s) * kSampleElems,
                     all.begin() + static_cast<int64_t>(s + 1) * kSampleElems);
  }
  return d;
}

// The observed tensors of a batch: the input (float32), its ReLU (float32, half exact zeros)
// and 3x + 1 in float16.
std::vector<std::pair<std::string, ir::Tensor>> observe(const Dataset& d,
                                                        std::span<const size_t> batch) {
  const int64_t n = static_cast<int64_t>(batch.size());
  ir::Tensor x(ir::DType::kFloat32, {n, 4, 16, 16});
  ir::Tensor relu(ir::DType::kFloat32, {n, 4, 16, 16});
  ir::Tensor half(ir::DType::kFloat16, {n, 4, 16, 16});
  for (int64_t b = 0; b < n; ++b) {
    const std::vector<float>& s = d.x[batch[static_cast<size_t>(b)]];
    for (int64_t i = 0; i < kSampleElems; ++i) {
      const int64_t at = b * kSampleElems + i;
      x.data<float>()[at] = s[static_cast<size_t>(i)];
      relu.data<float>()[at] = std::max(s[static_cast<size_t>(i)], 0.0f);
      half.data<uint16_t>()[at] = ir::float_to_half(3.0f * s[static_cast<size_t>(i)] + 1.0f);
    }
  }
  std::vector<std::pair<std::string, ir::Tensor>> out;
  out.emplace_back("input", std::move(x));
  out.emplace_back("relu_out", std::move(relu));
  out.emplace_back("scaled_fp16", std::move(half));
  return out;
}

BatchRange to_batch_range(const runtime::MinMaxStats& s) {
  return {s.min, s.max, s.abs_max, s.nonfinite, s.first_nonfinite};
}

// Runs both passes (each over its own shuffle) and returns the JSON cache bytes per method.
std::map<std::string, std::string> calibrate(const Dataset& d, size_t batch, uint64_t seed,
                                             int threads) {
  std::vector<size_t> order(kSamples);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  Collector c;
  for (int phase = 1; phase <= 2; ++phase) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t first = 0; first < kSamples; first += batch) {
      const size_t count = std::min(batch, kSamples - first);
      const std::span<const size_t> ids(order.data() + first, count);
      for (auto& [name, t] : observe(d, ids)) {
        runtime::cpu::HostTensorStatistics stats(t, threads);
        if (phase == 1) {
          EXPECT_TRUE(c.add_range(name, to_batch_range(stats.minmax()), t.size(),
                                  {static_cast<int64_t>(first), static_cast<int64_t>(count)})
                          .is_ok());
        } else {
          EXPECT_TRUE(c.add_histogram(name, [&](double T, std::span<uint64_t> counts) {
                         stats.histogram(T, counts);
                       }).is_ok());
        }
      }
    }
    if (phase == 1) {
      EXPECT_TRUE(c.finish_ranges().is_ok());
    }
  }
  std::map<std::string, std::string> bytes;
  for (const CalibratorInfo& info : calibrators()) {
    auto table = c.table({std::string(info.name)});
    EXPECT_TRUE(table.has_value()) << table.status().message();
    table->run.samples = kSamples;
    bytes[std::string(info.name)] = json_cache_string(*table);
  }
  return bytes;
}

TEST(OrderIndependence, BatchingShufflingAndThreadsGiveIdenticalBytes) {
  const Dataset d = make_dataset();
  const auto reference = calibrate(d, 64, 1, 1);
  ASSERT_EQ(reference.size(), 4u);
  for (size_t batch : {1, 7, 64}) {
    for (uint64_t seed : {2, 3}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(fmt::format("batch {} seed {} threads {}", batch, seed, threads));
        const auto got = calibrate(d, batch, seed, threads);
        for (const auto& [method, bytes] : reference) EXPECT_EQ(got.at(method), bytes) << method;
      }
    }
  }
  // And the tensors really were calibrated (not all-zero): entropy clips the heavy tail.
  auto table = parse_json_cache(reference.at("entropy"), "entropy.json");
  ASSERT_TRUE(table.has_value()) << table.status().message();
  const TensorRange& in = table->tensors.at("input");
  EXPECT_GT(in.hist_max, 20.0);
  EXPECT_LT(in.amax, in.hist_max);
  EXPECT_EQ(in.count, static_cast<int64_t>(kSamples * kSampleElems));
}

TEST(OrderIndependence, HostStatisticsEqualTheSerialCollector) {
  const Dataset d = make_dataset();
  std::vector<size_t> ids(kSamples);
  std::iota(ids.begin(), ids.end(), 0);
  Collector serial;
  for (int phase = 1; phase <= 2; ++phase) {
    for (size_t s = 0; s < kSamples; ++s) {
      if (phase == 1) {
        ASSERT_TRUE(serial.add_range("input", d.x[s], {static_cast<int64_t>(s), 1}).is_ok());
      } else {
        ASSERT_TRUE(serial.add_histogram("input", d.x[s]).is_ok());
      }
    }
    if (phase == 1) {
      ASSERT_TRUE(serial.finish_ranges().is_ok());
    }
  }
  auto serial_table = serial.table({"entropy"});
  ASSERT_TRUE(serial_table.has_value());
  serial_table->run.samples = kSamples;
  auto host_tables = calibrate(d, 7, 5, 2);
  auto host_table = parse_json_cache(host_tables.at("entropy"), "host.json");
  ASSERT_TRUE(host_table.has_value());
  const TensorRange& a = serial_table->tensors.at("input");
  const TensorRange& b = host_table->tensors.at("input");
  EXPECT_EQ(a.histogram, b.histogram);
  EXPECT_EQ(a.amax, b.amax);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
}

}  // namespace
}  // namespace ptq::calib
