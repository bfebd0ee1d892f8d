// ONNX backend conformance through the command line: every node case whose ops the CPU backend
// has runs as `ptq run model.onnx --data test_data_set_k -o OUT` (each data set is one record,
// fed exactly as stored), and each output OUT/<name>/0.npy is compared with output_j.pb at
// ONNX's tolerances (cases.h). --allow-nonfinite, as some cases feed NaN and Inf on purpose.
// Cases listed in expected_failures.txt (the runtime fails them) or cli_expected_failures.txt
// (reasons in docs/CONFORMANCE.md) must still fail;
// at least 98% of the runnable cases the runtime itself passes (all but those in
// expected_failures.txt) must pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <thread>

#include <fmt/format.h>

#include "../cli/run_ptq.h"
#include "cases.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::test {
namespace {

struct Case {
  std::string name;
  fs::path dir;
  std::vector<ir::ValueInfo> outputs;
  std::string failure;  // "" once it passed
};

// `ptq run` names output files after outputs, with characters other than [A-Za-z0-9._-] as '_'.
std::string file_name_for(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return s;
}

// Output j of one run: OUT/<name>/0.npy (no output axis follows a batch), else OUT/<name>.npy.
Expected<ir::Tensor> read_output(const fs::path& out, const std::string& name) {
  const fs::path per_batch = out / file_name_for(name) / "0.npy";
  if (fs::exists(per_batch)) return data::load_npy(per_batch);
  return data::load_npy(out / (file_name_for(name) + ".npy"));
}

std::string check_set(const Case& c, const fs::path& set, const fs::path& out) {
  const testing::PtqResult r =
      testing::run_ptq({"run", (c.dir / "model.onnx").string(), "--data", set.string(),
                        "--threads", "1", "--allow-nonfinite", "--quiet", "-o", out.string()});
  if (r.exit_code != 0) return fmt::format("exit {}: {}", r.exit_code, r.err);
  auto want = read_numbered(set, "output");
  if (!want) return want.status().message();
  if (want->size() != c.outputs.size()) return "output_*.pb count differs from the model's";
  for (size_t j = 0; j < want->size(); ++j) {
    auto got = read_output(out, c.outputs[j].name);
    if (!got) return got.status().message();
    const ir::Tensor expected = as_declared(std::move((*want)[j]), c.outputs[j].type.dtype);
    const std::string diff = compare(*got, expected);
    if (!diff.empty()) return fmt::format("output '{}': {}", c.outputs[j].name, diff);
  }
  return "";
}

void run_case(Case& c, const fs::path& work) {
  const std::vector<fs::path> sets = data_sets(c.dir);
  if (sets.empty()) c.failure = "no test_data_set_* folder";
  for (const fs::path& set : sets) {
    const fs::path out = work / c.name / set.filename();
    fs::remove_all(out);
    c.failure = check_set(c, set, out);
    if (!c.failure.empty()) return;
  }
  fs::remove_all(work / c.name);
}

// The cases whose ops the CPU backend has and whose inputs and outputs are tensors.
std::vector<Case> runnable_cases() {
  auto backend = runtime::make_cpu_backend();
  std::vector<Case> out;
  for (const fs::path& dir : node_cases()) {
    auto model = onnx::load_model(dir / "model.onnx");
    if (!model || has_non_tensor_io(model->graph)) continue;
    if (!runtime::unsupported_ops(*model, *backend).empty()) continue;
    out.push_back({dir.filename().string(), dir, model->graph.outputs, ""});
  }
  return out;
}

TEST(CliConformance, OnnxBackendNodeTestsThroughPtqRun) {
  ASSERT_TRUE(fs::exists(testing::ptq_binary())) << testing::ptq_binary() << " is not built";
  std::vector<Case> cases = runnable_cases();
  ASSERT_GT(cases.size(), 100u) << "too few cases: run scripts/make-testdata.sh (make testdata)";
  const fs::path work = fs::path(PTQ_BINARY_DIR) / "cli-conformance";
  // A few processes at a time: each case is one short `ptq run`.
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < cases.size(); i = next++) run_case(cases[i], work);
    });
  }
  for (std::thread& t : pool) t.join();

  const auto xfail = expected_failures("cli_expected_failures.txt");
  const auto runtime_xfail = expected_failures("expected_failures.txt");
  size_t passed = 0, xfailed = 0, runtime_passes = 0;
  for (const Case& c : cases) {
    runtime_passes += runtime_xfail.count(c.name) == 0;
    const bool listed = xfail.count(c.name) > 0 || runtime_xfail.count(c.name) > 0;
    if (c.failure.empty()) {
      ++passed;
      EXPECT_FALSE(listed) << c.name << " passes but is listed as an expected failure";
    } else if (listed) {
      ++xfailed;
      std::printf("[ XFAIL ] %s: %s\n", c.name.c_str(), c.failure.c_str());
    } else {
      ADD_FAILURE() << c.name << ": " << c.failure;
    }
  }
  std::printf("cli conformance: %zu runnable cases (%zu the runtime passes): %zu passed, %zu "
              "expected failures\n",
              cases.size(), runtime_passes, passed, xfailed);
  EXPECT_GE(passed * 100, runtime_passes * 98) << "fewer than 98% of the cases pass";
}

}  // namespace
}  // namespace ptq::test
