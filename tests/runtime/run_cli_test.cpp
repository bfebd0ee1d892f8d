// `ptq run` end to end: outputs stacked over every sample (short last batch included) and equal
// to the executor's own results; bad input is one line on stderr and exit code 3.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/paths.h"
#include "kernel_harness.h"
#include "npy_lite.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::runtime::testing {
namespace {

using ptq::testing::test_data_dir;

namespace fs = std::filesystem;

// Runs a shell command; returns its exit code and fills `output` with stdout + stderr.
int shell(const std::string& cmd, std::string& output) {
  // fmt, not cmd + "…": GCC 12 warns falsely (-Wrestrict) on the latter.
  const std::string full = fmt::format("{} 2>&1", cmd);
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  output.clear();
  while (size_t n = fread(buf, 1, sizeof buf, p)) output.append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A .npy file's bytes (format 1.0) and the length of its header.
std::pair<std::string, size_t> npy_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t hlen =
      static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  return {std::move(bytes), hlen};
}

// Writes the first `n` samples of a .npy file as a new .npy (format 1.0).
void write_first(const fs::path& from, const fs::path& to, int64_t n) {
  const auto [bytes, hlen] = npy_file(from);
  std::string header = bytes.substr(10, hlen);
  auto t = read_npy(from);
  ASSERT_TRUE(t.has_value());
  const size_t per = t->nbytes() / static_cast<size_t>(t->dim(0));
  const std::string old_dim = fmt::format("({},", t->dim(0)), new_dim = fmt::format("({},", n);
  header.replace(header.find(old_dim), old_dim.size(), new_dim);
  const size_t pad = (64 - (10 + header.size()) % 64) % 64;
  header = fmt::format("{}{}\n", header.substr(0, header.size() - 1), std::string(pad, ' '));
  std::ofstream out(to, std::ios::binary);
  out.write(bytes.data(), 8);
  const char len[2] = {static_cast<char>(header.size() & 0xff),
                       static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(bytes.data() + 10 + hlen, static_cast<std::streamsize>(per * n));
}

TEST(RunCommand, WritesStackedOutputsEqualToTheExecutor) {
  const fs::path ptq = fs::path(PTQ_BINARY_DIR) / "ptq";
  ASSERT_TRUE(fs::exists(ptq)) << ptq << " is not built";
  const fs::path model = test_data_dir() / "models" / "resnet18.onnx";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run scripts/make-testdata.sh";
  const fs::path work = fs::path(PTQ_BINARY_DIR) / "run-cli-test";
  fs::remove_all(work);
  fs::create_directories(work);
  write_first(test_data_dir() / "models" / "resnet18.samples.npy", work / "five.npy", 5);
  std::string out;
  const int rc =
      shell(fmt::format("'{}' run '{}' --data '{}' --batch 2 --threads 2 -o '{}'", ptq.string(),
                        model.string(), (work / "five.npy").string(), (work / "out").string()),
            out);
  ASSERT_EQ(rc, 0) << out;
  auto got = read_npy(work / "out" / "output.npy");
  ASSERT_TRUE(got.has_value()) << got.status().message();
  ASSERT_EQ(got->shape(), (ir::Shape{5, 1000}));
  auto m = onnx::load_model(model);
  ASSERT_TRUE(m.has_value());
  auto backend = make_cpu_backend();
  auto exec = Executor::create(*m, *backend, {1});
  ASSERT_TRUE(exec.has_value());
  auto five = read_npy(work / "five.npy");
  ASSERT_TRUE(five.has_value());
  NamedTensors in;
  in.emplace_back("input", *five);
  auto want = (*exec)->run(in);
  ASSERT_TRUE(want.has_value());
  // Batches of 2 on 2 threads vs one batch of 5 on 1 thread: GEMM tiles depend on the batch,
  // so agreement is to rounding, not bits.
  EXPECT_LE(rel_l2(*got, (*want)[0].second), 1e-6);
}

TEST(RunCommand, BadInputIsOneLineAndExitCode3) {
  const fs::path ptq = fs::path(PTQ_BINARY_DIR) / "ptq";
  ASSERT_TRUE(fs::exists(ptq)) << ptq << " is not built";
  const fs::path model = test_data_dir() / "models" / "resnet18.onnx";
  const fs::path work = fs::path(PTQ_BINARY_DIR) / "run-cli-test-bad";
  fs::create_directories(work);
  // Samples of the transformer (shape [16, 64]) do not fit ResNet's [3, 224, 224] input.
  const fs::path wrong = test_data_dir() / "models" / "transformer.samples.npy";
  std::string out;
  const int rc = shell(fmt::format("'{}' run '{}' --data '{}' -o '{}'", ptq.string(),
                                   model.string(), wrong.string(), (work / "out").string()),
                       out);
  EXPECT_EQ(rc, 3) << out;
  EXPECT_EQ(out.rfind("ptq: error: ", 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  const int rc2 = shell(fmt::format("'{}' run '{}' --data '{}' -o '{}'", ptq.string(),
                                    (work / "missing.onnx").string(), wrong.string(),
                                    (work / "out").string()),
                        out);
  EXPECT_EQ(rc2, 3) << out;
}

// A copy of a float32 .npy (format 1.0) with element `at` of the data set to `value`.
void write_with(const fs::path& from, const fs::path& to, int64_t at, float value) {
  auto [bytes, hlen] = npy_file(from);
  std::memcpy(bytes.data() + 10 + hlen + static_cast<size_t>(at) * sizeof(float), &value,
              sizeof value);
  std::ofstream(to, std::ios::binary) << bytes;
}

TEST(RunCommand, NonFiniteInputStopsUnlessAllowed) {
  const fs::path ptq = fs::path(PTQ_BINARY_DIR) / "ptq";
  ASSERT_TRUE(fs::exists(ptq)) << ptq << " is not built";
  const fs::path model = test_data_dir() / "models" / "transformer.onnx";
  const fs::path work = fs::path(PTQ_BINARY_DIR) / "run-cli-test-nonfinite";
  fs::remove_all(work);
  fs::create_directories(work);
  // Sample 2 (16 x 64 floats a sample) holds a NaN at its element 5, then an Inf.
  const fs::path samples = test_data_dir() / "models" / "transformer.samples.npy";
  const int64_t at = 2 * 16 * 64 + 5;
  for (const float bad : {std::nanf(""), INFINITY}) {
    SCOPED_TRACE(bad);
    const fs::path data = work / "bad.npy";
    write_with(samples, data, at, bad);
    std::string out;
    const std::string cmd = fmt::format("'{}' run '{}' --data '{}' --batch 2 -o '{}'", ptq.string(),
                                        model.string(), data.string(), (work / "out").string());
    EXPECT_EQ(shell(cmd, out), 3) << out;
    EXPECT_EQ(out.rfind("ptq: error: input 'input': non-finite value (NaN or Inf) at element 5 of "
                        "sample 2 of ",
                        0),
              0u)
        << out;
    EXPECT_NE(out.find("bad.npy"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_FALSE(fs::exists(work / "out" / "output.npy"));  // nothing half-written
    EXPECT_EQ(shell(cmd + " --allow-nonfinite", out), 0) << out;
    EXPECT_TRUE(fs::exists(work / "out" / "output.npy"));
    fs::remove_all(work / "out");
  }
}

}  // namespace
}  // namespace ptq::runtime::testing
