// Dataset: batching, shuffling, --samples, binding to a model (names, shapes, dtypes, fixed
// batch dims), dtype conversion, multi-input sources, the errors of each, thread safety.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <thread>

#include "test_util.h"

namespace ptq::data::test {
namespace {

using ir::DType;

// n samples of [3] float32 in DIR/NAME.npy; returns the values.
std::vector<float> write_f32(const TempDir& dir, const std::string& name, int64_t n,
                             uint32_t seed, int64_t width = 3) {
  std::vector<float> v = random_floats(static_cast<size_t>(n * width), seed);
  write_bytes(
      dir / (name + ".npy"),
      npy_bytes("<f4", {n, width}, {reinterpret_cast<const char*>(v.data()), v.size() * 4}));
  return v;
}

std::vector<int64_t> parse_ints(const std::string& csv) {
  std::vector<int64_t> out;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

std::vector<int64_t> reference_order(int64_t n, uint64_t seed) {
  TempDir dir;
  EXPECT_EQ(python(fmt::format("reference/shuffle.py {} {} > '{}'", n, seed,
                               (dir / "order.txt").string())),
            0);
  std::string text = read_bytes(dir / "order.txt");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return parse_ints(text);
}

TEST(Dataset, BatchesOf1_7_64WithShortLast) {
  TempDir dir;
  const std::vector<float> v = write_f32(dir, "x", 100, 1);
  const ir::Graph g = graph_of({batched("x", DType::kFloat32, {3})});
  for (int64_t b : {1, 7, 64}) {
    SCOPED_TRACE(b);
    DatasetSpec spec = spec_of({(dir / "x.npy").string()});
    spec.batch = b;
    auto ds = Dataset::open(spec);
    ASSERT_TRUE(ds.has_value());
    ASSERT_TRUE(ds->bind(g).is_ok());
    EXPECT_EQ(ds->batch_size(), b);
    EXPECT_EQ(ds->num_batches(), (100 + b - 1) / b);
    std::vector<float> seen;
    for (int64_t i = 0; i < ds->num_batches(); ++i) {
      auto batch = ds->batch(i);
      ASSERT_TRUE(batch.has_value()) << batch.status().message();
      const ir::Tensor& t = (*batch)[0].second;
      const int64_t expect_rows = i + 1 < ds->num_batches() ? b : 100 - b * i;
      EXPECT_EQ(t.shape(), (ir::Shape{expect_rows, 3}));
      seen.insert(seen.end(), t.data<float>(), t.data<float>() + t.size());
    }
    EXPECT_EQ(seen, v);
    EXPECT_FALSE(ds->batch(ds->num_batches()).has_value());
  }
}

TEST(Dataset, ShuffleIsAKnownPermutation) {
  // The order is part of the contract (users reproduce subsets across versions and
  // platforms): seed 42 over 10 samples, as tests/reference/shuffle.py also computes.
  const std::vector<int64_t> known = {1, 7, 9, 0, 3, 8, 4, 2, 5, 6};
  EXPECT_EQ(shuffled_order(10, 42), known);
  EXPECT_EQ(reference_order(10, 42), known);
  EXPECT_EQ(shuffled_order(1000, 123456789), reference_order(1000, 123456789));
  EXPECT_EQ(shuffled_order(1, 5), std::vector<int64_t>{0});
  EXPECT_TRUE(shuffled_order(0, 5).empty());
}

TEST(Dataset, ShuffledBatchesFollowTheOrderAndSamplesTakeTheFirstN) {
  TempDir dir;
  const std::vector<float> v = write_f32(dir, "x", 10, 2);
  DatasetSpec spec = spec_of({(dir / "x.npy").string()});
  spec.shuffle = true;
  spec.seed = 42;
  spec.batch = 4;
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value());
  const std::vector<int64_t> known = {1, 7, 9, 0, 3, 8, 4, 2, 5, 6};
  EXPECT_EQ(ds->order(), known);
  auto b1 = ds->batch(1);  // samples 3, 8, 4, 2
  ASSERT_TRUE(b1.has_value());
  for (int k = 0; k < 4; ++k) {
    const int64_t src = known[static_cast<size_t>(4 + k)];
    EXPECT_EQ(std::memcmp((*b1)[0].second.data<float>() + 3 * k, v.data() + 3 * src, 12), 0);
  }
  spec.samples = 4;
  auto first4 = Dataset::open(spec);
  ASSERT_TRUE(first4.has_value());
  EXPECT_EQ(first4->size(), 4);
  EXPECT_EQ(first4->order(), std::vector<int64_t>(known.begin(), known.begin() + 4));
  spec.shuffle = false;
  auto plain = Dataset::open(spec);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->order(), (std::vector<int64_t>{0, 1, 2, 3}));
  spec.samples = 11;
  EXPECT_INVALID(Dataset::open(spec), "--samples 11 but the data holds 10 samples");
}

TEST(Dataset, FixedBatchDimSetsTheBatchAndDropsTheRemainder) {
  TempDir dir;
  write_f32(dir, "x", 100, 3);
  auto ds = Dataset::open(spec_of({(dir / "x.npy").string()}));
  ASSERT_TRUE(ds.has_value());
  ASSERT_TRUE(
      ds->bind(graph_of({input("x", DType::kFloat32, {ir::Dim::of(8), ir::Dim::of(3)})})).is_ok());
  EXPECT_EQ(ds->batch_size(), 8);
  EXPECT_EQ(ds->size(), 96);
  EXPECT_EQ(ds->dropped(), 4);
  EXPECT_EQ(ds->num_batches(), 12);
  auto last = ds->batch(11);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ((*last)[0].second.shape(), (ir::Shape{8, 3}));

  DatasetSpec spec = spec_of({(dir / "x.npy").string()});
  spec.default_batch = 5;  // a subcommand's default: used for a symbolic batch dim only
  auto by_default = Dataset::open(spec);
  ASSERT_TRUE(by_default.has_value());
  ASSERT_TRUE(by_default->bind(graph_of({batched("x", DType::kFloat32, {3})})).is_ok());
  EXPECT_EQ(by_default->batch_size(), 5);
  ASSERT_TRUE(
      by_default->bind(graph_of({input("x", DType::kFloat32, {ir::Dim::of(8), ir::Dim::of(3)})}))
          .is_ok());
  EXPECT_EQ(by_default->batch_size(), 8);
  spec.batch = 4;
  auto asked = Dataset::open(spec);
  ASSERT_TRUE(asked.has_value());
  EXPECT_INVALID(
      asked->bind(graph_of({input("x", DType::kFloat32, {ir::Dim::of(8), ir::Dim::of(3)})})),
      "--batch 4 does not fit input 'x'");
  spec.batch = 0;
  spec.samples = 5;
  auto few = Dataset::open(spec);
  ASSERT_TRUE(few.has_value());
  EXPECT_INVALID(
      few->bind(graph_of({input("x", DType::kFloat32, {ir::Dim::of(8), ir::Dim::of(3)})})),
      "fixed batch size 8 needs at least 8 samples");
}

// Each source is opened with --cast: without it a dtype mismatch is an error
// (batch_axis_test.cpp).
DatasetSpec cast_spec(const fs::path& source) {
  DatasetSpec spec = spec_of({source.string()});
  spec.cast = true;
  return spec;
}

TEST(Dataset, CastConvertsToTheModelDtype) {
  auto ds = Dataset::open(cast_spec(fixtures() / "f2.npy"));
  ASSERT_TRUE(ds.has_value());
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {2, 3})})).is_ok());
  EXPECT_EQ(ds->inputs()[0].dtype, DType::kFloat32);
  EXPECT_EQ(ds->inputs()[0].stored_dtype, DType::kFloat16);
  auto all = ds->read(0, 5);
  ASSERT_TRUE(all.has_value());
  const std::string raw = read_bytes(fixtures() / "f2.raw");
  for (int64_t i = 0; i < 30; ++i) {
    uint16_t h;
    std::memcpy(&h, raw.data() + 2 * i, 2);
    EXPECT_EQ((*all)[0].second.data<float>()[i], ir::half_to_float(h));
  }
  // uint8 -> float32 exactly.
  auto u1 = Dataset::open(cast_spec(fixtures() / "u1.npy"));
  ASSERT_TRUE(u1.has_value());
  ASSERT_TRUE(u1->bind(graph_of({batched("x", DType::kFloat32, {2, 3})})).is_ok());
  auto u = u1->batch(0);
  ASSERT_TRUE(u.has_value());
  const std::string u_raw = read_bytes(fixtures() / "u1.raw");
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ((*u)[0].second.data<float>()[i], static_cast<float>(static_cast<uint8_t>(u_raw[i])));
  }
  // int32 -> int64 widens; int64 -> int32 is checked per value.
  auto i4 = Dataset::open(cast_spec(fixtures() / "i4.npy"));
  ASSERT_TRUE(i4.has_value());
  ASSERT_TRUE(i4->bind(graph_of({batched("x", DType::kInt64, {2, 3})})).is_ok());
  auto wide = i4->batch(0);
  ASSERT_TRUE(wide.has_value());
  int32_t first;
  std::memcpy(&first, read_bytes(fixtures() / "i4.raw").data(), 4);
  EXPECT_EQ((*wide)[0].second.data<int64_t>()[0], first);
  auto i8 = Dataset::open(cast_spec(fixtures() / "i8.npy"));
  ASSERT_TRUE(i8.has_value());
  ASSERT_TRUE(i8->bind(graph_of({batched("x", DType::kInt32, {2, 3})})).is_ok());
  EXPECT_INVALID(i8->batch(0), "does not fit int32");
  EXPECT_INVALID(i8->batch(0), "i8.npy (sample 0)");
  // float data cannot feed an integer input.
  auto f4 = Dataset::open(cast_spec(fixtures() / "f4.npy"));
  ASSERT_TRUE(f4.has_value());
  EXPECT_INVALID(f4->bind(graph_of({batched("x", DType::kInt64, {2, 3})})),
                 "input 'x' is int64 but");
}

TEST(Dataset, FiniteOnlyNamesTheFirstNonFiniteValue) {
  TempDir dir;
  std::vector<float> v = random_floats(5 * 3, 9);
  v[3 * 3 + 2] = INFINITY;  // sample 3, element 2
  v[4 * 3 + 0] = std::nanf("");
  write_bytes(dir / "x.npy",
              npy_bytes("<f4", {5, 3}, {reinterpret_cast<const char*>(v.data()), v.size() * 4}));
  const ir::Graph g = graph_of({batched("x", DType::kFloat32, {3})});
  DatasetSpec spec = spec_of({(dir / "x.npy").string()});
  spec.batch = 2;
  auto loose = Dataset::open(spec);  // the library default: data passes as it is
  ASSERT_TRUE(loose.has_value());
  ASSERT_TRUE(loose->bind(g).is_ok());
  auto all = loose->read(0, 5);
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(std::isinf((*all)[0].second.data<float>()[11]));
  spec.finite_only = true;
  auto strict = Dataset::open(spec);
  ASSERT_TRUE(strict.has_value());
  ASSERT_TRUE(strict->bind(g).is_ok());
  EXPECT_TRUE(strict->batch(0).has_value());  // samples 0 and 1 are finite
  EXPECT_INVALID(strict->batch(1),
                 "input 'x': non-finite value (NaN or Inf) at element 2 of sample 3 of");
  EXPECT_INVALID(strict->batch(1), "x.npy");
  EXPECT_INVALID(strict->batch(2), "at element 0 of sample 4");
  // float16 data is checked once converted (a half Inf); integers cannot be non-finite.
  const uint16_t halves[3] = {0x3c00, 0x7c00, 0x0000};
  write_bytes(dir / "h.npy", npy_bytes("<f2", {1, 3}, {reinterpret_cast<const char*>(halves), 6}));
  DatasetSpec hs = spec_of({(dir / "h.npy").string()});
  hs.finite_only = true;
  auto h = Dataset::open(hs);
  ASSERT_TRUE(h.has_value());
  ASSERT_TRUE(h->bind(g).is_ok());
  EXPECT_INVALID(h->batch(0), "at element 1 of sample 0");
  DatasetSpec us = spec_of({(fixtures() / "u1.npy").string()});
  us.finite_only = true;
  us.cast = true;
  auto u = Dataset::open(us);
  ASSERT_TRUE(u.has_value());
  ASSERT_TRUE(u->bind(graph_of({batched("x", DType::kFloat32, {2, 3})})).is_ok());
  EXPECT_TRUE(u->batch(0).has_value());
}

TEST(Dataset, MultiInputNamedSources) {
  TempDir dir;
  const auto a = write_f32(dir, "a", 6, 4, 3);
  const auto b = write_f32(dir, "b", 6, 5, 2);
  DatasetSpec spec = spec_of({"b=" + (dir / "b.npy").string(), "a=" + (dir / "a.npy").string()});
  spec.batch = 4;
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  ASSERT_TRUE(
      ds->bind(graph_of({batched("a", DType::kFloat32, {3}), batched("b", DType::kFloat32, {2})}))
          .is_ok());
  auto last = ds->batch(1);
  ASSERT_TRUE(last.has_value());
  ASSERT_EQ(last->size(), 2u);
  EXPECT_EQ((*last)[0].first, "a");
  EXPECT_EQ((*last)[0].second.shape(), (ir::Shape{2, 3}));
  EXPECT_EQ(std::memcmp((*last)[0].second.raw(), a.data() + 12, 24), 0);
  EXPECT_EQ((*last)[1].first, "b");
  EXPECT_EQ(std::memcmp((*last)[1].second.raw(), b.data() + 8, 16), 0);
}

TEST(Dataset, FolderOfNpyFilesSortedByName) {
  TempDir dir;
  std::vector<std::vector<float>> s;
  for (const char* name : {"c", "a", "b"}) {
    s.push_back(random_floats(4, static_cast<uint32_t>(name[0])));
    write_bytes(dir / "f" / (std::string(name) + ".npy"),
                npy_bytes("<f4", {1, 4}, {reinterpret_cast<const char*>(s.back().data()), 16}));
  }
  auto ds = Dataset::open(spec_of({(dir / "f").string()}));
  ASSERT_TRUE(ds.has_value()) << ds.status().message();
  ASSERT_TRUE(ds->bind(graph_of({batched("x", DType::kFloat32, {4})})).is_ok());
  auto all = ds->read(0, 3);
  ASSERT_TRUE(all.has_value());
  // a, b, c order: s[1], s[2], s[0].
  EXPECT_EQ(std::memcmp((*all)[0].second.data<float>(), s[1].data(), 16), 0);
  EXPECT_EQ(std::memcmp((*all)[0].second.data<float>() + 4, s[2].data(), 16), 0);
  EXPECT_EQ(std::memcmp((*all)[0].second.data<float>() + 8, s[0].data(), 16), 0);
  // Files of differing shapes are refused when the folder is opened.
  write_bytes(dir / "f" / "d.npy", npy_bytes("<f4", {1, 5}, std::string(20, '\1')));
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "f").string()})), "d.npy");
}

TEST(Dataset, BindErrors) {
  TempDir dir;
  write_f32(dir, "a", 10, 6);
  write_f32(dir, "b", 9, 7);
  const std::string a = (dir / "a.npy").string(), b = (dir / "b.npy").string();
  const ir::Graph two =
      graph_of({batched("a", DType::kFloat32, {3}), batched("b", DType::kFloat32, {3})});

  auto bogus = Dataset::open(spec_of({"nope=" + a}));
  ASSERT_TRUE(bogus.has_value());
  EXPECT_INVALID(bogus->bind(graph_of({batched("x", DType::kFloat32, {3})})),
                 "feeds input 'nope' but the model's inputs are 'x'");

  auto missing = Dataset::open(spec_of({"a=" + a}));
  ASSERT_TRUE(missing.has_value());
  EXPECT_INVALID(missing->bind(two), "no data for model input 'b'");

  auto unnamed = Dataset::open(spec_of({a}));
  ASSERT_TRUE(unnamed.has_value());
  EXPECT_INVALID(unnamed->bind(two), "the model has 2 inputs ('a', 'b')");

  auto twice = Dataset::open(spec_of({"a=" + a, "a=" + a}));
  ASSERT_TRUE(twice.has_value());
  EXPECT_INVALID(twice->bind(graph_of({batched("a", DType::kFloat32, {3})})), "fed twice");

  // Sample counts differ: the message names both inputs, counts and files (at bind(): until
  // then an array may be a whole value rather than samples).
  auto counts = Dataset::open(spec_of({"a=" + a, "b=" + b}));
  ASSERT_TRUE(counts.has_value());
  EXPECT_INVALID(counts->bind(two), "input 'a' has 10 samples");
  EXPECT_INVALID(counts->bind(two), "input 'b' has 9");
  EXPECT_INVALID(counts->bind(two), "b.npy");

  auto shape = Dataset::open(spec_of({a}));
  ASSERT_TRUE(shape.has_value());
  EXPECT_INVALID(shape->bind(graph_of({batched("x", DType::kFloat32, {4})})),
                 "input 'x' is [batch, 4] but");
  EXPECT_INVALID(shape->bind(graph_of({batched("x", DType::kFloat32, {4})})), "samples of [3]");
  EXPECT_INVALID(shape->bind(graph_of({batched("x", DType::kFloat32, {3, 1, 1})})), "rank 4");
  EXPECT_INVALID(shape->bind(graph_of({input("x", DType::kFloat32, {})})), "scalar");
  EXPECT_INVALID(shape->bind(graph_of({})), "no inputs");
  // After a failed bind nothing is delivered until a bind succeeds.
  EXPECT_EQ(shape->size(), 0);
  EXPECT_FALSE(shape->batch(0).has_value());
  // A symbolic dim accepts any size; an unknown rank accepts any shape.
  EXPECT_TRUE(shape
                  ->bind(graph_of(
                      {input("x", DType::kFloat32, {ir::Dim::symbol("n"), ir::Dim::symbol("c")})}))
                  .is_ok());
  ir::ValueInfo unranked;
  unranked.name = "x";
  unranked.type.dtype = DType::kFloat32;
  EXPECT_TRUE(shape->bind(graph_of({unranked})).is_ok());
  EXPECT_EQ(shape->size(), 10);

  EXPECT_INVALID(Dataset::open(spec_of({(dir / "absent.npy").string()})), "no such file or folder");
  fs::create_directories(dir / "empty");
  write_bytes(dir / "empty" / "readme.txt", "nothing to see");
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "empty").string()})), "empty source");
  write_bytes(dir / "x.csv", "1,2,3");
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "x.csv").string()})),
                 "unknown data file type '.csv'");
  fs::create_directories(dir / "mixed");
  fs::copy_file(a, dir / "mixed" / "a.npy");
  fs::copy_file(fixtures() / "images" / "img_0.png", dir / "mixed" / "b.png");
  EXPECT_INVALID(Dataset::open(spec_of({(dir / "mixed").string()})), "mixes");
  EXPECT_EQ(Dataset::open(DatasetSpec{}).status().code(), StatusCode::kUsage);
}

TEST(Dataset, ParseSource) {
  TempDir dir;
  SourceSpec s = parse_source("input=data/x.npy");
  EXPECT_EQ(s.input, "input");
  EXPECT_EQ(s.path, "data/x.npy");
  s = parse_source("data/x.npy");
  EXPECT_EQ(s.input, "");
  s = parse_source("dir/a=b.npy");
  EXPECT_EQ(s.input, "");
  EXPECT_EQ(s.path, "dir/a=b.npy");
  write_bytes(dir / "k=v.npy", "x");
  const std::string cwd_file = (dir / "k=v.npy").string();
  s = parse_source(cwd_file);
  EXPECT_EQ(s.path, cwd_file);
}

TEST(Dataset, ConcurrentBatchesAgree) {
  TempDir dir;
  write_f32(dir, "x", 64, 8);
  DatasetSpec spec = spec_of({(dir / "x.npy").string()});
  spec.batch = 4;
  spec.shuffle = true;
  spec.seed = 9;
  auto ds = Dataset::open(spec);
  ASSERT_TRUE(ds.has_value());
  std::vector<std::string> serial, parallel(16);
  for (int64_t i = 0; i < 16; ++i) serial.push_back(bytes_of((*ds->batch(i))[0].second));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = t; i < 16; i += 4)
        parallel[static_cast<size_t>(i)] = bytes_of((*ds->batch(i))[0].second);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(serial, parallel);
}

}  // namespace
}  // namespace ptq::data::test
