// Per-layer precision, and counts and parameter bytes by op type and precision.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ptq/report.h"
#include "qdq_view.h"

namespace ptq::report {

namespace {

// How one input slot is read: "int8", "int8/axis0", "float32", …
std::string input_kind(const QdqView& v, const std::string& value) {
  const int64_t dq = v.dq_producing(value);
  if (dq >= 0) {
    const ir::Node& node = v.node(static_cast<size_t>(dq));
    const ir::Tensor* scale = v.scale_of(static_cast<size_t>(dq));
    const ir::DType x = v.type(node.input(0)).dtype;
    std::string kind = x == ir::DType::kUndefined ? "q" : std::string(ir::dtype_name(x));
    if (scale && scale->size() > 1) kind += fmt::format("/axis{}", node.attr_int("axis", 1));
    return kind;
  }
  const ir::DType t = v.type(value).dtype;
  return t == ir::DType::kUndefined ? "float?" : std::string(ir::dtype_name(t));
}

std::string inputs_str(const QdqView& v, size_t n) {
  std::vector<std::string> parts;
  for (const std::string& in : v.node(n).inputs) {
    if (in.empty()) continue;
    parts.push_back(fmt::format("{}:{}", in, input_kind(v, in)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

int64_t all_constant_bytes(const ir::Graph& g) {
  int64_t bytes = 0;
  for (const ir::Initializer& i : g.initializers())
    bytes += static_cast<int64_t>(i.tensor.nbytes());
  for (const ir::Node& n : g.nodes) {
    if (!op_is(n, "Constant")) continue;
    const ir::Attribute* a = n.attr("value");
    if (a && a->type == ir::AttrType::kTensor) bytes += static_cast<int64_t>(a->t.nbytes());
  }
  return bytes;
}

}  // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kInt8:
      return "int8";
    case Precision::kMixed:
      return "mixed";
    case Precision::kFloat:
      return "float";
    case Precision::kQdq:
      return "qdq";
    case Precision::kOther:
      return "other";
  }
  return "?";
}

int64_t OpTypeRow::total_count() const {
  int64_t s = 0;
  for (int64_t c : count) s += c;
  return s;
}

int64_t OpTypeRow::total_bytes() const {
  int64_t s = 0;
  for (int64_t b : param_bytes) s += b;
  return s;
}

std::string bytes_str(int64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (int64_t{1} << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024.0);
  if (b < (int64_t{1} << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / 1048576.0);
  return fmt::format("{:.2f} GiB", static_cast<double>(b) / 1073741824.0);
}

PrecisionSummary summarize_precision(const ir::Model& model) {
  const QdqView v(model);
  std::vector<LayerInfo> layers(v.size());
  std::set<std::string> counted;
  auto take = [&](const std::string& name, LayerInfo& l) {
    const ir::Tensor* t = v.constant(name);
    if (!t || !counted.insert(name).second) return;
    l.params += t->size();
    l.param_bytes += static_cast<int64_t>(t->nbytes());
  };
  // Weights go to the op reading them (as stored: int8 behind a DQ); scales and zero points,
  // and anything else only a Q/DQ reads, to the Q/DQ.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t n = 0; n < v.size(); ++n) {
      const ir::Node& node = v.node(n);
      const bool qdq = is_q(node) || is_dq(node);
      if (op_is(node, "Constant") || qdq != (pass == 1)) continue;
      for (const std::string& in : node.inputs) {
        if (v.is_constant(in)) {
          take(in, layers[n]);
        } else if (!qdq && v.is_dequantized(in) && v.is_weight_like(in)) {
          take(v.dequantized_source(in), layers[n]);
        }
      }
    }
  }

  PrecisionSummary s;
  std::map<std::string, OpTypeRow> rows;
  for (size_t n = 0; n < v.size(); ++n) {
    const ir::Node& node = v.node(n);
    if (op_is(node, "Constant")) continue;
    LayerInfo& l = layers[n];
    l.node = n;
    l.name = v.node_name(n);
    l.op_type = node.in_default_domain() ? node.op_type : node.domain + "." + node.op_type;
    l.precision = v.precision(n);
    l.inputs = inputs_str(v, n);
    if (!node.outputs.empty()) {
      const std::string type = v.type_str(node.outputs[0]);
      l.output = type.empty() ? node.outputs[0] : node.outputs[0] + " " + type;
    }
    const auto p = static_cast<size_t>(l.precision);
    OpTypeRow& row = rows[l.op_type];
    row.op_type = l.op_type;
    row.count[p] += 1;
    row.param_bytes[p] += l.param_bytes;
    s.count[p] += 1;
    s.param_bytes[p] += l.param_bytes;
    if (is_q(node)) ++s.quantize_nodes;
    if (is_dq(node)) ++s.dequantize_nodes;
    if (ir::is_weighted_op(node)) {
      ++s.weighted_ops;
      if (l.precision == Precision::kInt8) ++s.weighted_int8;
    }
    s.layers.push_back(std::move(l));
  }
  for (auto& [op, row] : rows) s.by_op_type.push_back(std::move(row));
  s.total_param_bytes = all_constant_bytes(model.graph);
  return s;
}

std::string precision_text(const PrecisionSummary& s) {
  size_t w = 7;
  for (const OpTypeRow& r : s.by_op_type) w = std::max(w, r.op_type.size());
  std::string out = fmt::format("{:<{}}", "op type", w);
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    out += fmt::format("  {:>6}", precision_name(static_cast<Precision>(p)));
  }
  out += fmt::format("  {:>11}  {:>11}\n", "int8 bytes", "float bytes");
  auto line = [&](const std::string& name, const PrecisionCounts& c, const PrecisionCounts& b) {
    std::string l = fmt::format("{:<{}}", name, w);
    for (int64_t v : c) l += fmt::format("  {:>6}", v);
    const int64_t int8_bytes = b[static_cast<size_t>(Precision::kInt8)] +
                               b[static_cast<size_t>(Precision::kMixed)] +
                               b[static_cast<size_t>(Precision::kQdq)];
    const int64_t float_bytes =
        b[static_cast<size_t>(Precision::kFloat)] + b[static_cast<size_t>(Precision::kOther)];
    return l + fmt::format("  {:>11}  {:>11}\n", bytes_str(int8_bytes), bytes_str(float_bytes));
  };
  for (const OpTypeRow& r : s.by_op_type) out += line(r.op_type, r.count, r.param_bytes);
  out += line("total", s.count, s.param_bytes);
  out += fmt::format(
      "{} of {} weighted ops run in INT8; {} QuantizeLinear, {} DequantizeLinear; "
      "parameters {}\n",
      s.weighted_int8, s.weighted_ops, s.quantize_nodes, s.dequantize_nodes,
      bytes_str(s.total_param_bytes));
  return out;
}

}  // namespace ptq::report
