// html_report(): one self-contained page (inline CSS and SVG, no script, nothing fetched).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "html_chart.h"
#include "ptq/report.h"
#include "qdq_view.h"

namespace ptq::report {

namespace {

struct Analysis {
  const ModelEntry* entry = nullptr;
  PrecisionSummary summary;
  std::vector<Finding> findings;
};

constexpr std::string_view kStyle = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px auto;
       max-width: 1150px; color: #222; font-size: 14px; line-height: 1.4; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; border-bottom: 2px solid #ddd; padding-bottom: 3px; margin-top: 32px; }
.sub { color: #666; margin-top: 0; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
tr:nth-child(even) td { background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: 8px 12px; min-width: 150px; }
.card .k { color: #666; font-size: 12px; }
.card .v { font-size: 18px; font-weight: bold; }
.sev { font-weight: bold; padding: 1px 6px; border-radius: 4px; color: #fff; }
.sev-error { background: #c0392b; }
.sev-warning { background: #d68910; }
.sev-info { background: #2e86c1; }
table.lint td:nth-child(1), table.lint td:nth-child(2) { white-space: nowrap; }
.p { display: inline-block; padding: 0 6px; border-radius: 4px; }
.ok { color: #1e8449; font-weight: bold; }
.graph { overflow: auto; max-height: 1200px; border: 1px solid #ddd; }
code { font-size: 12px; }
footer { margin-top: 40px; color: #888; font-size: 12px; }
)css";

std::string td(std::string_view text) { return "<td>" + html_escape(text) + "</td>"; }
std::string td_num(int64_t v) { return fmt::format("<td class=\"num\">{}</td>", v); }
std::string td_num(std::string_view text) {
  return "<td class=\"num\">" + html_escape(text) + "</td>";
}

std::string precision_badge(Precision p) {
  return fmt::format("<span class=\"p\" style=\"background:{}\">{}</span>", precision_colour(p),
                     precision_name(p));
}

// "1 warning", "2 warnings"
std::string plural(int64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string metric_str(double v) { return fmt::format("{:.4g}", v); }

std::string card(std::string_view key, std::string_view value) {
  return fmt::format(
      "<div class=\"card\"><div class=\"k\">{}</div><div class=\"v\">{}</div></div>\n",
      html_escape(key), html_escape(value));
}

int64_t node_count(const PrecisionSummary& s) {
  int64_t n = 0;
  for (int64_t c : s.count) n += c;
  return n;
}

std::string summary_section(const Analysis& a) {
  const ir::Model& m = *a.entry->model;
  const PrecisionSummary& s = a.summary;
  std::string out = "<h2 id=\"summary\">Summary</h2>\n<div class=\"cards\">\n";
  out += card("weighted ops in INT8", fmt::format("{} of {}", s.weighted_int8, s.weighted_ops));
  out += card("nodes", std::to_string(node_count(s)));
  out += card("QuantizeLinear / DequantizeLinear",
              fmt::format("{} / {}", s.quantize_nodes, s.dequantize_nodes));
  out += card("parameters", bytes_str(s.total_param_bytes));
  if (a.entry->file_bytes >= 0) out += card("file size", bytes_str(a.entry->file_bytes));
  out += card("lint", fmt::format("{}, {}", plural(count(a.findings, Severity::kError), "error"),
                                  plural(count(a.findings, Severity::kWarning), "warning")));
  if (a.entry->eval) {
    for (const auto& [k, v] : a.entry->eval->metrics) out += card(k, metric_str(v));
  }
  out += "</div>\n<p>";
  out += fmt::format("Producer <b>{}</b> {}, opset {}, IR version {}.",
                     html_escape(m.producer_name.empty() ? "unknown" : m.producer_name),
                     html_escape(m.producer_version), m.opset(), m.ir_version);
  if (const std::string* t = m.metadata("ptqkit.target")) {
    out += fmt::format(" Quantized by ptqkit for target <b>{}</b>", html_escape(*t));
    if (const std::string* method = m.metadata("ptqkit.method")) {
      out += fmt::format(", calibration method <b>{}</b>", html_escape(*method));
    }
    out += ".";
  }
  return out + "</p>\n";
}

std::vector<std::pair<std::string, std::string>> precision_legend() {
  std::vector<std::pair<std::string, std::string>> legend;
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    const auto pr = static_cast<Precision>(p);
    legend.emplace_back(std::string(precision_name(pr)), std::string(precision_colour(pr)));
  }
  return legend;
}

StackedBar precision_bar(std::string label, const PrecisionCounts& counts) {
  StackedBar bar{std::move(label), {}};
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    const auto pr = static_cast<Precision>(p);
    bar.segments.push_back({static_cast<double>(counts[p]), std::string(precision_colour(pr)),
                            std::string(precision_name(pr))});
  }
  return bar;
}

std::string precision_section(const Analysis& a) {
  const PrecisionSummary& s = a.summary;
  std::string out = "<h2 id=\"precision\">Precision by op type</h2>\n";
  out +=
      "<p>A node runs in INT8 when its inputs are dequantized (a weighted op needs its "
      "activations and its weight quantized); <i>mixed</i> is a weighted op with only some "
      "quantized inputs.</p>\n";
  std::vector<StackedBar> bars;
  for (const OpTypeRow& r : s.by_op_type) bars.push_back(precision_bar(r.op_type, r.count));
  out += stacked_bar_chart(bars, precision_legend(), "node count per op type and precision");
  out += "<table>\n<tr><th>op type</th>";
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    out += fmt::format("<th class=\"num\">{}</th>", precision_name(static_cast<Precision>(p)));
  }
  out += "<th class=\"num\">total</th><th class=\"num\">parameter bytes</th></tr>\n";
  auto row = [&](std::string_view name, const PrecisionCounts& c, int64_t bytes) {
    std::string r = "<tr>" + td(name);
    int64_t total = 0;
    for (int64_t v : c) {
      r += td_num(v);
      total += v;
    }
    return r + td_num(total) + td_num(bytes_str(bytes)) + "</tr>\n";
  };
  for (const OpTypeRow& r : s.by_op_type) out += row(r.op_type, r.count, r.total_bytes());
  int64_t bytes = 0;
  for (int64_t b : s.param_bytes) bytes += b;
  out += row("total", s.count, bytes);
  return out + "</table>\n";
}

std::string lint_section(const Analysis& a) {
  std::string out = "<h2 id=\"lint\">Lint: TensorRT placement rules</h2>\n";
  if (a.findings.empty()) {
    out += "<p class=\"ok\">No findings: the Q/DQ placement follows every rule checked.</p>\n";
  } else {
    out += fmt::format("<p>{}, {}, {} info.</p>\n",
                       plural(count(a.findings, Severity::kError), "error"),
                       plural(count(a.findings, Severity::kWarning), "warning"),
                       count(a.findings, Severity::kInfo));
    out +=
        "<table class=\"lint\">\n<tr><th>severity</th><th>rule</th><th>node</th><th>tensor</th>"
        "<th>finding</th><th>suggested fix</th></tr>\n";
    for (const Finding& f : a.findings) {
      out += fmt::format(
          "<tr><td><span class=\"sev sev-{0}\">{0}</span></td>{1}{2}{3}{4}{5}</tr>\n",
          severity_name(f.severity), td(f.rule), td(fmt::format("{} ({})", f.node, f.op_type)),
          td(f.tensor), td(f.message), td(f.fix));
    }
    out += "</table>\n";
  }
  out +=
      "<details><summary>Rules checked</summary><table>\n<tr><th>rule</th><th>severity</th>"
      "<th>what it finds</th></tr>\n";
  for (const RuleInfo& r : lint_rules()) {
    out += "<tr>" + td(r.id) + td(severity_name(r.severity)) + td(r.summary) + "</tr>\n";
  }
  return out + "</table></details>\n";
}

std::string sensitivity_section(const SensitivityReport& r) {
  std::string out = "<h2 id=\"sensitivity\">Sensitivity</h2>\n";
  out += fmt::format("<p>From <code>{}</code>: metric <b>{}</b> per layer, {} layers.</p>\n",
                     html_escape(r.source), html_escape(r.metric.empty() ? "metric" : r.metric),
                     r.layers.size());
  if (!r.info.empty()) {
    out += "<table>\n";
    for (const auto& [k, v] : r.info)
      out += "<tr><th>" + html_escape(k) + "</th>" + td(v) + "</tr>\n";
    out += "</table>\n";
  }
  if (!r.float_set.empty()) {
    out += "<p>Layers kept float: <code>";
    for (size_t i = 0; i < r.float_set.size(); ++i) {
      out += (i ? ", " : "") + html_escape(r.float_set[i]);
    }
    out += "</code></p>\n";
  }
  std::vector<std::pair<std::string, double>> values;
  for (const SensitivityLayer& l : r.layers) values.emplace_back(l.name, l.metric);
  out += value_bar_chart(values, "#6a51a3", "sensitivity metric per layer");
  std::vector<std::string> extra_keys;
  for (const SensitivityLayer& l : r.layers) {
    for (const auto& [k, v] : l.extra) {
      if (std::find(extra_keys.begin(), extra_keys.end(), k) == extra_keys.end())
        extra_keys.push_back(k);
    }
  }
  out += "<table>\n<tr><th>layer</th><th class=\"num\">" +
         html_escape(r.metric.empty() ? "metric" : r.metric) + "</th>";
  for (const std::string& k : extra_keys) out += "<th>" + html_escape(k) + "</th>";
  out += "</tr>\n";
  for (const SensitivityLayer& l : r.layers) {
    out += "<tr>" + td(l.name) + td_num(metric_str(l.metric));
    for (const std::string& k : extra_keys) {
      auto it =
          std::find_if(l.extra.begin(), l.extra.end(), [&](const auto& e) { return e.first == k; });
      out += td(it == l.extra.end() ? "" : it->second);
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string trace_tooltip(const TraceTensor& t) {
  std::string s = t.name + (t.op_type.empty() ? "" : " (" + t.op_type + ")") + ": SQNR " +
                  metric_str(t.sqnr_db) + " dB";
  if (!std::isnan(t.cosine)) s += ", cosine " + fmt::format("{:.6f}", t.cosine);
  if (!std::isnan(t.drop_db)) s += ", drop " + metric_str(t.drop_db) + " dB";
  return s + (t.jump ? ", error jumps here" : "");
}

std::string trace_section(const ErrorTrace& r) {
  std::string out = "<h2 id=\"trace\">Error along the graph</h2>\n";
  const int64_t jumps = std::count_if(r.tensors.begin(), r.tensors.end(),
                                      [](const TraceTensor& t) { return t.jump; });
  out += fmt::format(
      "<p>From <code>{}</code>: SQNR of each tensor of <code>{}</code> against <code>{}</code>, "
      "in graph order; {} in red (SQNR more than {} dB below its inputs' level).</p>\n",
      html_escape(r.source), html_escape(r.model_b), html_escape(r.model_a),
      plural(jumps, "jump"), metric_str(r.jump_db));
  std::vector<LinePoint> points;
  for (const TraceTensor& t : r.tensors) {
    points.push_back({t.name, t.sqnr_db, t.jump, trace_tooltip(t)});
  }
  out += line_chart(points, 50.0, "SQNR (dB)", "SQNR per tensor along the graph");
  out += "<details><summary>" + plural(static_cast<int64_t>(r.tensors.size()), "tensor") +
         "</summary>\n<table>\n<tr><th></th><th>tensor</th><th>op</th><th class=\"num\">SQNR "
         "(dB)</th><th class=\"num\">cosine</th><th class=\"num\">drop (dB)</th></tr>\n";
  for (const TraceTensor& t : r.tensors) {
    out += "<tr>" + td(t.jump ? "jump" : "") + td(t.name + (t.dequantized ? " (dq)" : "")) +
           td(t.op_type) + td_num(metric_str(t.sqnr_db)) +
           td_num(std::isnan(t.cosine) ? "" : fmt::format("{:.6f}", t.cosine)) +
           td_num(std::isnan(t.drop_db) ? "" : metric_str(t.drop_db)) + "</tr>\n";
  }
  return out + "</table></details>\n";
}

std::string compare_section(const std::vector<Analysis>& all) {
  std::string out = "<h2 id=\"compare\">Variants side by side</h2>\n";
  std::vector<StackedBar> bars;
  for (const Analysis& a : all) bars.push_back(precision_bar(a.entry->label, a.summary.count));
  out += stacked_bar_chart(bars, precision_legend(), "node count per model and precision");
  out += "<table>\n<tr><th></th>";
  for (const Analysis& a : all) out += "<th>" + html_escape(a.entry->label) + "</th>";
  out += "</tr>\n";
  auto row = [&](std::string_view name, auto cell) {
    std::string r = "<tr><th>" + html_escape(name) + "</th>";
    for (const Analysis& a : all) r += td_num(cell(a));
    out += r + "</tr>\n";
  };
  row("file size", [](const Analysis& a) {
    return a.entry->file_bytes >= 0 ? bytes_str(a.entry->file_bytes) : std::string("-");
  });
  row("parameters", [](const Analysis& a) { return bytes_str(a.summary.total_param_bytes); });
  row("weighted ops in INT8", [](const Analysis& a) {
    return fmt::format("{} / {}", a.summary.weighted_int8, a.summary.weighted_ops);
  });
  for (size_t p = 0; p < kPrecisionCount; ++p) {
    if (static_cast<Precision>(p) == Precision::kQdq) continue;
    row(fmt::format("{} nodes", precision_name(static_cast<Precision>(p))),
        [p](const Analysis& a) { return std::to_string(a.summary.count[p]); });
  }
  row("QuantizeLinear", [](const Analysis& a) { return std::to_string(a.summary.quantize_nodes); });
  row("DequantizeLinear",
      [](const Analysis& a) { return std::to_string(a.summary.dequantize_nodes); });
  row("lint errors / warnings", [](const Analysis& a) {
    return fmt::format("{} / {}", count(a.findings, Severity::kError),
                       count(a.findings, Severity::kWarning));
  });
  std::vector<std::string> metrics;
  for (const Analysis& a : all) {
    if (!a.entry->eval) continue;
    for (const auto& [k, v] : a.entry->eval->metrics) {
      if (std::find(metrics.begin(), metrics.end(), k) == metrics.end()) metrics.push_back(k);
    }
  }
  for (const std::string& k : metrics) {
    row(k, [&k](const Analysis& a) {
      if (!a.entry->eval) return std::string("-");
      for (const auto& [name, v] : a.entry->eval->metrics) {
        if (name == k) return metric_str(v);
      }
      return std::string("-");
    });
  }
  out += "</table>\n<p>";
  for (const Analysis& a : all) {
    out += fmt::format(
        "<b>{}</b>: <code>{}</code>{}<br>\n", html_escape(a.entry->label),
        html_escape(a.entry->path),
        a.entry->eval ? " (accuracy from <code>" + html_escape(a.entry->eval->source) + "</code>)"
                      : std::string());
  }
  return out + "</p>\n";
}

std::string graph_section(const HtmlOptions& o) {
  std::string out = "<h2 id=\"graph\">Graph</h2>\n";
  if (o.graph_svg.empty()) {
    return out + "<p>" + html_escape(o.graph_note.empty() ? "No drawing." : o.graph_note) +
           "</p>\n";
  }
  out +=
      "<p>Nodes coloured by precision; a bold green edge is a Q/DQ pair (INT8 tensor); "
      "edge labels give shape and dtype.</p>\n";
  // Graphviz writes an XML prolog and DOCTYPE before <svg>: inline HTML wants the element only.
  const size_t start = o.graph_svg.find("<svg");
  const std::string svg = start == std::string::npos ? o.graph_svg : o.graph_svg.substr(start);
  return out + "<div class=\"graph\">\n" + svg + "</div>\n";
}

std::string layers_section(const Analysis& a) {
  std::string out = "<h2 id=\"layers\">Layers</h2>\n<details><summary>";
  out +=
      fmt::format("{} nodes (Q/DQ included), in graph order</summary>\n", a.summary.layers.size());
  out +=
      "<table>\n<tr><th>#</th><th>node</th><th>op</th><th>precision</th><th>inputs</th>"
      "<th>output</th><th class=\"num\">parameters</th></tr>\n";
  for (const LayerInfo& l : a.summary.layers) {
    out += "<tr>" + td_num(static_cast<int64_t>(l.node)) + td(l.name) + td(l.op_type) + "<td>" +
           precision_badge(l.precision) + "</td><td><code>" + html_escape(l.inputs) +
           "</code></td><td><code>" + html_escape(l.output) + "</code></td>" +
           td_num(l.param_bytes > 0 ? bytes_str(l.param_bytes) : "") + "</tr>\n";
  }
  return out + "</table></details>\n";
}

}  // namespace

std::string html_report(std::span<const ModelEntry> models, const SensitivityReport* sensitivity,
                        const HtmlOptions& options) {
  std::vector<Analysis> all;
  for (const ModelEntry& m : models) {
    if (!m.model) continue;
    all.push_back({&m, summarize_precision(*m.model), lint(*m.model, options.lint)});
  }
  const std::string label = all.empty() ? "" : all[0].entry->label;
  const std::string title = options.title.empty() ? "ptq report: " + label : options.title;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>" + html_escape(title) + "</title>\n<style>" + std::string(kStyle) +
         "</style>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(title) + "</h1>\n";
  if (all.empty()) return out + "<p>No model.</p>\n</body>\n</html>\n";
  out += "<p class=\"sub\">Model <code>" + html_escape(all[0].entry->path) + "</code></p>\n";
  out +=
      "<nav><a href=\"#summary\">Summary</a><a href=\"#precision\">Precision</a>"
      "<a href=\"#lint\">Lint</a>";
  if (sensitivity) out += "<a href=\"#sensitivity\">Sensitivity</a>";
  if (options.trace) out += "<a href=\"#trace\">Error trace</a>";
  if (all.size() > 1) out += "<a href=\"#compare\">Variants</a>";
  out += "<a href=\"#graph\">Graph</a><a href=\"#layers\">Layers</a></nav>\n";
  out += summary_section(all[0]);
  out += precision_section(all[0]);
  out += lint_section(all[0]);
  if (sensitivity) out += sensitivity_section(*sensitivity);
  if (options.trace) out += trace_section(*options.trace);
  if (all.size() > 1) out += compare_section(all);
  out += graph_section(options);
  out += layers_section(all[0]);
  if (options.graph_svg.empty() && !options.graph_text.empty()) {
    out += "<pre class=\"dot\">" + html_escape(options.graph_text) + "</pre>\n";
  }
  out += "<footer>" + html_escape(options.generated_by.empty() ? "ptqkit" : options.generated_by) +
         "</footer>\n</body>\n</html>\n";
  return out;
}

}  // namespace ptq::report
