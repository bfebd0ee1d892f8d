// The compare module (ptq_compare): how closely a test model (typically the Q/DQ model) follows
// a reference model (typically the float model it came from) on the same data. Per output:
// cosine similarity, SQNR, max abs difference, relative L2; top-1 agreement of classifiers.
// With Options::per_tensor, the same for every tensor both models compute, in graph order,
// with the tensors where the error jumps marked (docs/COMPARE.md). Only float64 running sums
// are kept per tensor, so memory does not grow with the sample count; a per-tensor comparison
// also holds one batch of the reference model's traced tensors (what the test model's are
// compared with while it runs).
//
//   compare::Side ref{float_model, *float_executor, float_data, "fp32.onnx"};
//   compare::Side test{qdq_model, *qdq_executor, qdq_data, "int8.onnx"};
//   PTQ_ASSIGN_OR_RETURN(compare::Result r, compare::compare(ref, test, {.per_tensor = true}));
//   fmt::print("{}", compare::result_text(r));
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/metrics.h"
#include "ptq/runtime.h"
#include "ptq/status.h"

namespace ptq::compare {

// ---- Which tensors are compared ----------------------------------------------------------------

// A tensor of the reference model and the value of the test model that stands for it.
struct TensorPair {
  std::string reference;
  // The test model's value: the output of the DequantizeLinear whose QuantizeLinear reads a
  // tensor of the reference tensor's name (what the quantized consumers read in its place),
  // else the test model's value of the same name.
  std::string test;
  bool dequantized = false;  // `test` is a DequantizeLinear output
};

// The tensors both models compute, in the reference model's topological order: graph inputs
// the test model quantizes, then node outputs. Values computed from constants alone are left
// out (they do not depend on the data); the reference's own Q/DQ, if any, is not looked through
// (it is meant to be the float model). Non-float values are dropped later, when seen. An error
// naming neither model when they share no tensor (the caller names them).
Expected<std::vector<TensorPair>> match_tensors(const ir::Graph& reference, const ir::Graph& test);

// ---- Running the comparison -------------------------------------------------------------------

// One model and what runs it. The data is bound to this model's graph (each model binds the
// source to its own inputs and dtypes); both must give the same batches.
struct Side {
  const ir::Model& model;
  runtime::Executor& executor;
  data::Dataset& data;
  std::string label;  // how messages and reports name it (the file path)
};

struct Options {
  bool per_tensor = false;
  // A traced tensor is marked as a jump when its SQNR is more than this many dB below its
  // reference level (TensorTrace::reference_db).
  double jump_db = 10.0;
  // Called after each batch with the samples compared so far.
  std::function<void(int64_t samples)> progress;
};

struct OutputAgreement {
  std::string name;  // the reference model's output
  metrics::Agreement agreement;
};

// A traced tensor and where its error comes from.
struct TensorTrace {
  TensorPair pair;
  std::string node;     // the reference model's producer ("" for a graph input)
  std::string op_type;  // its op type ("" for a graph input)
  // The nearest traced tensors upstream of it: its producer's inputs, looking through untraced
  // values to their own producers' inputs (constants and unquantized graph inputs carry none).
  std::vector<std::string> inputs;
  metrics::Agreement agreement;
  // The SQNR this tensor would keep if it added no error of its own: the lowest SQNR among
  // `inputs`, and kCleanDb where none of them carries error (no inputs, or all exact).
  double reference_db = 0.0;
  bool jump = false;  // sqnr < reference_db - Options::jump_db
  double drop_db() const { return reference_db - agreement.sqnr_db(); }
};

// The reference level of a tensor whose inputs carry no error (the first quantized tensors):
// what a well-calibrated INT8 tensor keeps after its own rounding. A full-scale 8-bit signal
// keeps 48 dB (6.02 dB per bit); real activations keep 30-40 dB (ranges set for their tails, a
// symmetric range over a ReLU's output uses 7 of the 8 bits: the example's stem 33.6 dB).
inline constexpr double kCleanDb = 40.0;

struct Result {
  std::string reference_label;
  std::string test_label;
  int64_t samples = 0;
  std::vector<OutputAgreement> outputs;  // the reference model's outputs, in order
  // The first output has rows of scores (rank >= 2): top-1 agreement is meaningful.
  bool classifier = true;
  int64_t top1_same = 0;
  bool per_tensor = false;
  double jump_db = 0.0;
  std::vector<TensorTrace> tensors;  // per_tensor only: graph order, float tensors seen
  std::optional<double> top1_agreement() const;
};

// The models take the same inputs: as many, each (matched by name when the test model has
// every input name of the reference, else by position) of the same rank with equal fixed dims.
// The dtypes may differ (a float16 model against its float32 original): binding the data
// checks each model's own. An error naming both labels and the inputs at fault.
Status check_same_inputs(const ir::Model& reference, std::string_view reference_label,
                         const ir::Model& test, std::string_view test_label);

// Runs both models batch by batch over their data and accumulates the metrics. Outputs are
// matched by name when the test model has every output name of the reference, else by
// position (same count). The inputs are checked first (check_same_inputs). Per-tensor
// comparison needs executors that show observers the values on the host (the CPU backend).
Expected<Result> compare(const Side& reference, const Side& test, const Options& options);

// ---- Reporting ------------------------------------------------------------------------------

// The text `ptq compare` prints: a table of outputs, the top-1 agreement, and with per_tensor
// the tensors in graph order with "!" before each jump.
std::string result_text(const Result& r);

// The JSON `ptq compare --json` prints (docs/COMPARE.md gives the fields; infinities and NaN as
// the strings "inf", "-inf", "nan").
std::string result_json(const Result& r);

// Thresholds on the model outputs for CI use.
struct Gate {
  std::optional<double> min_sqnr_db;
  std::optional<double> min_cosine;
};

// Ok when every output meets the gate; otherwise an invalid-input error naming the first
// output below it, its value and the threshold (NaN fails).
Status check_gate(const Result& r, const Gate& gate);

}  // namespace ptq::compare
