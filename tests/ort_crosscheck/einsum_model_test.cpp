// A model whose attention is written with torch.einsum (scripts/export_einsum_model.py, in
// $PTQ_TEST_DATA/models): ptqkit's runtime runs it as ONNX Runtime does (onnxruntime-node
// through ort_outputs.js, rel L2 <= 1e-4), it calibrates and quantizes, the quantized model runs
// in ONNX Runtime and agrees with ptqkit's run of it, and its Einsum nodes stay float
// (docs/QUANTIZED_OPS.md) while its Gemm and MatMul layers get Q/DQ.
// node or ORT missing, or the test data missing, fails the test (never skips).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "cli/run_ptq.h"
#include "common/ort_runner.h"
#include "common/paths.h"
#include "ptq/data.h"
#include "ptq/metrics.h"
#include "ptq/onnx.h"

namespace ptq {
namespace {

using ptq::testing::scratch_dir;
using ptq::testing::test_data_dir;

namespace fs = std::filesystem;
using ptq::testing::run_ptq;

// ORT on all 8 samples in one batch, with every graph optimization.
void run_ort(const fs::path& model, const fs::path& samples, const fs::path& out) {
  testing::run_ort_script("ort_crosscheck/ort_outputs.js",
                          {model.string(), samples.string(), "8", "8", out.string(), "all"});
}

void run_ours(const fs::path& model, const fs::path& samples, const fs::path& out) {
  auto r = run_ptq({"run", model.string(), "--data", samples.string(), "--batch", "8", "-o",
                    out.string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

metrics::Agreement agreement(const fs::path& ours, const fs::path& theirs) {
  auto a = data::load_npy(ours / "output.npy");
  auto b = data::load_npy(theirs / "output.npy");
  EXPECT_TRUE(a.has_value() && b.has_value());
  metrics::Agreement m;
  if (a && b) {
    EXPECT_EQ(a->shape(), b->shape());
    EXPECT_TRUE(m.add(*b, *a).is_ok());
  }
  return m;
}

TEST(EinsumModel, RunsAsOnnxRuntimeCalibratesAndQuantizes) {
  const fs::path model = test_data_dir() / "models" / "einsum_attention.onnx";
  const fs::path samples = test_data_dir() / "models" / "einsum_attention.samples.npy";
  ASSERT_TRUE(fs::exists(model) && fs::exists(samples))
      << model << " is missing: run scripts/make-testdata.sh " << test_data_dir();
  const fs::path work = scratch_dir({"einsum_model"});
  run_ours(model, samples, work / "ptq");
  run_ort(model, samples, work / "ort");
  const metrics::Agreement f = agreement(work / "ptq", work / "ort");
  EXPECT_LE(f.rel_l2(), 1e-4);

  const fs::path cache = work / "cache.json";
  auto cal = run_ptq({"calibrate", model.string(), "--data", samples.string(), "--batch", "4",
                      "-o", cache.string(), "--quiet"});
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const fs::path q = work / "q.onnx";
  auto quant = run_ptq({"quantize", model.string(), "--cache", cache.string(), "-o", q.string(),
                        "--quiet"});
  ASSERT_EQ(quant.exit_code, 0) << quant.err;

  auto qm = onnx::load_model(q);
  ASSERT_TRUE(qm.has_value()) << qm.status().message();
  int einsums = 0, dequantized_products = 0;
  for (const ir::Node& n : qm->graph.nodes) {
    auto from_dq = [&](const std::string& input) {
      for (const ir::Node& p : qm->graph.nodes) {
        if (!p.outputs.empty() && p.outputs[0] == input) return p.op_type == "DequantizeLinear";
      }
      return false;
    };
    if (n.op_type == "Einsum") {
      ++einsums;
      for (const std::string& in : n.inputs) EXPECT_FALSE(from_dq(in)) << n.name << " " << in;
    }
    if ((n.op_type == "Gemm" || n.op_type == "MatMul") && from_dq(n.inputs[0])) {
      ++dequantized_products;
    }
  }
  EXPECT_EQ(einsums, 4);
  EXPECT_GT(dequantized_products, 0);

  run_ours(q, samples, work / "ptq-q");
  run_ort(q, samples, work / "ort-q");
  const metrics::Agreement m = agreement(work / "ptq-q", work / "ort-q");
  std::printf("float rel_l2 %.3g; quantized: cosine %.6f rel_l2 %.3g\n", f.rel_l2(), m.cosine(),
              m.rel_l2());
  EXPECT_GE(m.cosine(), 0.995);
}

}  // namespace
}  // namespace ptq
