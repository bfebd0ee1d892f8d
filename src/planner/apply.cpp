// apply(): rewrites a model as planned, in one pass over the planned edges.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "ptq/ir/builders.h"
#include "ptq/ir/subgraph.h"
#include "marking.h"
#include "rewrite.h"

namespace ptq::planner {

namespace {

struct ActScale {
  float scale = 1.0f;
  int32_t zero_point = 0;
  std::string scale_name;
  std::string zp_name;
};

// A Quantize/DequantizeLinear node; `axis` < 0: per-tensor (no axis attribute).
ir::Node qdq_node(std::string op, std::string name, std::vector<std::string> inputs,
                  std::string output, int64_t axis) {
  ir::Node n =
      ir::make_node(std::move(op), std::move(name), std::move(inputs), {std::move(output)});
  if (axis >= 0) n.attributes.push_back(ir::int_attr("axis", axis));
  return n;
}

ir::Tensor zeros(ir::DType type, const ir::Shape& shape) { return ir::Tensor(type, shape); }

ir::Tensor scales_tensor(const std::vector<float>& s, bool per_channel) {
  if (!per_channel) return ir::make_tensor<float>({}, {s[0]});
  return ir::make_tensor<float>({static_cast<int64_t>(s.size())}, s);
}

class Rewriter {
 public:
  Rewriter(ir::Model& model, const Plan& plan, WeightMemo* memo)
      : model_(model), g_(model.graph), plan_(plan), memo_(memo),
        names_(model.graph, memo ? &memo->names() : nullptr),
        dead_(model.graph.nodes.size(), false) {
    for (const ScaleGroup& sg : plan.groups) groups_[sg.name] = &sg;
    for (const TensorPlan& t : plan.tensors) group_of_[t.name] = t.scale_group;
  }

  Expected<QuantizeResult> run() {
    PTQ_RETURN_IF_ERROR(check_plan());
    result_.warnings = plan_.warnings;
    if (model_.opset() < 13) PTQ_RETURN_IF_ERROR(upgrade_opset_to_13(model_));
    if (model_.ir_version < 7) model_.ir_version = 7;
    PTQ_RETURN_IF_ERROR(fold_batchnorms(g_, plan_, names_, dead_, replaced_, gone_values_));
    result_.folded_batchnorms = static_cast<int64_t>(plan_.folds.size());
    PTQ_ASSIGN_OR_RETURN(result_.corrected_biases,
                         correct_biases(g_, plan_, names_, replaced_, result_.warnings));
    PTQ_RETURN_IF_ERROR(quantize_weights_and_biases());
    for (const QuantEdge& e : plan_.edges) {
      if (e.role == Role::kActivation) rewire(e, activation_chain(e.tensor));
    }
    rebuild_nodes();
    cleanup();
    write_metadata();
    for (const NodePlan& n : plan_.nodes) {
      if (n.quantized) result_.quantized_nodes.push_back(n.name.empty() ? n.unit : n.name);
      if (!n.quantized && n.reason != kNoRuleReason && n.reason.rfind("folded into", 0) != 0) {
        result_.float_nodes.push_back(n);
      }
    }
    result_.float_tensors = plan_.float_tensors;
    return std::move(result_);
  }

 private:
  Status check_plan() const {
    if (g_.nodes.size() != plan_.node_count) {
      return invalid_input("model has {} nodes but the plan was made for {}", g_.nodes.size(),
                           plan_.node_count);
    }
    for (const QuantEdge& e : plan_.edges) {
      if (e.node >= g_.nodes.size() || g_.nodes[e.node].input(e.input) != e.tensor) {
        return invalid_input("model changed since it was planned (input {} of node {})",
                             e.input, e.node);
      }
      if (e.role == Role::kActivation && !groups_.count(group_of_.at(e.tensor))) {
        return invalid_input("plan has no scale group for '{}'", e.tensor);
      }
    }
    return Status::ok();
  }

  // Scale and zero point of an activation group, made into initializers once.
  const ActScale& activation_scale(const std::string& group) {
    auto it = act_scales_.find(group);
    if (it != act_scales_.end()) return it->second;
    const calib::TensorRange& r = groups_.at(group)->range;
    ActScale s;
    const bool uint8 = plan_.options.activation_type == ActivationType::kUInt8;
    if (!uint8) {
      s.scale = r.amax > 0.0 ? static_cast<float>(r.amax / 127.0) : 1.0f;
    } else if (std::isfinite(r.min) && std::isfinite(r.max)) {
      const double lo = std::min(r.min, 0.0);
      const double hi = std::max(r.max, 0.0);
      s.scale = hi > lo ? static_cast<float>((hi - lo) / 255.0) : 1.0f;
      s.zero_point = static_cast<int32_t>(
          std::clamp(std::nearbyint(-lo / static_cast<double>(s.scale)), 0.0, 255.0));
    } else {  // only |x| is known: centre the range
      s.scale = r.amax > 0.0 ? static_cast<float>(2.0 * r.amax / 255.0) : 1.0f;
      s.zero_point = 128;
    }
    s.scale_name = names_.fresh(group + "_scale");
    s.zp_name = names_.fresh(group + "_zero_point");
    g_.add_initializer(s.scale_name, ir::make_tensor<float>({}, {s.scale}));
    if (uint8) {
      g_.add_initializer(s.zp_name,
                         ir::make_tensor<uint8_t>({}, {static_cast<uint8_t>(s.zero_point)}));
    } else {
      g_.add_initializer(s.zp_name, ir::make_tensor<int8_t>({}, {int8_t{0}}));
    }
    return act_scales_.emplace(group, std::move(s)).first->second;
  }

  // Q -> DQ after an activation tensor (once); returns the DQ output.
  std::string activation_chain(const std::string& tensor) {
    auto it = chain_out_.find(tensor);
    if (it != chain_out_.end()) return it->second;
    const ActScale& s = activation_scale(group_of_.at(tensor));
    const std::string q_out = names_.fresh(tensor + "_QuantizeLinear_Output");
    const std::string dq_out = names_.fresh(tensor + "_DequantizeLinear_Output");
    std::vector<ir::Node>& chain = chains_[dq_out];
    chain.push_back(qdq_node("QuantizeLinear", names_.fresh(tensor + "_QuantizeLinear"),
                              {tensor, s.scale_name, s.zp_name}, q_out, -1));
    chain.push_back(qdq_node("DequantizeLinear", names_.fresh(tensor + "_DequantizeLinear"),
                              {q_out, s.scale_name, s.zp_name}, dq_out, -1));
    result_.quantize_nodes += 1;
    result_.dequantize_nodes += 1;
    calib::TensorRange range = groups_.at(group_of_.at(tensor))->range;
    range.histogram.clear();
    result_.activations.push_back({tensor, s.scale, s.zero_point, std::move(range)});
    chain_out_[tensor] = dq_out;
    return dq_out;
  }

  void rewire(const QuantEdge& e, const std::string& value) {
    g_.nodes[e.node].inputs[e.input] = value;
  }

  Status quantize_weights_and_biases() {
    // Scales first: ORT widens a weight's scales so every bias reading it fits in int32.
    std::map<std::string, int64_t> axis_of;
    for (const QuantEdge& e : plan_.edges) {
      if (e.role != Role::kWeight) continue;
      const std::string& name = g_.nodes[e.node].inputs[e.input];
      const ir::Tensor* w = find_constant(g_, name);
      if (!w || w->dtype() != ir::DType::kFloat32) {
        return invalid_input("weight '{}' of {} is not a float32 constant", name,
                             g_.nodes[e.node].label());
      }
      if (!axis_of.count(name)) {
        axis_of[name] = e.axis;
        scales_[name] = memo_ ? memo_->scales(*w, e.axis) : weight_scales(*w, e.axis);
      }
    }
    std::vector<const QuantEdge*> biases;
    for (const QuantEdge& e : plan_.edges) {
      if (e.role != Role::kBias) continue;
      const ir::Node& node = g_.nodes[e.node];
      const std::string& wname = node.input(e.bias_weight_slot);
      if (!scales_.count(wname) || !find_constant(g_, node.inputs[e.input])) continue;
      biases.push_back(&e);
      // May add initializers: look the bias up afterwards (pointers into them move).
      const float in_scale = activation_scale(group_of_.at(node.input(e.bias_input_slot))).scale;
      const ir::Tensor* b = find_constant(g_, node.inputs[e.input]);
      const int64_t widened = widen_scales_for_bias(b->span<float>(), in_scale, scales_[wname]);
      if (widened > 0) {
        result_.warnings.push_back(fmt::format(
            "widened {} weight scale(s) of '{}' so bias '{}' fits in int32", widened, wname,
            node.inputs[e.input]));
      }
    }
    for (const auto& [name, axis] : axis_of) make_weight_chain(name, axis);
    for (const QuantEdge& e : plan_.edges) {
      if (e.role == Role::kWeight) {
        rewire(e, chain_out_.at(g_.nodes[e.node].inputs[e.input]));
      }
    }
    for (const QuantEdge* e : biases) make_bias_chain(*e);
    return Status::ok();
  }

  void make_weight_chain(const std::string& name, int64_t axis) {
    const std::vector<float>& s = scales_.at(name);
    const bool per_channel = axis >= 0;
    const ir::Tensor& w = *find_constant(g_, name);
    const ir::Shape zp_shape =
        per_channel ? ir::Shape{static_cast<int64_t>(s.size())} : ir::Shape{};
    const std::string scale_name = names_.fresh(name + "_scale");
    const std::string zp_name = names_.fresh(name + "_zero_point");
    const std::string dq_out = names_.fresh(name + "_DequantizeLinear_Output");
    // Before set_initializer moves `w`.
    ir::Tensor q = memo_ ? memo_->quantized(w, axis, s) : quantize_weights(w, axis, s);
    g_.add_initializer(scale_name, scales_tensor(s, per_channel));
    g_.add_initializer(zp_name, zeros(ir::DType::kInt8, zp_shape));
    std::vector<ir::Node>& chain = chains_[dq_out];
    std::string dq_in;
    if (plan_.options.weights_float) {
      dq_in = names_.fresh(name + "_QuantizeLinear_Output");
      chain.push_back(qdq_node("QuantizeLinear", names_.fresh(name + "_QuantizeLinear"),
                                {name, scale_name, zp_name}, dq_in, axis));
      result_.quantize_nodes += 1;
    } else {
      dq_in = names_.fresh(name + "_quantized");
      g_.add_initializer(dq_in, std::move(q));
      replaced_.insert(name);
    }
    chain.push_back(qdq_node("DequantizeLinear", names_.fresh(name + "_DequantizeLinear"),
                              {dq_in, scale_name, zp_name}, dq_out, axis));
    result_.dequantize_nodes += 1;
    result_.quantized_weights += 1;
    chain_out_[name] = dq_out;
  }

  void make_bias_chain(const QuantEdge& e) {
    ir::Node& node = g_.nodes[e.node];
    const std::string name = node.inputs[e.input];
    const float in_scale = activation_scale(group_of_.at(node.input(e.bias_input_slot))).scale;
    const std::vector<float>& ws = scales_.at(weight_name_of(node, e));
    std::vector<float> bias_scales;
    ir::Tensor q = quantize_bias(*find_constant(g_, name), in_scale, ws, bias_scales);
    const int64_t n = q.size();
    const std::string q_name = names_.fresh(name + "_quantized");
    const std::string scale_name = names_.fresh(name + "_quantized_scale");
    const std::string zp_name = names_.fresh(name + "_quantized_zero_point");
    const std::string dq_out = names_.fresh(name + "_DequantizeLinear_Output");
    g_.add_initializer(q_name, std::move(q));
    g_.add_initializer(scale_name, ir::make_tensor<float>({n}, bias_scales));
    g_.add_initializer(zp_name, zeros(ir::DType::kInt32, {n}));
    chains_[dq_out].push_back(qdq_node("DequantizeLinear",
                                        names_.fresh(name + "_quantized_DequantizeLinear"),
                                        {q_name, scale_name, zp_name}, dq_out, 0));
    result_.dequantize_nodes += 1;
    replaced_.insert(name);
    node.inputs[e.input] = dq_out;
  }

  // The weight tensor a (rewired) node's weight slot came from.
  std::string weight_name_of(const ir::Node& node, const QuantEdge& e) const {
    const std::string& dq_out = node.input(e.bias_weight_slot);
    for (const auto& [w, out] : chain_out_) {
      if (out == dq_out) return w;
    }
    return dq_out;
  }

  // Emits each Q/DQ chain just before the first node that reads it.
  void rebuild_nodes() {
    std::vector<ir::Node> out;
    out.reserve(g_.nodes.size() + 2 * chains_.size());
    for (size_t n = 0; n < g_.nodes.size(); ++n) {
      if (dead_[n]) continue;
      for (const std::string& in : g_.nodes[n].inputs) {
        auto it = chains_.find(in);
        if (it == chains_.end() || it->second.empty()) continue;
        for (ir::Node& c : it->second) out.push_back(std::move(c));
        it->second.clear();
      }
      out.push_back(std::move(g_.nodes[n]));
    }
    g_.nodes = std::move(out);
    dead_.assign(g_.nodes.size(), false);
  }

  // The replaced values nothing reads any more (no node, no graph output), in name order.
  std::vector<std::string> unread_replaced() const {
    std::unordered_set<std::string_view> unread;
    for (const std::string& name : replaced_) {
      if (!name.empty()) unread.insert(name);
    }
    for (const ir::ValueInfo& v : g_.outputs) unread.erase(v.name);
    for (size_t n = 0; n < g_.nodes.size() && !unread.empty(); ++n) {
      if (n < dead_.size() && dead_[n]) continue;
      for (const std::string& in : g_.nodes[n].inputs) unread.erase(in);
      for (const std::string& in : ir::outer_scope_values(g_.nodes[n])) unread.erase(in);
    }
    std::vector<std::string> out;
    for (const std::string& name : replaced_) {
      if (unread.contains(name)) out.push_back(name);
    }
    return out;
  }

  // Drops weights, biases and BN parameters nothing reads any more, and stale declarations:
  // one pass over each list for all of them.
  void cleanup() {
    const std::vector<std::string> unread = unread_replaced();
    const std::unordered_set<std::string_view> drop(unread.begin(), unread.end());
    std::unordered_set<std::string_view> dropped_inits;
    std::erase_if(g_.mutable_initializers(), [&](const ir::Initializer& i) {
      const auto it = drop.find(i.name);
      if (it == drop.end()) return false;
      dropped_inits.insert(*it);  // a view of `unread`, which outlives the erased name
      return true;
    });
    std::erase_if(g_.inputs,
                  [&](const ir::ValueInfo& v) { return dropped_inits.contains(v.name); });
    std::erase_if(g_.nodes, [&](const ir::Node& node) {
      return node.op_type == "Constant" && !node.outputs.empty() && drop.contains(node.outputs[0]);
    });
    gone_values_.insert(gone_values_.end(), unread.begin(), unread.end());
    const std::unordered_set<std::string_view> gone(gone_values_.begin(), gone_values_.end());
    for (auto* list : {&g_.value_info, &g_.inferred}) {
      std::erase_if(*list, [&](const ir::ValueInfo& v) { return gone.contains(v.name); });
    }
  }

  void write_metadata() {
    const PlanOptions& o = plan_.options;
    model_.set_metadata("ptqkit.target", std::string(target_name(o.target)));
    if (!o.ptqkit_version.empty()) model_.set_metadata("ptqkit.version", o.ptqkit_version);
    if (!o.method.empty()) model_.set_metadata("ptqkit.method", o.method);
    if (!o.cache_hash.empty()) model_.set_metadata("ptqkit.cache_hash", o.cache_hash);
    std::string excluded;
    for (const NodePlan& n : plan_.nodes) {
      if (n.reason.rfind("excluded", 0) != 0) continue;
      excluded += (excluded.empty() ? "" : ",") + n.name;
    }
    model_.set_metadata("ptqkit.excluded_nodes", excluded);
  }

  ir::Model& model_;
  ir::Graph& g_;
  const Plan& plan_;
  WeightMemo* memo_;  // null: every weight quantized here
  NameSet names_;
  std::vector<bool> dead_;
  std::set<std::string> replaced_;
  std::vector<std::string> gone_values_;
  std::map<std::string, const ScaleGroup*> groups_;
  std::map<std::string, std::string> group_of_;
  std::map<std::string, ActScale> act_scales_;
  std::map<std::string, std::vector<float>> scales_;   // weight name -> scales
  std::map<std::string, std::string> chain_out_;       // tensor -> its DQ output
  std::map<std::string, std::vector<ir::Node>> chains_;  // DQ output -> Q/DQ nodes
  QuantizeResult result_;
};

}  // namespace

Expected<QuantizeResult> apply(ir::Model& model, const Plan& plan, WeightMemo* memo) {
  Rewriter rewriter(model, plan, memo);
  return rewriter.run();
}

Expected<QuantizeResult> quantize(ir::Model& model, const calib::CalibrationTable& table,
                                  const PlanOptions& options) {
  if (options.requantize && has_quantization(model)) {
    PTQ_ASSIGN_OR_RETURN(int64_t removed, strip_qdq(model));
    (void)removed;
  }
  PTQ_ASSIGN_OR_RETURN(Plan p, plan(model, table, options));
  return apply(model, p);
}

}  // namespace ptq::planner
