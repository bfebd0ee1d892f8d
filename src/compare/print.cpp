// What `ptq compare` prints (include/ptq/compare.h: result_text, result_json).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "ptq/compare.h"

namespace ptq::compare {

namespace {

// JSON has no infinity or NaN: such metrics are written as the strings "inf", "-inf", "nan".
nlohmann::ordered_json json_metric(double v) {
  if (std::isfinite(v)) return v;
  return metrics::format_metric(v, 0);
}

nlohmann::ordered_json agreement_json(const metrics::Agreement& m) {
  return {{"cosine", json_metric(m.cosine())},
          {"sqnr_db", json_metric(m.sqnr_db())},
          {"max_abs_diff", json_metric(m.max_abs_diff())},
          {"rel_l2", json_metric(m.rel_l2())}};
}

nlohmann::ordered_json tensor_json(const TensorTrace& t) {
  nlohmann::ordered_json j = {{"name", t.pair.reference},
                              {"compared_with", t.pair.test},
                              {"dequantized", t.pair.dequantized},
                              {"node", t.node},
                              {"op_type", t.op_type},
                              {"inputs", t.inputs}};
  j.update(agreement_json(t.agreement));
  j["reference_db"] = json_metric(t.reference_db);
  j["drop_db"] = json_metric(t.drop_db());
  j["jump"] = t.jump;
  return j;
}

std::string outputs_text(const Result& r) {
  std::string out =
      fmt::format("{} (A) vs {} (B): {} samples\n", r.reference_label, r.test_label, r.samples);
  size_t width = 6;
  for (const OutputAgreement& o : r.outputs) width = std::max(width, o.name.size());
  out += fmt::format("  {:<{}}  {:>10}  {:>10}  {:>12}\n", "output", width, "cosine", "SQNR (dB)",
                     "max abs diff");
  for (const OutputAgreement& o : r.outputs) {
    const metrics::Agreement& m = o.agreement;
    out += fmt::format(
        "  {:<{}}  {:>10}  {:>10}  {:>12}\n", o.name, width, metrics::format_metric(m.cosine(), 6),
        metrics::format_metric(m.sqnr_db(), 2), fmt::format("{:.6g}", m.max_abs_diff()));
  }
  if (std::optional<double> top1 = r.top1_agreement()) {
    out +=
        fmt::format("  top-1 agreement: {:.2f}% ({}/{})\n", 100.0 * *top1, r.top1_same, r.samples);
  }
  return out;
}

std::string tensors_text(const Result& r) {
  const int64_t jumps = std::count_if(r.tensors.begin(), r.tensors.end(),
                                      [](const TensorTrace& t) { return t.jump; });
  std::string out = fmt::format(
      "per tensor, in graph order: {} tensors, {} jumps\n"
      "  (dq): B's dequantized value; !: a jump, SQNR over {:g} dB below min({:g} dB, its "
      "inputs' SQNR)\n",
      r.tensors.size(), jumps, r.jump_db, kCleanDb);
  size_t name_w = 6, op_w = 2;
  for (const TensorTrace& t : r.tensors) {
    name_w = std::max(name_w, t.pair.reference.size() + (t.pair.dequantized ? 5 : 0));
    op_w = std::max(op_w, t.op_type.size());
  }
  out += fmt::format("   {:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}\n", "tensor", name_w, "op", op_w,
                     "cosine", "SQNR (dB)", "drop (dB)");
  for (const TensorTrace& t : r.tensors) {
    const std::string name = t.pair.reference + (t.pair.dequantized ? " (dq)" : "");
    out += fmt::format(" {} {:<{}}  {:<{}}  {:>10}  {:>10}  {:>10}\n", t.jump ? '!' : ' ', name,
                       name_w, t.op_type, op_w, metrics::format_metric(t.agreement.cosine(), 6),
                       metrics::format_metric(t.agreement.sqnr_db(), 2),
                       metrics::format_metric(t.drop_db(), 2));
  }
  return out;
}

}  // namespace

std::string result_text(const Result& r) {
  std::string out = outputs_text(r);
  if (r.per_tensor) out += tensors_text(r);
  return out;
}

std::string result_json(const Result& r) {
  nlohmann::ordered_json j;
  j["model_a"] = r.reference_label;
  j["model_b"] = r.test_label;
  j["samples"] = r.samples;
  j["outputs"] = nlohmann::ordered_json::array();
  for (const OutputAgreement& o : r.outputs) {
    nlohmann::ordered_json e = {{"name", o.name}};
    e.update(agreement_json(o.agreement));
    j["outputs"].push_back(std::move(e));
  }
  if (std::optional<double> top1 = r.top1_agreement()) {
    j["top1_agreement"] = *top1;
    j["top1_same"] = r.top1_same;
  } else {
    j["top1_agreement"] = nullptr;
  }
  if (r.per_tensor) {
    j["jump_db"] = r.jump_db;
    j["clean_db"] = kCleanDb;
    j["tensors"] = nlohmann::ordered_json::array();
    for (const TensorTrace& t : r.tensors) j["tensors"].push_back(tensor_json(t));
  }
  return j.dump(2);
}

}  // namespace ptq::compare
