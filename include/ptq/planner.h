// The planner module (ptq_planner): where QuantizeLinear/DequantizeLinear go and what they hold.
// See shared specs/quantization.md and the Planner section of docs/DESIGN.md.
//
// Two steps, as in ONNX Runtime's QDQ quantizer: plan() marks, without touching the model, which
// node inputs ("edges") read a quantized tensor and in which role (activation per-tensor, weight
// per-channel with an axis, bias), which tensors share one scale (groups through data-movement
// ops and Concat), which BatchNormalizations fold into their Conv, and per node whether it is
// quantized and why not. apply() then rewrites the model in one pass. quantize() does both.
//
// Edges, not tensors, are the unit of marking: a tensor feeding an INT8 conv and a float Softmax
// gets one Q->DQ pair read by the conv only, and the conv branch into a residual Add stays float.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ptq/calib_cache.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::planner {

// Who consumes the Q/DQ model: decides bias form, output Q/DQ and allowed types.
enum class Target {
  kTensorRT,  // INT8, zero points 0, float bias, no output Q/DQ (TensorRT explicit quantization)
  kOrt,       // ONNX Runtime QDQ form: int32 bias, Q/DQ on outputs its fusions expect
};
enum class ActivationType { kInt8, kUInt8 };  // kUInt8 (asymmetric) only for kOrt

std::string_view target_name(Target target);            // "tensorrt" | "ort"
Expected<Target> parse_target(std::string_view name);    // usage error listing the choices
Expected<ActivationType> parse_activation_type(std::string_view name);  // "int8" | "uint8"

// Where a kOrt model runs: the ONNX Runtime execution provider.
enum class OrtProvider { kCpu, kCuda, kTensorRT };
std::string_view ort_provider_name(OrtProvider provider);  // "cpu" | "cuda" | "tensorrt"
Expected<OrtProvider> parse_ort_provider(std::string_view name);  // usage error listing them

// The activation type a runtime runs fastest, and why in a few words.
struct ActivationChoice {
  ActivationType type = ActivationType::kInt8;
  std::string_view why;
};
// kTensorRT: int8 (all it takes). kOrt: uint8 on the CPU provider (its x86 kernels run U8S8
// far faster than S8S8), int8 on CUDA and TensorRT (symmetric S8S8). docs/PERF.md measures it.
ActivationChoice fastest_activation_type(Target target, OrtProvider provider);
// Per unit name, one bias correction per output channel (PlanOptions::bias_corrections).
using BiasCorrections = std::map<std::string, std::vector<double>>;

struct PlanOptions {
  Target target = Target::kTensorRT;
  // Nodes left float: each entry matches a node name exactly or as an ECMAScript regex matched
  // against the whole name. An entry that matches no node is an error naming close matches.
  std::vector<std::string> exclude_nodes;
  // Op types left float (e.g. "MatMul"). An op type absent from the model is a warning.
  std::vector<std::string> exclude_op_types;
  // When not empty, only the nodes these name (entries as in exclude_nodes; one matching
  // nothing is an error) or of these op types (absent: a warning) are quantized; every other
  // node stays float, as ONNX Runtime's nodes_to_quantize and op_types_to_quantize. The
  // exclusions above still apply within them.
  std::vector<std::string> quantize_nodes;
  std::vector<std::string> quantize_op_types;
  bool per_tensor_weights = false;  // one scale per weight tensor instead of per output channel
  // kTensorRT only: keep weights float and put Q + DQ after them (instead of int8 + DQ).
  bool weights_float = false;
  ActivationType activation_type = ActivationType::kInt8;
  // Convs with fewer input channels stay float (no INT8 speed-up; first-layer pixel spikes).
  // 0 quantizes every conv.
  int64_t min_conv_channels = 16;
  bool quantize_matrix_vector = false;  // quantize MatMuls with M or N = 1 too
  // Dims per value name used for planning in place of the model's declared and inferred ones
  // (the model itself is not changed): the model's input shapes bound and propagated
  // (onnx::bind_input_shapes), plus any measured by running the model. Of activations, only
  // the matrix-vector MatMul test (M, N) reads dims.
  std::map<std::string, std::vector<ir::Dim>> value_dims;
  // When set, a decision that needs a dim still symbolic or unknown (see unresolved_dims) is an
  // error naming the node, tensor and dim; when not, such a dim is taken as not 1.
  bool require_shapes = false;
  // How the caller's user gives input shapes: ends that error, followed by the graph inputs to
  // bind as NAME=dims ("<seq>" where a dim is missing). The command line names its flags here.
  std::string shapes_remedy = "bind the input shapes (PlanOptions::value_dims):";
  // kOrt: also put output Q/DQ on tensors that feed only Softmax/LayerNorm/Exp-like ops.
  bool quantize_float_sensitive = false;
  bool fold_batchnorm = true;  // fold BatchNormalization after a quantized Conv into its weights
  // A model that already holds Q/DQ is refused unless set; quantize() then strips the old Q/DQ
  // (strip_qdq) before planning.
  bool requantize = false;
  // Restrict to some quantization units (see Unit); names as Plan::units lists them.
  std::vector<std::string> only_units;  // empty: every unit
  std::vector<std::string> skip_units;
  // Bias correction (Nagel et al. 2019): per unit (Plan::units' names), one value per output
  // channel subtracted from the bias of its weighted op when apply() quantizes its weight, after
  // BatchNormalization folding; a Conv/Gemm without a bias gets one. The values are the mean
  // output shift the quantized weights cause (calibration::measure_bias_corrections). MatMul
  // has no bias input and is not corrected.
  BiasCorrections bias_corrections;
  // Recorded in the model's metadata_props by apply() when not empty.
  std::string ptqkit_version;
  std::string method;      // calibration method, e.g. "entropy"
  std::string cache_hash;  // hash or path of the calibration cache used

  // Checks the options by themselves (not against a model): usage errors.
  Status validate() const;
};

enum class Role { kActivation, kWeight, kBias };
std::string_view role_name(Role role);

// One node input that reads a quantized tensor.
struct QuantEdge {
  size_t node = 0;      // index into graph.nodes of the model plan() saw
  size_t input = 0;     // input slot
  std::string tensor;   // the tensor in that slot when planned
  Role role = Role::kActivation;
  int64_t axis = -1;    // weights: per-channel axis, -1 per-tensor; bias: 0
  // Bias (kOrt): the edges (same node) whose scales multiply into the bias scale.
  size_t bias_input_slot = 0;
  size_t bias_weight_slot = 1;
  std::vector<std::string> units;  // units that want this edge quantized (kept if one is selected)
};

// Per tensor, the summary of its edges (for tests, lint and reports).
struct TensorPlan {
  std::string name;
  Role role = Role::kActivation;
  int64_t axis = -1;
  std::string scale_group;  // activations: name of the ScaleGroup whose scale it uses
  std::vector<std::pair<size_t, size_t>> uses;  // (node, input) reading the Q/DQ output
};

// Tensors joined through data-movement ops or a Concat: one scale, from the widest range.
struct ScaleGroup {
  std::string name;                  // names the shared scale initializer (<name>_scale)
  std::vector<std::string> members;  // every tensor of the group, quantized or not
  bool has_range = false;
  calib::TensorRange range;  // amax = max of members' amax; min/max widened likewise
};

struct NodePlan {
  std::string name;
  std::string op_type;
  bool quantized = false;  // the node reads at least one Q/DQ input of its own unit
  std::string reason;      // why (not): "quantized", "excluded by pattern 'x'", …
  std::string unit;        // unit anchored at this node, or ""
};

// A quantization unit: a weighted op with the Q/DQ on its inputs, a residual Add, a pooling op
// or a Concat. Sensitivity sweeps quantize one unit at a time (PlanOptions::only_units).
struct Unit {
  std::string name;  // the anchor node's name (or "<op>_<index>" when it has none), unique
  std::string kind;  // "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Pool", "Concat"
  size_t anchor = 0;
  std::vector<std::string> tensors;  // tensors whose Q/DQ belongs to the unit
};

struct BnFold {
  size_t conv = 0;  // Conv or ConvTranspose node index
  size_t bn = 0;    // BatchNormalization node index, removed by apply()
};

struct Plan {
  PlanOptions options;
  size_t node_count = 0;             // apply() checks the model still has these nodes
  std::vector<NodePlan> nodes;       // parallel to graph.nodes
  std::vector<QuantEdge> edges;      // after unit selection and range checks
  std::vector<TensorPlan> tensors;   // sorted by name
  std::vector<ScaleGroup> groups;    // groups with at least one quantized member
  std::vector<Unit> units;           // every unit the model has (selected or not)
  std::vector<BnFold> folds;
  // Activations a quantized op needs that have no calibrated range: they stay float (and the
  // unit needing them, if any, too). Sorted.
  std::vector<std::string> float_tensors;
  std::vector<std::string> warnings;

  const TensorPlan* tensor(std::string_view name) const;
  const NodePlan* node(std::string_view name) const;
  const ScaleGroup* group_of(std::string_view tensor) const;
  const Unit* unit(std::string_view name) const;
};

// A dim a placement decision needs (MatMul M or N: matrix-vector MatMuls stay float) that the
// model's types, with PlanOptions::value_dims, leave symbolic or unknown.
struct UnresolvedDim {
  size_t node = 0;     // index into graph.nodes
  std::string tensor;  // the node input whose dim it is
  std::string dim;     // "M" or "N"
  std::string symbol;  // the dim's symbolic name; "" when unknown (or the rank is unknown)
};

// The unresolved dims of the nodes plan() would quantize, in node order. A caller that can run
// the model measures these tensors' shapes into PlanOptions::value_dims.
Expected<std::vector<UnresolvedDim>> unresolved_dims(const ir::Model& model,
                                                     const PlanOptions& options);

// Marks the model for quantization. Errors: invalid options, an exclusion or unit naming
// nothing (with close matches), Q/DQ already present (without requantize), opset < 13 that
// cannot be upgraded here, with require_shapes a dim a decision needs that is unresolved (the
// first, with the graph inputs to bind).
Expected<Plan> plan(const ir::Model& model, const calib::CalibrationTable& table,
                    const PlanOptions& options);

// plan() for many unit selections of one model and table, as a sensitivity sweep makes: the
// placement rules run once, in create(); each plan() only selects units. `model` and `table`
// are borrowed and must outlive the planner; plan() may be called from several threads.
class Planner {
 public:
  static Expected<Planner> create(const ir::Model& model, const calib::CalibrationTable& table,
                                  const PlanOptions& options);
  // What plan(model, table, options) gives with options' only_units and skip_units replaced.
  Expected<Plan> plan(const std::vector<std::string>& only_units,
                      const std::vector<std::string>& skip_units) const;

  Planner(Planner&&) noexcept;
  Planner& operator=(Planner&&) noexcept;
  ~Planner();

 private:
  struct Impl;
  explicit Planner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// An activation given a Q/DQ pair, with what it holds.
struct QuantizedActivation {
  std::string tensor;
  float scale = 1.0f;
  int32_t zero_point = 0;
  calib::TensorRange range;  // its scale group's (no histogram)
};

struct QuantizeResult {
  int64_t quantize_nodes = 0;    // QuantizeLinear nodes inserted
  int64_t dequantize_nodes = 0;  // DequantizeLinear nodes inserted
  int64_t folded_batchnorms = 0;
  int64_t quantized_weights = 0;  // weight tensors stored as int8 (or Q/DQ'd with weights_float)
  int64_t corrected_biases = 0;   // biases changed by PlanOptions::bias_corrections
  std::vector<std::string> quantized_nodes;  // labels of nodes reading Q/DQ of their own unit
  std::vector<std::string> float_tensors;    // as Plan::float_tensors
  std::vector<QuantizedActivation> activations;  // in the order their Q/DQ were inserted
  // Nodes that stayed float for a reason other than having no quantization rule or being
  // folded (excluded, outside the nodes to quantize, no calibrated range, …), with the reason.
  std::vector<NodePlan> float_nodes;
  std::vector<std::string> warnings;
};

// Weights quantized once for many apply() calls on copies of one model, as a sensitivity
// sweep's variants are: a float weight that is one of `source`'s initializers (the same bytes
// in memory, as a borrowing copy holds them) gets its scales and int8 tensor computed once,
// and every model written holds a view of that tensor. Other weights (a BatchNormalization
// folded into them, scales widened for a bias) are computed as without a memo. Thread-safe.
// `source` must outlive the memo, and the memo the models written with it.
class WeightMemo {
 public:
  explicit WeightMemo(const ir::Model& source);
  // weight_scales(w, axis).
  std::vector<float> scales(const ir::Tensor& w, int64_t axis);
  // quantize_weights(w, axis, scales): a view of the memo's tensor where `w` is a source's.
  ir::Tensor quantized(const ir::Tensor& w, int64_t axis, const std::vector<float>& scales);
  // Every name the source graph uses: apply() on a copy of it looks up these instead of
  // collecting the copy's names again.
  const std::unordered_set<std::string>& names() const { return names_; }

 private:
  struct Entry {
    const void* data = nullptr;
    int64_t axis = -1;
    ir::Shape shape;
    std::vector<float> scales;
    ir::Tensor quantized;
    bool has_quantized = false;
  };
  Entry* find(const ir::Tensor& w, int64_t axis);
  std::unordered_set<const void*> sources_;
  std::unordered_set<std::string> names_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// Rewrites the model in place as planned: BN folding, Q/DQ insertion (fresh names
// <t>_QuantizeLinear[_Output], <t>_DequantizeLinear[_Output], <t>_scale, <t>_zero_point,
// <w>_quantized), int8 weights, opset >= 13, metadata. The model must be the one planned.
// With `memo`, weights of its source model are quantized once across calls.
Expected<QuantizeResult> apply(ir::Model& model, const Plan& plan, WeightMemo* memo = nullptr);

// plan() then apply(); with options.requantize, strip_qdq() first.
Expected<QuantizeResult> quantize(ir::Model& model, const calib::CalibrationTable& table,
                                  const PlanOptions& options);

// Removes Q->DQ pairs on activations and turns DQ of constant int8/uint8/int32 tensors back
// into float initializers. Errors on other quantized ops (QLinearConv, ConvInteger, …).
// Returns the number of nodes removed.
Expected<int64_t> strip_qdq(ir::Model& model);

// True when the model holds QuantizeLinear/DequantizeLinear or integer-arithmetic ops.
bool has_quantization(const ir::Model& model);

// The tensors a calibration run must measure for these options: float graph inputs and every
// activation a quantized op would read, with every member of its scale group. Sorted.
Expected<std::vector<std::string>> quantizable_activations(const ir::Model& model,
                                                           const PlanOptions& options);

// ---- SmoothQuant (docs/SMOOTHQUANT.md) -------------------------------------------------------

struct SmoothQuantOptions {
  // s_j = max|X_j|^alpha / max|W_j|^(1 - alpha): 0 leaves the activation's range, 1 moves it all.
  double alpha = 0.5;
  // A tensor is smoothed when its largest channel max exceeds this many times the median one.
  double outlier_ratio = 8.0;
  Status validate() const;  // usage error: alpha outside [0, 1], ratio < 1
};

// An activation SmoothQuant may smooth: read on its last axis (channels = the weight's K) by
// one or more MatMul (2-D constant B) or Gemm (transA 0, 2-D constant B) nodes at slot 0.
struct SmoothTarget {
  std::string tensor;
  std::vector<size_t> consumers;  // node indices of those MatMul/Gemm
  int64_t channels = 0;
};
// Every such activation of `model`, in graph order of its first consumer; a tensor whose
// smoothable readers disagree on K is left out.
std::vector<SmoothTarget> smoothquant_targets(const ir::Model& model);

// The factors for every target whose channel maxima (`channel_max`, max |x| per last-axis
// channel over the calibration data) hold an outlier channel, by the rule of `options`;
// targets missing from `channel_max` are skipped. max|W_j| is taken over all the target's
// consumers, so one factor serves them all. A factor is 1 where either max is 0.
Expected<calib::SmoothQuantRecord> smoothquant_factors(
    const ir::Model& model, const std::map<std::string, std::vector<double>>& channel_max,
    const SmoothQuantOptions& options);

// Smooths `model` in place: each target tensor X of `record` becomes X / s and its consumers'
// weights s * W (row j of K). The division folds into the producer where it is a
// LayerNormalization over the last axis, a Mul by a constant [C] vector, or such a Mul followed
// by an Add of a constant [C] vector (a spelled-out LayerNorm's affine part), and X is read only
// by the smoothed nodes; otherwise a Mul by 1/s is inserted before them. Invalid input when a
// record's tensor is no target of the model or its factor count is not its channel count.
Status apply_smoothquant(ir::Model& model, const calib::SmoothQuantRecord& record);

// ---- Opset ----------------------------------------------------------------------------------

// Raises the default-domain opset to 13 when every node's op is defined the same way at 13 as at
// the model's opset (no attribute-to-input moves or axis changes), so the version can simply be
// raised. Otherwise an error naming the first blocking node: convert with the onnx module first.
Status upgrade_opset_to_13(ir::Model& model);
// The same check without changing the model.
Status check_opset_upgradable(const ir::Model& model);

// ---- Arithmetic (symmetric INT8, shared by apply(), tests and reports) ------------------------

// Scales max|W_c| / 127 per slice along `axis` (-1: one scale), 1.0 for an all-zero slice.
// `w` must be float32.
std::vector<float> weight_scales(const ir::Tensor& w, int64_t axis);
// round_half_to_even(W / scale) clamped to [-127, 127], as int8.
ir::Tensor quantize_weights(const ir::Tensor& w, int64_t axis, std::span<const float> scales);
// The float32 weight a DequantizeLinear of quantize_weights(w, axis, weight_scales(w, axis))
// computes (q * scale): what a quantized weighted op multiplies by, for bias correction.
ir::Tensor fake_quantize_weights(const ir::Tensor& w, int64_t axis);
// Widens weight_scales[c] (never shrinks) so that round(bias[c] / (input_scale * scale[c]))
// fits in int32. Returns how many channels were widened.
int64_t widen_scales_for_bias(std::span<const float> bias, float input_scale,
                              std::vector<float>& weight_scales);
// int32 bias = round_half_to_even(bias[c] / (input_scale * weight_scales[c])); the bias scales
// (input_scale * weight_scales[c], as float32) are written to `bias_scales`.
ir::Tensor quantize_bias(const ir::Tensor& bias, float input_scale,
                         std::span<const float> weight_scales, std::vector<float>& bias_scales);

// Folds y = BN(conv(x)) into conv weights: W'[o] = W[o] * g[o] / sqrt(v[o] + eps),
// b'[o] = (b[o] - m[o]) * g[o] / sqrt(v[o] + eps) + beta[o]. `bias` may be empty (zeros).
// `transposed` selects ConvTranspose's [Cin, Cout/group, …] layout. All float32.
Status fold_batchnorm_into(ir::Tensor& weight, ir::Tensor& bias, const ir::Tensor& gamma,
                           const ir::Tensor& beta, const ir::Tensor& mean, const ir::Tensor& var,
                           float epsilon, bool transposed, int64_t group);

}  // namespace ptq::planner
