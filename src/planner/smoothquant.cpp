// SmoothQuant (Xiao et al. 2022, arXiv:2211.10438) on the float model, before calibration:
// an activation X with outlier channels read by MatMul/Gemm is divided per channel by s and
// the weights' rows multiplied by s, so X W is unchanged while X's range shrinks. The rule and
// its reasons are in docs/SMOOTHQUANT.md.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ptq/ir/owned_copy.h"
#include "rewrite.h"

namespace ptq::planner {

namespace {

constexpr double kMinFactor = 1e-5;  // as the paper's code clamps s

bool is_float_matrix(const ir::Tensor* t) {
  return t != nullptr && t->dtype() == ir::DType::kFloat32 && t->shape().size() == 2;
}

// K of a MatMul/Gemm reading its activation at slot 0 with a constant 2-D weight; 0 if not one.
int64_t smoothable_k(const ir::Graph& graph, const ir::Node& node) {
  if (!node.in_default_domain() || node.inputs.size() < 2) return 0;
  if (node.op_type != "MatMul" && node.op_type != "Gemm") return 0;
  if (find_constant(graph, node.inputs[0]) != nullptr) return 0;
  const ir::Tensor* w = find_constant(graph, node.inputs[1]);
  if (!is_float_matrix(w)) return 0;
  if (node.op_type == "MatMul") return w->shape()[0];
  if (node.attr_int("transA", 0) != 0) return 0;
  return node.attr_int("transB", 0) != 0 ? w->shape()[1] : w->shape()[0];
}

bool transposed_weight(const ir::Node& node) {
  return node.op_type == "Gemm" && node.attr_int("transB", 0) != 0;
}

// max |W[k, :]| per input channel k (rows of [K, N], columns of Gemm's transposed [N, K]).
void weight_channel_max(const ir::Tensor& w, bool transposed, std::vector<double>& out) {
  const int64_t rows = w.shape()[0];
  const int64_t cols = w.shape()[1];
  const float* p = w.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      double& m = out[static_cast<size_t>(transposed ? c : r)];
      m = std::max(m, static_cast<double>(std::fabs(p[r * cols + c])));
    }
  }
}

// The median of the channel maxima (the lower middle one for an even count).
double median(std::vector<double> v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

bool has_outlier(const std::vector<double>& channel_max, double ratio) {
  const double top = *std::max_element(channel_max.begin(), channel_max.end());
  return top > ratio * median(channel_max);
}

// Stores `value` under `name` when `node` is its only reader and it is an initializer, else
// under a fresh name that `node`'s input `slot` then reads.
void store(ir::Graph& graph, ir::Node& node, size_t slot, ir::Tensor value, NameSet& names) {
  const std::string& name = node.inputs[slot];
  if (graph.initializer(name) != nullptr && count_uses(graph, name, {}) == 1) {
    graph.set_initializer(name, std::move(value));
    return;
  }
  std::string fresh = names.fresh(name + "_smoothed");
  graph.add_initializer(fresh, std::move(value));
  node.inputs[slot] = std::move(fresh);
}

// Multiplies `node`'s constant input `slot` by f per channel: row j of a [K, N] weight
// (`rows`), else element j of the last axis (a [N, K] weight, a channel vector).
void scale_channels(ir::Graph& graph, ir::Node& node, size_t slot, const std::vector<double>& f,
                    bool rows, NameSet& names) {
  ir::Tensor t = ir::owned_copy(*find_constant(graph, node.inputs[slot]));
  std::span<float> v = t.span<float>();
  const size_t row = rows ? v.size() / f.size() : 1;
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(v[i] * f[rows ? i / row : i % f.size()]);
  }
  store(graph, node, slot, std::move(t), names);
}

std::vector<double> inverse(const std::vector<double>& s) {
  std::vector<double> inv(s.size());
  for (size_t j = 0; j < s.size(); ++j) inv[j] = 1.0 / s[j];
  return inv;
}

// A float32 constant of `channels` elements along its last axis only ([C], [1, C], …).
bool is_channel_vector(const ir::Tensor* t, int64_t channels) {
  return t != nullptr && t->dtype() == ir::DType::kFloat32 && !t->shape().empty() &&
         t->shape().back() == channels && ir::num_elements(t->shape()) == channels;
}

// The slot of `node`'s channel-vector constant when its other input is not constant, else -1.
int channel_vector_slot(const ir::Graph& graph, const ir::Node& node, int64_t channels) {
  if (node.inputs.size() != 2) return -1;
  for (int slot = 0; slot < 2; ++slot) {
    if (is_channel_vector(find_constant(graph, node.inputs[slot]), channels) &&
        find_constant(graph, node.inputs[1 - slot]) == nullptr) {
      return slot;
    }
  }
  return -1;
}

// Folds X / s into the producer of X; false (nothing changed) where it has no such form.
bool fold_into_producer(ir::Graph& graph, const SmoothTarget& t, const std::vector<double>& s,
                        NameSet& names) {
  const ir::GraphIndex index(graph);
  if (graph.is_graph_output(t.tensor) || index.consumers(t.tensor) != t.consumers) return false;
  const int64_t p = index.producer(t.tensor);
  if (p < 0) return false;
  ir::Node& producer = graph.nodes[static_cast<size_t>(p)];
  const std::vector<double> inv = inverse(s);
  if (producer.op_type == "LayerNormalization" && producer.outputs[0] == t.tensor &&
      producer.attr_int("axis", -1) == -1 &&
      is_channel_vector(find_constant(graph, producer.input(1)), t.channels)) {
    const bool bias = is_channel_vector(find_constant(graph, producer.input(2)), t.channels);
    if (!bias && !producer.input(2).empty()) return false;
    scale_channels(graph, producer, 1, inv, false, names);
    if (bias) scale_channels(graph, producer, 2, inv, false, names);
    return true;
  }
  const int slot = channel_vector_slot(graph, producer, t.channels);
  if (slot < 0) return false;
  if (producer.op_type == "Mul") {
    scale_channels(graph, producer, static_cast<size_t>(slot), inv, false, names);
    return true;
  }
  if (producer.op_type != "Add") return false;
  // A spelled-out LayerNorm's affine part: (n * gamma) + beta, the product read only here.
  const std::string& product = producer.inputs[static_cast<size_t>(1 - slot)];
  const int64_t m = index.producer(product);
  if (m < 0 || graph.is_graph_output(product) || index.consumers(product).size() != 1) return false;
  ir::Node& mul = graph.nodes[static_cast<size_t>(m)];
  const int mul_slot = channel_vector_slot(graph, mul, t.channels);
  if (mul.op_type != "Mul" || mul_slot < 0) return false;
  scale_channels(graph, mul, static_cast<size_t>(mul_slot), inv, false, names);
  scale_channels(graph, producer, static_cast<size_t>(slot), inv, false, names);
  return true;
}

// The Mul by 1/s to insert before the first consumer; the consumers read its output.
struct PendingMul {
  size_t position = 0;
  ir::Node node{};
};

PendingMul smoothing_mul(ir::Graph& graph, const SmoothTarget& t, const std::vector<double>& s,
                         NameSet& names) {
  ir::Tensor inv(ir::DType::kFloat32, {t.channels});
  for (size_t j = 0; j < s.size(); ++j) inv.data<float>()[j] = static_cast<float>(1.0 / s[j]);
  const std::string scale = names.fresh(t.tensor + "_smooth_scale");
  graph.add_initializer(scale, std::move(inv));
  PendingMul pending;
  pending.position = t.consumers.front();
  pending.node.op_type = "Mul";
  pending.node.name = names.fresh(t.tensor + "_smooth");
  pending.node.inputs = {t.tensor, scale};
  pending.node.outputs = {names.fresh(t.tensor + "_smoothed")};
  if (const ir::ValueInfo* info = graph.find_value_info(t.tensor)) {
    ir::ValueInfo copy = *info;
    copy.name = pending.node.outputs[0];
    graph.inferred.push_back(std::move(copy));
  }
  for (size_t c : t.consumers) graph.nodes[c].inputs[0] = pending.node.outputs[0];
  return pending;
}

Status check_factors(const SmoothTarget* t, const std::string& name,
                     const std::vector<double>& s) {
  if (t == nullptr) {
    return invalid_input("SmoothQuant factors for '{}': no MatMul or Gemm with a constant 2-D "
                         "weight reads it in this model", name);
  }
  if (static_cast<int64_t>(s.size()) != t->channels) {
    return invalid_input("SmoothQuant factors for '{}': {} factors for {} channels", name,
                         s.size(), t->channels);
  }
  for (double f : s) {
    if (!(f > 0.0) || !std::isfinite(f)) {
      return invalid_input("SmoothQuant factors for '{}': factor {} is not finite and > 0", name,
                           f);
    }
  }
  return Status::ok();
}

}  // namespace

Status SmoothQuantOptions::validate() const {
  if (!(alpha >= 0.0 && alpha <= 1.0)) {
    return usage_error("SmoothQuant alpha must be in [0, 1] (got {})", alpha);
  }
  if (!(outlier_ratio >= 1.0) || !std::isfinite(outlier_ratio)) {
    return usage_error("SmoothQuant outlier ratio must be a finite number >= 1 (got {})",
                       outlier_ratio);
  }
  return Status::ok();
}

std::vector<SmoothTarget> smoothquant_targets(const ir::Model& model) {
  const ir::Graph& graph = model.graph;
  std::vector<SmoothTarget> targets;
  std::map<std::string, size_t> at;
  std::vector<bool> mixed;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const int64_t k = smoothable_k(graph, graph.nodes[n]);
    if (k <= 0) continue;
    const std::string& x = graph.nodes[n].inputs[0];
    auto [it, fresh] = at.try_emplace(x, targets.size());
    if (fresh) {
      targets.push_back({x, {}, k});
      mixed.push_back(false);
    }
    targets[it->second].consumers.push_back(n);
    if (targets[it->second].channels != k) mixed[it->second] = true;
  }
  std::vector<SmoothTarget> out;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!mixed[i]) out.push_back(std::move(targets[i]));
  }
  return out;
}

Expected<calib::SmoothQuantRecord> smoothquant_factors(
    const ir::Model& model, const std::map<std::string, std::vector<double>>& channel_max,
    const SmoothQuantOptions& options) {
  PTQ_RETURN_IF_ERROR(options.validate());
  calib::SmoothQuantRecord record{.alpha = options.alpha, .factors = {}};
  for (const SmoothTarget& t : smoothquant_targets(model)) {
    auto it = channel_max.find(t.tensor);
    if (it == channel_max.end()) continue;
    const std::vector<double>& x = it->second;
    if (static_cast<int64_t>(x.size()) != t.channels) {
      return invalid_input("SmoothQuant: '{}' has {} channel maxima, its readers {} channels",
                           t.tensor, x.size(), t.channels);
    }
    if (!has_outlier(x, options.outlier_ratio)) continue;
    std::vector<double> w(x.size(), 0.0);
    for (size_t c : t.consumers) {
      const ir::Node& node = model.graph.nodes[c];
      weight_channel_max(*find_constant(model.graph, node.inputs[1]), transposed_weight(node), w);
    }
    std::vector<double>& s = record.factors[t.tensor];
    s.resize(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
      const bool zero = x[j] == 0.0 || w[j] == 0.0;
      s[j] = zero ? 1.0
                  : std::max(kMinFactor, std::pow(x[j], options.alpha) /
                                             std::pow(w[j], 1.0 - options.alpha));
    }
  }
  return record;
}

Status apply_smoothquant(ir::Model& model, const calib::SmoothQuantRecord& record) {
  ir::Graph& graph = model.graph;
  const std::vector<SmoothTarget> targets = smoothquant_targets(model);
  std::map<std::string, const SmoothTarget*> by_name;
  for (const SmoothTarget& t : targets) by_name[t.tensor] = &t;
  for (const auto& [name, s] : record.factors) {
    auto it = by_name.find(name);
    PTQ_RETURN_IF_ERROR(check_factors(it == by_name.end() ? nullptr : it->second, name, s));
  }
  NameSet names(graph);
  std::vector<PendingMul> inserts;
  for (const auto& [name, s] : record.factors) {
    const SmoothTarget& t = *by_name.at(name);
    for (size_t c : t.consumers) {
      ir::Node& node = graph.nodes[c];
      scale_channels(graph, node, 1, s, !transposed_weight(node), names);
    }
    if (!fold_into_producer(graph, t, s, names)) {
      inserts.push_back(smoothing_mul(graph, t, s, names));
    }
  }
  // Last position first, so the earlier positions still point at their consumers.
  std::stable_sort(inserts.begin(), inserts.end(), [](const PendingMul& a, const PendingMul& b) {
    return a.position > b.position;
  });
  for (PendingMul& p : inserts) {
    graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(p.position),
                       std::move(p.node));
  }
  return Status::ok();
}

}  // namespace ptq::planner
