// The report module (ptq_report): looks at a quantized model the way TensorRT's TREx looks at
// an engine. Per-layer precision, counts and parameter bytes by op type and precision, a graph
// drawing (DOT, SVG through Graphviz), Q/DQ lint (ptq/lint.h), one self-contained HTML page
// comparing quantized variants of a model, and the activation scales of a Q/DQ model as a
// calibration table. See the Report section of docs/DESIGN.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/ir.h"
#include "ptq/lint.h"
#include "ptq/status.h"

namespace ptq::report {

// ---- Precision ------------------------------------------------------------------------------

// What a node runs in, read from the Q/DQ around it: kInt8 when its inputs are dequantized
// (a weighted op needs every activation and its weight quantized), kMixed for a weighted op
// with some quantized inputs only, kFloat otherwise; kQdq for QuantizeLinear/DequantizeLinear,
// kOther for nodes with no float data (shape computations, integer ops).
enum class Precision { kInt8 = 0, kMixed, kFloat, kQdq, kOther };
inline constexpr size_t kPrecisionCount = 5;
std::string_view precision_name(Precision p);  // "int8" "mixed" "float" "qdq" "other"

struct LayerInfo {
  size_t node = 0;   // index into graph.nodes
  std::string name;  // node name, or "<op>_<index>" when it has none
  std::string op_type;
  Precision precision = Precision::kFloat;
  std::string inputs;       // "x:int8, w:int8/axis0, b:float" (dequantized inputs show int8)
  std::string output;       // first output "name [1, 64, 56, 56] float32" (shape when known)
  int64_t params = 0;       // elements of its constant inputs (weights, biases; int8 when DQ'd)
  int64_t param_bytes = 0;  // their bytes as stored (a constant read by several nodes counts once)
};

using PrecisionCounts = std::array<int64_t, kPrecisionCount>;  // indexed by Precision

struct OpTypeRow {
  std::string op_type;
  PrecisionCounts count{};
  PrecisionCounts param_bytes{};
  int64_t total_count() const;
  int64_t total_bytes() const;
};

struct PrecisionSummary {
  std::vector<LayerInfo> layers;      // graph order; Constant nodes left out
  std::vector<OpTypeRow> by_op_type;  // sorted by op type
  PrecisionCounts count{};
  PrecisionCounts param_bytes{};
  int64_t quantize_nodes = 0;
  int64_t dequantize_nodes = 0;
  int64_t weighted_ops = 0;       // Conv, ConvTranspose, Gemm, MatMul
  int64_t weighted_int8 = 0;      // of those, running in INT8
  int64_t total_param_bytes = 0;  // every initializer and Constant value
};

PrecisionSummary summarize_precision(const ir::Model& model);

// The per-op-type table as aligned text (what `ptq lint --summary` prints).
std::string precision_text(const PrecisionSummary& summary);

// "1.5 MiB"
std::string bytes_str(int64_t bytes);

// ---- Graph drawing ----------------------------------------------------------------------------

struct DotOptions {
  // Draw an activation's Q -> DQ pair as one bold "int8" edge, and a weight's DQ as a label on
  // its consumer, instead of as nodes (the engine's view: Q/DQ fuse into their neighbours).
  bool collapse_qdq = true;
  std::string title;  // graph label; "" for none
};

// Graphviz DOT text: nodes coloured by precision (legend included), edges labelled with shape
// and dtype where the model declares or infers them.
std::string graph_dot(const ir::Model& model, const DotOptions& options = {});

// True when Graphviz's `dot` is on PATH.
bool have_graphviz();
// Runs `dot -Tsvg` on `dot_text`; errors when dot is missing or fails (its first stderr line).
Expected<std::string> render_svg(std::string_view dot_text);

// ---- Inputs of the HTML report ------------------------------------------------------------------

// Accuracy figures of one model, e.g. from `ptq eval --json`: every top-level number (and the
// numbers of a top-level "accuracy" or "metrics" object), in file order; "model" if present.
struct EvalResult {
  std::string source;  // the file it came from
  std::string model;   // the "model" field, when the file names one
  std::vector<std::pair<std::string, double>> metrics;  // e.g. {"top1", 0.71}
};
Expected<EvalResult> parse_eval_json(std::string_view text, std::string_view file_name);

// A sensitivity sweep (issue 8's REPORT.json). What is read:
//   {"metric": "top1", "layers": [{"name": "conv1", "metric": 0.70, …}, …], …}
// Per layer "name" and a numeric "metric" are required; the layer's other scalar fields are
// kept as extra columns; top-level scalars other than "layers" are kept as `info` (e.g. "mode",
// "baseline", "float_metric"); a top-level "float_set"/"float_layers" array of names is kept.
struct SensitivityLayer {
  std::string name;
  double metric = 0.0;
  std::vector<std::pair<std::string, std::string>> extra;  // field -> value as text
};
struct SensitivityReport {
  std::string source;
  std::string metric;                    // "" when the file does not name it
  std::vector<SensitivityLayer> layers;  // file order
  std::vector<std::pair<std::string, std::string>> info;
  std::vector<std::string> float_set;
};
Expected<SensitivityReport> parse_sensitivity_json(std::string_view text,
                                                   std::string_view file_name);

// A per-tensor error trace (`ptq compare --per-tensor --json`, docs/COMPARE.md). What is read:
//   {"model_a": …, "model_b": …, "jump_db": 10, "tensors": [{"name": …, "sqnr_db": 38.2,
//    "cosine": 0.9998, "op_type": …, "drop_db": 1.1, "jump": false, "dequantized": true}, …]}
// Per tensor a string "name" and an "sqnr_db" (a number, or "inf", "-inf", "nan" as compare
// writes them) are required; the other fields are optional. Tensors stay in file (graph) order.
struct TraceTensor {
  std::string name;
  std::string op_type;
  double sqnr_db = 0.0;
  double cosine = 0.0;   // NaN when the file has none
  double drop_db = 0.0;  // NaN when the file has none
  bool jump = false;
  bool dequantized = false;
};
struct ErrorTrace {
  std::string source;
  std::string model_a;  // the reference, "" when the file does not name it
  std::string model_b;
  double jump_db = 0.0;  // NaN when the file does not give it
  std::vector<TraceTensor> tensors;
};
Expected<ErrorTrace> parse_trace_json(std::string_view text, std::string_view file_name);

// One quantized variant (or the float model) shown in the report.
struct ModelEntry {
  std::string label;                 // short name shown in tables (the file name)
  std::string path;                  // as given on the command line
  int64_t file_bytes = -1;           // size on disk (with external data), -1 when unknown
  const ir::Model* model = nullptr;  // borrowed; must outlive the html_report() call
  std::optional<EvalResult> eval;
};

struct HtmlOptions {
  std::string title;  // "" = "ptq report: <first label>"
  LintOptions lint{};
  std::string graph_svg;     // inline SVG drawing of the first model ("" = no drawing)
  std::string graph_note;    // shown instead when there is no drawing (e.g. "dot not found")
  std::string graph_text;    // also shown, preformatted, before the footer when there is no
                             // drawing (e.g. the DOT text)
  std::string generated_by;  // footer text, e.g. "ptq 0.1.0"
  const ErrorTrace* trace = nullptr;  // borrowed; shown as a chart along the graph when given
};

// One self-contained HTML page (no script, no external resource): summary, precision table and
// chart, layer table, lint findings of models[0]; sensitivity results and the error trace when
// given; every model side by side when there are several. `models` must not be empty.
std::string html_report(std::span<const ModelEntry> models, const SensitivityReport* sensitivity,
                        const HtmlOptions& options);

// ---- Clipped ranges ---------------------------------------------------------------------------

// One warning per activation QuantizeLinear of the quantized model `q` whose symmetric range
// clips over 1 % of the calibration values (metrics::clipped_fraction over `table`'s
// histograms), naming the quantized nodes that read it: a spike in the data decided the range
// (specs/quantization.md, "Known snags"). Asymmetric Qs and tensors without a histogram are
// skipped.
std::vector<std::string> clipping_warnings(const ir::Model& q,
                                           const calib::CalibrationTable& table);

// ---- From Q/DQ to a calibration table
// ------------------------------------------------------------

// The activation ranges an existing Q/DQ model encodes (e.g. one exported from QAT): for each
// QuantizeLinear of a non-constant tensor, amax = scale * 127 (int8, zero point 0), or for an
// asymmetric uint8 Q, min/max = (0 - zp) * scale, (255 - zp) * scale and amax = max(|min|,
// |max|). A tensor quantized by several Qs keeps the widest range (with a warning). Method
// "qdq"; the model identity is left empty (the table describes the float model the Q/DQ model
// came from, whose hash is unknown). Errors: no activation QuantizeLinear, a scale that is not a
// positive finite per-tensor constant.
Expected<calib::CalibrationTable> qdq_to_table(const ir::Model& model,
                                               std::vector<std::string>* warnings = nullptr);

}  // namespace ptq::report
