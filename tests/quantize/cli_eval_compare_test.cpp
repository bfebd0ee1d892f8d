// `ptq eval` and `ptq compare` end to end on the bundled example, checked against numbers this
// test computes itself from `ptq run`'s output .npy files (argmax, top-5 by sorting, cosine,
// SQNR, max abs diff in float64). Also the demo's promise: INT8 (entropy calibration on
// examples/data/calib.npy) within 0.3 top-1 points of FP32 on the 1,000 test images.
//
// About that promise: entropy calibration puts the range of the stem's output (the float stem
// conv, 1 input channel, sees the images' constant background) at the background spikes (amax
// 0.34 of max 3.7, clipping ~10 % of the values), which costs ~11 top-1 points when the two
// layers reading it are quantized. `ptq quantize` warns about exactly that (the clipped-range
// warning names both layers); the demo, like this test, keeps them float from the same cache.
// The test checks both halves: the warning and the drop with every layer quantized, and the
// promise with the two layers float.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numeric>

#include "quantize_test_util.h"

namespace ptq::quantize_testing {
namespace {

// The float model's INT8 versions and the models' logits on the test images, each made the
// first time a test asks for it (ctest runs every test in a process of its own, so a test pays
// only for what it uses), in a folder private to the process.
class EvalCompare : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
    made_.clear();
  }

  static const fs::path& dir() {
    if (dir_ == nullptr) dir_ = new fs::path(process_dir("eval"));
    return *dir_;
  }
  // Runs `args` once per process; the result is remembered by `key`.
  static const ptq::testing::PtqResult& once(const std::string& key,
                                             const std::vector<std::string>& args) {
    auto it = made_.find(key);
    if (it == made_.end()) it = made_.emplace(key, run_ptq(args)).first;
    EXPECT_EQ(it->second.exit_code, 0) << key << ": " << it->second.err;
    return it->second;
  }
  static std::string cache() {
    once("calibrate", {"calibrate", example_model(), "--data", calib_npy(), "--method", "entropy",
                       "-o", (dir() / "calib.json").string(), "--quiet"});
    return (dir() / "calib.json").string();
  }
  // Every layer quantized; returns quantize's result (its warnings are on stderr).
  static const ptq::testing::PtqResult& quantize_all() {
    return once("int8-all", {"quantize", example_model(), "--cache", cache(), "-o",
                             (dir() / "int8-all.onnx").string()});
  }
  // The stem's two readers float (the demo's model).
  static std::string int8() {
    once("int8", {"quantize", example_model(), "--cache", cache(), "-o",
                  (dir() / "int8.onnx").string(), "--exclude", kStemReaders, "--quiet"});
    return (dir() / "int8.onnx").string();
  }
  static std::string model_path(const std::string& which) {
    if (which == "fp32") return example_model();
    if (which == "int8") return int8();
    quantize_all();
    return (dir() / "int8-all.onnx").string();
  }
  // `ptq run` logits of the first `n` test images (1000: all).
  static ir::Tensor logits(const std::string& which, int n = 1000) {
    const std::string key = fmt::format("run-{}-{}", which, n);
    const fs::path out = dir() / key;
    once(key, {"run", model_path(which), "--data", test_npy(), "--samples", std::to_string(n),
               "--batch", "50", "-o", out.string(), "--quiet"});
    auto t = data::load_npy(out / "logits.npy");
    EXPECT_TRUE(t.has_value()) << t.status().message();
    return t.has_value() ? std::move(*t) : ir::Tensor{};
  }
  static std::vector<int64_t> labels() {
    auto t = data::load_npy(test_labels());
    EXPECT_TRUE(t.has_value());
    std::vector<int64_t> v;
    for (int64_t i = 0; t.has_value() && i < t->size(); ++i) v.push_back(t->as_int64(i));
    return v;
  }

  static constexpr const char* kStemReaders = "/block1/conv1/conv1.0/Conv,/block1/Add";
  static fs::path* dir_;
  static std::map<std::string, ptq::testing::PtqResult> made_;
};
fs::path* EvalCompare::dir_ = nullptr;
std::map<std::string, ptq::testing::PtqResult> EvalCompare::made_;

// Top-k hits computed by sorting each row (stable: a lower index wins ties).
// Over the first `rows` rows (all when -1).
int64_t top_k_hits(const ir::Tensor& scores, const std::vector<int64_t>& labels, int64_t k,
                   int64_t rows = -1) {
  const int64_t n = rows < 0 ? scores.dim(0) : rows, c = scores.size() / scores.dim(0);
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> idx(static_cast<size_t>(c));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return scores.as_double(i * c + a) > scores.as_double(i * c + b);
    });
    for (int64_t j = 0; j < k; ++j)
      hits += idx[static_cast<size_t>(j)] == labels[static_cast<size_t>(i)];
  }
  return hits;
}

TEST_F(EvalCompare, EvalMatchesTopKFromRunOutputs) {
  const std::vector<int64_t> y = labels();
  ASSERT_EQ(y.size(), 1000u);
  for (const auto& [model, which] : {std::pair{example_model(), "fp32"}, {int8(), "int8"}}) {
    auto r = run_ptq({"eval", model, "--data", test_npy(), "--labels", test_labels(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = parse_json(r.out);
    const ir::Tensor t = logits(which);
    const int64_t top1 = top_k_hits(t, y, 1), top5 = top_k_hits(t, y, 5);
    EXPECT_EQ(j["samples"].get<int64_t>(), 1000) << which;
    EXPECT_EQ(j["top1_correct"].get<int64_t>(), top1) << which;
    EXPECT_EQ(j["top5_correct"].get<int64_t>(), top5) << which;
    EXPECT_DOUBLE_EQ(j["top1"].get<double>(), static_cast<double>(top1) / 1000.0) << which;
  }
  // The text form, on the first 100 samples in batches of 7 (a short last batch).
  auto text = run_ptq({"eval", int8(), "--data", test_npy(), "--labels", test_labels(), "--samples",
                       "100", "--batch", "7"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const int64_t top1 = top_k_hits(logits("int8", 100), y, 1, 100);
  EXPECT_NE(text.out.find(fmt::format("({}/100)", top1)), std::string::npos) << text.out;
}

// Shuffled samples: the labels follow the delivery order.
TEST_F(EvalCompare, EvalShuffledKeepsLabelsWithTheirSamples) {
  auto r = run_ptq({"eval", example_model(), "--data", test_npy(), "--labels", test_labels(),
                    "--samples", "200", "--shuffle", "--seed", "5", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<int64_t> order = data::shuffled_order(1000, 5);
  const ir::Tensor t = logits("fp32");
  const std::vector<int64_t> top = argmax_of(t), y = labels();
  int64_t hits = 0;
  for (size_t i = 0; i < 200; ++i) {
    const auto s = static_cast<size_t>(order[i]);
    hits += top[s] == y[s];
  }
  EXPECT_EQ(parse_json(r.out)["top1_correct"].get<int64_t>(), hits);
}

// The float model's top-1 on these images was recorded at training time (93.6 %, confirmed
// with ONNX Runtime, examples/README.md).
TEST_F(EvalCompare, Int8WithinPointThreeOfFloat) {
  const std::vector<int64_t> y = labels();
  const int64_t fp32 = top_k_hits(logits("fp32"), y, 1);
  const int64_t q = top_k_hits(logits("int8"), y, 1);
  EXPECT_EQ(fp32, 936);
  // "Within 0.3 points" is a bound on the loss: INT8 measures 940/1000 here, 0.4 points above
  // float (noise of a few images near a decision boundary), which is no loss. The upper bound
  // is only a sanity check (INT8 cannot plausibly beat float by a whole point).
  EXPECT_GE(q, fp32 - 3) << "fp32 " << fp32 << "/1000, int8 " << q << "/1000";
  EXPECT_LE(q, fp32 + 10) << "fp32 " << fp32 << "/1000, int8 " << q << "/1000";
  // Every layer quantized: the clipped stem range costs points, and quantize said so.
  const int64_t all = top_k_hits(logits("int8-all"), y, 1);
  EXPECT_LT(all, q) << "int8 with the stem readers quantized: " << all << "/1000";
  EXPECT_NE(quantize_all().err.find("'/stem/stem.1/Relu_output_0'"), std::string::npos)
      << quantize_all().err;
}

// A NaN in the data would make every metric NaN: eval, compare and the sweep's eval set stop
// with an error naming the sample, unless --allow-nonfinite.
TEST_F(EvalCompare, NonFiniteSamplesStopUnlessAllowed) {
  const fs::path dir = scratch_dir();
  auto x = data::load_npy(test_npy());
  ASSERT_TRUE(x.has_value());
  ASSERT_EQ(x->dtype(), ir::DType::kFloat16);       // the images are stored as float16
  x->data<uint16_t>()[7 * 28 * 28 + 100] = 0x7e00;  // a half NaN
  const std::string bad = (dir / "nan.npy").string();
  ASSERT_TRUE(data::save_npy(bad, *x).is_ok());
  const std::string needle = "non-finite value (NaN or Inf) at element 100 of sample 7 of";
  const std::vector<std::vector<std::string>> commands = {
      {"eval", example_model(), "--data", bad, "--labels", test_labels()},
      {"compare", example_model(), int8(), "--data", bad},
      {"sensitivity", example_model(), "--cache", cache(), "--eval", bad, "-o",
       (dir / "sens.json").string()}};
  for (const auto& args : commands) {
    SCOPED_TRACE(args[0]);
    auto r = run_ptq(args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "sens.json"));
  auto allowed = run_ptq({"compare", example_model(), int8(), "--data", bad, "--samples", "10",
                          "--allow-nonfinite", "--json"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
}

TEST_F(EvalCompare, LabelErrors) {
  const fs::path dir = scratch_dir();
  const std::vector<int64_t> few = {1, 2, 3};
  ASSERT_TRUE(
      data::save_npy(dir / "few.npy", ir::make_tensor<int64_t>({3}, std::span<const int64_t>(few)))
          .is_ok());
  auto r = run_ptq(
      {"eval", example_model(), "--data", test_npy(), "--labels", (dir / "few.npy").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("3 labels for 1000 samples"), std::string::npos) << r.err;
  const std::vector<float> f = {1, 2, 3};
  ASSERT_TRUE(
      data::save_npy(dir / "float.npy", ir::make_tensor<float>({3}, std::span<const float>(f)))
          .is_ok());
  auto rf = run_ptq(
      {"eval", example_model(), "--data", test_npy(), "--labels", (dir / "float.npy").string()});
  EXPECT_EQ(rf.exit_code, 3);
  EXPECT_NE(rf.err.find("integers"), std::string::npos) << rf.err;
  // int32 labels are accepted.
  std::vector<int32_t> y32;
  for (int64_t v : labels()) y32.push_back(static_cast<int32_t>(v));
  ASSERT_TRUE(data::save_npy(dir / "y32.npy",
                             ir::make_tensor<int32_t>({1000}, std::span<const int32_t>(y32)))
                  .is_ok());
  auto r32 = run_ptq({"eval", example_model(), "--data", test_npy(), "--labels",
                      (dir / "y32.npy").string(), "--samples", "100", "--json"});
  ASSERT_EQ(r32.exit_code, 0) << r32.err;
  EXPECT_EQ(parse_json(r32.out)["top1_correct"].get<int64_t>(),
            top_k_hits(logits("fp32", 100), labels(), 1, 100));
}

TEST_F(EvalCompare, CompareWithItselfIsExact) {
  auto r = run_ptq({"compare", example_model(), example_model(), "--data", test_npy(), "--samples",
                    "100", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = parse_json(r.out);
  ASSERT_EQ(j["outputs"].size(), 1u);
  const auto& o = j["outputs"][0];
  EXPECT_EQ(o["name"], "logits");
  EXPECT_DOUBLE_EQ(o["cosine"].get<double>(), 1.0);
  EXPECT_EQ(o["sqnr_db"], "inf");
  EXPECT_EQ(o["max_abs_diff"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["top1_agreement"].get<double>(), 1.0);
  EXPECT_EQ(j["samples"].get<int64_t>(), 100);
  auto text = run_ptq(
      {"compare", example_model(), example_model(), "--data", test_npy(), "--samples", "20"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("inf"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("100.00% (20/20)"), std::string::npos) << text.out;
}

TEST_F(EvalCompare, CompareMatchesRunOutputs) {
  const int64_t n = 200;
  auto r = run_ptq({"compare", example_model(), int8(), "--data", test_npy(), "--samples",
                    std::to_string(n), "--batch", "32", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = parse_json(r.out);
  const ir::Tensor a = logits("fp32", n), b = logits("int8", n);
  const int64_t c = a.size() / a.dim(0);
  double aa = 0, bb = 0, ab = 0, dd = 0, mx = 0;
  for (int64_t i = 0; i < n * c; ++i) {
    const double x = a.as_double(i), y = b.as_double(i);
    aa += x * x;
    bb += y * y;
    ab += x * y;
    dd += (x - y) * (x - y);
    mx = std::max(mx, std::abs(x - y));
  }
  const auto fa = argmax_of(a), fb = argmax_of(b);
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) same += fa[static_cast<size_t>(i)] == fb[static_cast<size_t>(i)];
  EXPECT_EQ(j["samples"].get<int64_t>(), n);
  const auto& o = j["outputs"][0];
  EXPECT_NEAR(o["cosine"].get<double>(), ab / std::sqrt(aa * bb), 1e-9);
  EXPECT_NEAR(o["sqnr_db"].get<double>(), 10 * std::log10(aa / dd), 1e-6);
  EXPECT_DOUBLE_EQ(o["max_abs_diff"].get<double>(), mx);
  EXPECT_NEAR(o["rel_l2"].get<double>(), std::sqrt(dd / aa), 1e-9);
  EXPECT_EQ(j["top1_same"].get<int64_t>(), same);
  // INT8 of a well-calibrated CNN: close, not equal.
  EXPECT_GT(o["cosine"].get<double>(), 0.99);
  EXPECT_LT(o["cosine"].get<double>(), 1.0);
}

}  // namespace
}  // namespace ptq::quantize_testing
