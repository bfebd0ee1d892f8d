// ONNX backend conformance (node tests): every case under $PTQ_TEST_DATA/onnx-backend/node whose
// ops the CPU backend supports is loaded with ptq::onnx::load_model, run through the Executor and
// compared with ONNX's expected outputs at ONNX's own tolerances (rtol 1e-3, atol 1e-7; exact for
// integers, bools and strings). Cases listed in expected_failures.txt must still fail (so the
// list shrinks as bugs are fixed); cases with unsupported ops are counted, not run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cases.h"
#include "ptq/ir.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::test {
namespace {

// Runs one case; "" on success, else the reason it failed.
// Also runs on 3 threads and requires bit-identical outputs: kernels must not depend on the
// thread count.
std::string run_case(const ir::Model& model, runtime::Backend& backend, const fs::path& dir) {
  auto exec = runtime::Executor::create(model, backend);
  if (!exec) return "create: " + exec.status().message();
  auto exec3 = runtime::Executor::create(model, backend, runtime::ExecutorOptions{3});
  if (!exec3) return "create: " + exec3.status().message();
  const std::vector<fs::path> sets = data_sets(dir);
  if (sets.empty()) return "no test_data_set_* folder";
  const auto real_inputs = model.graph.real_inputs();
  for (const fs::path& set : sets) {
    auto inputs = read_numbered(set, "input");
    auto outputs = read_numbered(set, "output");
    if (!inputs) return inputs.status().message();
    if (!outputs) return outputs.status().message();
    // input_k.pb feeds the k-th real input; optional trailing inputs may be left out.
    if (inputs->size() > real_inputs.size()) return "more input files than graph inputs";
    runtime::NamedTensors feed;
    for (size_t k = 0; k < inputs->size(); ++k) {
      const std::string& name = real_inputs[k]->name;
      feed.emplace_back(name, as_declared(std::move((*inputs)[k]), model.graph.value_dtype(name)));
    }
    auto result = (*exec)->run(feed);
    if (!result) return "run: " + result.status().message();
    auto result3 = (*exec3)->run(feed);
    if (!result3) return "run on 3 threads: " + result3.status().message();
    for (size_t k = 0; k < result->size(); ++k) {
      const ir::Tensor& a = (*result)[k].second;
      const ir::Tensor& b = (*result3)[k].second;
      const bool same = a.dtype() == b.dtype() && a.shape() == b.shape() &&
                        (a.dtype() == ir::DType::kString
                             ? a.strings() == b.strings()
                             : a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
      if (!same) return fmt::format("output {} differs between 1 and 3 threads", k);
    }
    if (result->size() != outputs->size()) {
      return fmt::format("{} outputs, expected {}", result->size(), outputs->size());
    }
    for (size_t k = 0; k < outputs->size(); ++k) {
      const ir::Tensor want =
          as_declared(std::move((*outputs)[k]), model.graph.value_dtype((*result)[k].first));
      const std::string diff = compare((*result)[k].second, want);
      if (!diff.empty()) {
        return fmt::format("{} output {} ('{}'): {}", set.filename().string(), k,
                           (*result)[k].first, diff);
      }
    }
  }
  return "";
}

TEST(Conformance, OnnxBackendNodeTests) {
  const fs::path root = test_data_dir() / "onnx-backend" / "node";
  ASSERT_TRUE(fs::is_directory(root))
      << root << " is missing: run scripts/make-testdata.sh (make testdata) first";
  const std::vector<fs::path> cases = node_cases();
  ASSERT_GT(cases.size(), 100u) << "too few cases under " << root;

  const auto xfail = expected_failures("expected_failures.txt");
  auto backend = runtime::make_cpu_backend();
  int passed = 0, failed = 0, xfailed = 0, unexpected_pass = 0, load_errors = 0;
  std::map<std::string, int> unsupported;  // op type -> cases skipped for it
  int skipped = 0, non_tensor = 0;
  for (const fs::path& dir : cases) {
    const std::string name = dir.filename().string();
    auto model = onnx::load_model(dir / "model.onnx");
    if (!model) {
      // The loader refusing a model (e.g. sequence or optional types) is reported, not hidden.
      ++load_errors;
      std::printf("[ LOAD ERR ] %s: %s\n", name.c_str(), model.status().message().c_str());
      continue;
    }
    if (has_non_tensor_io(model->graph)) {
      ++non_tensor;  // sequences and optionals: the runtime runs tensors only
      std::printf("[ NON-TENSOR ] %s\n", name.c_str());
      continue;
    }
    const std::vector<std::string> missing = runtime::unsupported_ops(*model, *backend);
    if (!missing.empty()) {
      ++skipped;
      for (const std::string& op : missing) ++unsupported[op];
      std::printf("[ UNSUPPORTED ] %s: %s\n", name.c_str(),
                  fmt::format("{}", fmt::join(missing, " ")).c_str());
      continue;
    }
    const std::string why = run_case(*model, *backend, dir);
    const auto it = xfail.find(name);
    if (it != xfail.end()) {
      if (why.empty()) {
        ++unexpected_pass;
        ADD_FAILURE() << name << " passes but is listed in expected_failures.txt: remove it";
      } else {
        ++xfailed;
        std::printf("[ XFAIL ] %s: %s\n", name.c_str(), why.c_str());
      }
      continue;
    }
    if (why.empty()) {
      ++passed;
    } else {
      ++failed;
      ADD_FAILURE() << name << ": " << why;
    }
  }
  std::vector<std::string> ops;
  for (const auto& [op, n] : unsupported) ops.push_back(fmt::format("{}({})", op, n));
  std::printf(
      "conformance: %zu cases: %d passed, %d failed, %d expected failures, %d unexpectedly "
      "passed, %d skipped (unsupported ops), %d skipped (sequence/optional values), %d not "
      "loadable\n",
      cases.size(), passed, failed, xfailed, unexpected_pass, skipped, non_tensor, load_errors);
  std::printf("unsupported ops (cases): %s\n", fmt::format("{}", fmt::join(ops, " ")).c_str());
  EXPECT_GT(passed, 0);
}

}  // namespace
}  // namespace ptq::test
