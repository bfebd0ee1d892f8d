// A sweep's report: the JSON file of `ptq sensitivity -o` and its HTML page (sensitivity.h).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ptq/report.h"
#include "ptq/sensitivity.h"

namespace ptq::sensitivity {

namespace {

using json = nlohmann::ordered_json;

// JSON has no infinity: such metrics are written as metrics::format_metric's strings.
json json_metric(double v) {
  if (std::isfinite(v)) return v;
  return metrics::format_metric(v, 0);
}

json per_output_json(const Score& s) {
  json a = json::array();
  for (double v : s.per_output) a.push_back(json_metric(v));
  return a;
}

json layers_json(const SweepResult& r, bool multi) {
  json layers = json::array();
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerResult& l = r.layers[i];
    json e{{"rank", i + 1},
           {"name", l.name},
           {"kind", l.kind},
           {"metric", json_metric(l.score.value)}};
    e["delta_vs_float"] = json_metric(l.score.value - r.float_score.value);
    e["delta_vs_quantized"] = json_metric(l.score.value - r.quantized_score.value);
    if (multi) e["per_output"] = per_output_json(l.score);
    e["subgraph_nodes"] = l.subgraph_nodes;
    layers.push_back(e);
  }
  return layers;
}

json selection_json(const Selection& sel, const ReportInfo& info, bool multi) {
  json s{{"target_drop", info.target_drop}, {"max_float_layers", info.max_float},
         {"float_set", sel.float_set}, {"final_metric", json_metric(sel.score.value)},
         {"met", sel.met}};
  if (multi) s["final_per_output"] = per_output_json(sel.score);
  s["trail"] = json::array();
  for (const SelectStep& st : sel.trail) {
    s["trail"].push_back({{"added", st.added}, {"float_count", st.float_count},
                          {"metric", json_metric(st.score.value)}, {"meets", st.meets}});
  }
  return s;
}

// The chart needs numbers: an infinite metric (e.g. SQNR of a unit that changes nothing) is
// drawn at the largest finite value and labelled in its row.
std::string chartable(json j) {
  double cap = 0.0;
  for (const json& l : j["layers"]) {
    if (l["metric"].is_number()) cap = std::max(cap, std::abs(l["metric"].get<double>()));
  }
  for (json& l : j["layers"]) {
    if (l["metric"].is_number()) continue;
    const std::string text = l["metric"].get<std::string>();
    l["metric"] = text == "-inf" ? -cap : text == "inf" ? cap : 0.0;
    l["metric_value"] = text + " (drawn capped)";
  }
  return j.dump();
}

}  // namespace

std::string report_json(const ir::Model& model, const SweepResult& r, const Selection* sel,
                        const ReportInfo& info) {
  const bool multi = model.graph.outputs.size() > 1 && info.metric != Metric::kTop1;
  json j;
  j["model"] = info.model_path;
  j["metric"] = std::string(metric_name(info.metric));
  j["mode"] = std::string(mode_name(r.mode));
  j["higher_is_better"] = higher_is_better(info.metric);
  j["samples"] = info.samples;
  j["float_metric"] = json_metric(r.float_score.value);
  j["quantized_metric"] = json_metric(r.quantized_score.value);
  json outs = json::array();
  for (const auto& v : model.graph.outputs) outs.push_back(v.name);
  j["outputs"] = outs;
  if (multi) j["quantized_per_output"] = per_output_json(r.quantized_score);
  j["sweep_seconds"] = info.timing.sweep;
  j["float_pass_seconds"] = info.timing.float_pass;
  j["sweep_cpu_seconds"] = info.timing.sweep_cpu;
  j["float_pass_cpu_seconds"] = info.timing.float_pass_cpu;
  j["float_pass_batches"] = info.timing.float_pass_batches;
  j["batches"] = info.timing.batches;
  j["layers"] = layers_json(r, multi);
  if (sel != nullptr) {
    j["float_set"] = sel->float_set;
    j["selection"] = selection_json(*sel, info, multi);
  }
  return j.dump(2) + "\n";
}

Expected<std::string> report_html(std::string_view report_json_text, std::string_view report_file,
                                  const ir::Model& shown, const std::string& label,
                                  const std::string& title, const std::string& generated_by,
                                  std::vector<std::string>* warnings) {
  json parsed;
  try {
    parsed = json::parse(report_json_text.begin(), report_json_text.end());
  } catch (const json::exception& e) {
    return invalid_input("{}: not a sweep report: {}", report_file, e.what());
  }
  PTQ_ASSIGN_OR_RETURN(report::SensitivityReport sr,
                       report::parse_sensitivity_json(chartable(std::move(parsed)), report_file));
  report::ModelEntry entry;
  entry.label = label;
  entry.path = label;
  entry.model = &shown;
  report::HtmlOptions ho;
  ho.title = title;
  ho.generated_by = generated_by;
  const std::string dot = report::graph_dot(shown, {.collapse_qdq = true, .title = label});
  if (report::have_graphviz()) {
    Expected<std::string> svg = report::render_svg(dot);
    if (svg) {
      ho.graph_svg = *svg;
    } else if (warnings != nullptr) {
      warnings->push_back(svg.status().message());
    }
  }
  if (ho.graph_svg.empty()) {
    ho.graph_note = "Graphviz dot not found: the graph's DOT text follows.";
    ho.graph_text = dot;
  }
  return report::html_report(std::span(&entry, 1), &sr, ho);
}

}  // namespace ptq::sensitivity
