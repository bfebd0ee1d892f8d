// Empirical bias correction (Nagel et al. 2019, "Data-Free Quantization", section 4.2): the
// float model runs over the data with, beside each corrected op, a probe node computing
// op(x, fake_quant(W) - W) on the same float input x; the probe's per-channel mean is the
// output shift the quantized weight causes. Linear in the weight, so one probe gives the
// difference of the two products without subtracting two large ones. Statistics only: float64
// running sums per channel, whatever the sample count.
#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "ptq/calibration.h"
#include "ptq/ir/constant_attr.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/ir/op_traits.h"

namespace ptq::calibration {

namespace {

// A probe: the unit whose op it copies and the value it computes.
struct Probe {
  std::string unit;
  std::string output;
};

// Running sums of a probe's output per channel (axis 1: Conv's C, Gemm's N).
struct ChannelMeans {
  std::vector<double> sum;
  int64_t count = 0;  // elements per channel seen
};

const ir::Tensor* constant(const ir::Graph& g, const std::string& name,
                           std::deque<ir::Tensor>& held) {
  if (const ir::Tensor* t = g.initializer(name)) return t;
  for (const ir::Node& n : g.nodes) {
    if (n.op_type != "Constant" || n.outputs.empty() || n.outputs[0] != name) continue;
    std::optional<ir::Tensor> v = ir::constant_node_value(n);
    if (!v) return nullptr;
    held.push_back(std::move(*v));
    return &held.back();
  }
  return nullptr;
}

// The weight as apply() quantizes it: with the BatchNormalization the plan folds into it.
Expected<ir::Tensor> planned_weight(const ir::Graph& g, const planner::Plan& plan, size_t node,
                                    const ir::Tensor& w, std::deque<ir::Tensor>& held) {
  ir::Tensor weight = ir::owned_copy(w);
  for (const planner::BnFold& f : plan.folds) {
    if (f.conv != node) continue;
    const ir::Node& conv = g.nodes[node];
    const ir::Node& bn = g.nodes[f.bn];
    std::vector<const ir::Tensor*> p;
    for (size_t i = 1; i < 5; ++i) p.push_back(constant(g, bn.input(i), held));
    if (std::find(p.begin(), p.end(), nullptr) != p.end()) {
      return invalid_input("{}: a BatchNormalization parameter is not constant", bn.label());
    }
    ir::Tensor bias;  // the weight does not depend on it
    PTQ_RETURN_IF_ERROR(planner::fold_batchnorm_into(
        weight, bias, *p[0], *p[1], *p[2], *p[3], bn.attr_float("epsilon", 1e-5f),
        conv.op_type == "ConvTranspose", conv.attr_int("group", 1)));
  }
  return weight;
}

// fake_quant(W) - W for the weight edge `e`.
Expected<ir::Tensor> weight_error(const ir::Graph& g, const planner::Plan& plan,
                                  const planner::QuantEdge& e, std::deque<ir::Tensor>& held) {
  const ir::Tensor* w = constant(g, e.tensor, held);
  if (w == nullptr || w->dtype() != ir::DType::kFloat32) {
    return invalid_input("weight '{}' is not a float32 constant", e.tensor);
  }
  PTQ_ASSIGN_OR_RETURN(ir::Tensor weight, planned_weight(g, plan, e.node, *w, held));
  ir::Tensor error = planner::fake_quantize_weights(weight, e.axis);
  float* d = error.data<float>();
  const float* f = weight.data<float>();
  for (int64_t i = 0; i < error.size(); ++i) d[i] -= f[i];
  return error;
}

// Units corrected: a Conv, ConvTranspose or Gemm whose weight (slot 1) the plan quantizes.
bool correctable(const ir::Node& node, const planner::QuantEdge& e) {
  const ir::WeightedOp* op = ir::weighted_op(node);
  return e.role == planner::Role::kWeight && op != nullptr && op->bias_slot >= 0 &&
         e.input == op->weight_slot && node.op_type != "MatMul";
}

// `model` (its initializers borrowed) with a probe beside every correctable quantized op.
Expected<ir::Model> probe_model(const ir::Model& model, const planner::Plan& plan,
                                std::vector<Probe>& probes, std::deque<ir::Tensor>& held) {
  ir::Model m;
  m.ir_version = model.ir_version;
  m.opset_imports = model.opset_imports;
  m.graph.name = model.graph.name;
  m.graph.inputs = model.graph.inputs;
  m.graph.outputs = model.graph.outputs;
  m.graph.nodes = model.graph.nodes;
  for (const ir::Initializer& i : model.graph.initializers()) {
    m.graph.mutable_initializers().push_back({i.name, i.tensor.view(), {}});
  }
  for (const planner::QuantEdge& e : plan.edges) {
    const ir::Node& node = model.graph.nodes[e.node];
    const std::string& unit = plan.nodes[e.node].unit;
    if (unit.empty() || !plan.nodes[e.node].quantized || !correctable(node, e)) continue;
    PTQ_ASSIGN_OR_RETURN(ir::Tensor error, weight_error(model.graph, plan, e, held));
    const std::string tag = fmt::format("ptq_bias_probe_{}", probes.size());
    m.graph.add_initializer(tag + "_weight", std::move(error));
    ir::Node probe = node;
    probe.name = tag;
    probe.inputs = {node.input(0), tag + "_weight"};
    probe.outputs = {tag};
    m.graph.nodes.push_back(std::move(probe));
    probes.push_back({unit, tag});
  }
  return m;
}

class ProbeObserver : public runtime::Observer {
 public:
  explicit ProbeObserver(const std::vector<Probe>& probes) {
    for (size_t p = 0; p < probes.size(); ++p) index_[probes[p].output] = p;
    means_.resize(probes.size());
  }
  std::vector<std::string> wanted(const ir::Graph&) override {
    std::vector<std::string> out;
    for (const auto& [name, p] : index_) out.push_back(name);
    return out;
  }
  Status observe(const runtime::ObservedTensor& t) override {
    auto it = index_.find(t.name);
    if (it == index_.end()) return Status::ok();
    if (t.host == nullptr || t.dtype != ir::DType::kFloat32 || t.shape.size() < 2) {
      return runtime_error("bias correction: '{}' is not a float32 host tensor of rank >= 2",
                           t.name);
    }
    add(means_[it->second], t.shape, t.host->data<float>());
    return Status::ok();
  }
  const std::vector<ChannelMeans>& means() const { return means_; }

 private:
  static void add(ChannelMeans& m, const ir::Shape& shape, const float* x) {
    const int64_t channels = shape[1];
    int64_t inner = 1;
    for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
    if (m.sum.empty()) m.sum.assign(static_cast<size_t>(channels), 0.0);
    for (int64_t o = 0; o < shape[0]; ++o) {
      for (int64_t c = 0; c < channels; ++c) {
        double s = 0.0;
        const float* p = x + (o * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) s += p[i];
        m.sum[static_cast<size_t>(c)] += s;
      }
    }
    m.count += shape[0] * inner;
  }
  std::map<std::string, size_t> index_;
  std::vector<ChannelMeans> means_;
};

}  // namespace

Expected<planner::BiasCorrections> measure_bias_corrections(const ir::Model& model,
                                                            const calib::CalibrationTable& table,
                                                            const planner::PlanOptions& options,
                                                            const data::Dataset& dataset,
                                                            int threads) {
  planner::PlanOptions o = options;
  o.bias_corrections.clear();
  PTQ_ASSIGN_OR_RETURN(planner::Plan plan, planner::plan(model, table, o));
  std::vector<Probe> probes;
  std::deque<ir::Tensor> held;  // constants made from Constant nodes; pointers stay valid
  PTQ_ASSIGN_OR_RETURN(ir::Model probed, probe_model(model, plan, probes, held));
  if (probes.empty()) return planner::BiasCorrections{};
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  PTQ_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Executor> exec,
                       runtime::Executor::create(probed, *cpu, {.threads = threads}));
  ProbeObserver observer(probes);
  runtime::Observer* observers[] = {&observer};
  for (int64_t b = 0; b < dataset.num_batches(); ++b) {
    PTQ_ASSIGN_OR_RETURN(data::NamedTensors batch, dataset.batch(b));
    PTQ_ASSIGN_OR_RETURN(data::NamedTensors out, exec->run(batch, observers));
  }
  planner::BiasCorrections corrections;
  for (size_t p = 0; p < probes.size(); ++p) {
    const ChannelMeans& m = observer.means()[p];
    std::vector<double>& c = corrections[probes[p].unit];
    for (double s : m.sum) c.push_back(m.count > 0 ? s / static_cast<double>(m.count) : 0.0);
  }
  return corrections;
}

Status use_bias_correction(const ir::Model& model, calib::CalibrationTable& table,
                           const data::Dataset* dataset, int threads, QuantizeSettings& settings) {
  if (!settings.bias_correction) return Status::ok();
  if (dataset != nullptr) {
    PTQ_ASSIGN_OR_RETURN(table.bias_corrections,
                         measure_bias_corrections(model, table, settings.plan, *dataset, threads));
  } else if (auto it = table.options.find("bias_correction");
             it == table.options.end() || it->second != "true") {
    return usage_error("bias correction needs data: the cache holds no bias corrections");
  }
  settings.plan.bias_corrections = table.bias_corrections;
  return Status::ok();
}

}  // namespace ptq::calibration
