// `ptq report MODEL [--compare OTHER…] [--sensitivity REPORT.json] [--eval-json FILE…]
//  [--trace TRACE.json] -o report.html [--dot G.dot] [--svg G.svg]`: one self-contained HTML
// page (summary, precision table and chart, lint, sensitivity, error along the graph, variants
// side by side, graph) and/or the graph drawing alone (include/ptq/report.h).
//
// Eval files (`ptq eval --json` output) go to the model whose path or file name their "model"
// field names; the others to the remaining models in command-line order.
#include "ptq/report.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <optional>

#include "command.h"
#include "ptq/onnx.h"
#include "ptq/util/atomic_file.h"
#include "ptq/version.h"

namespace ptq::apps {

namespace {

namespace fs = std::filesystem;

struct ReportCliOptions {
  std::string model;
  std::vector<std::string> compare;
  std::string sensitivity;
  std::vector<std::string> eval_json;
  std::string trace;
  std::string out;
  std::string dot;
  std::string svg;
  std::string title;
  bool no_graph = false;
  bool full_graph = false;
};

int64_t size_on_disk(const std::string& path) {
  std::error_code ec;
  const auto bytes = fs::file_size(path, ec);
  if (ec) return -1;
  auto total = static_cast<int64_t>(bytes);
  const auto data = fs::file_size(path + ".data", ec);  // ptqkit's external data file
  if (!ec) total += static_cast<int64_t>(data);
  return total;
}

bool names_model(const std::string& field, const std::string& path) {
  return !field.empty() &&
         (field == path || fs::path(field).filename() == fs::path(path).filename());
}

Status attach_evals(const std::vector<std::string>& files,
                    std::vector<report::ModelEntry>& models) {
  std::vector<report::EvalResult> unnamed;
  for (const std::string& f : files) {
    PTQ_ASSIGN_OR_RETURN(std::string text, util::read_file(f));
    PTQ_ASSIGN_OR_RETURN(report::EvalResult e, report::parse_eval_json(text, f));
    bool placed = false;
    for (report::ModelEntry& m : models) {
      if (!m.eval && names_model(e.model, m.path)) {
        m.eval = e;
        placed = true;
        break;
      }
    }
    if (!placed) unnamed.push_back(std::move(e));
  }
  size_t next = 0;
  for (report::ModelEntry& m : models) {
    if (!m.eval && next < unnamed.size()) m.eval = std::move(unnamed[next++]);
  }
  if (next < unnamed.size()) {
    return usage_error("--eval-json: {} file(s) for {} model(s) ('{}' has no model)", files.size(),
                       models.size(), unnamed[next].source);
  }
  return Status::ok();
}

Status run_report(const ReportCliOptions& o) {
  if (o.out.empty() && o.dot.empty() && o.svg.empty()) {
    return usage_error("ptq report: give -o REPORT.html, --dot FILE or --svg FILE");
  }
  std::optional<report::ErrorTrace> trace;  // read before anything is written
  if (!o.trace.empty()) {
    PTQ_ASSIGN_OR_RETURN(std::string text, util::read_file(o.trace));
    PTQ_ASSIGN_OR_RETURN(trace, report::parse_trace_json(text, o.trace));
  }
  std::vector<std::string> paths = {o.model};
  paths.insert(paths.end(), o.compare.begin(), o.compare.end());
  std::vector<ir::Model> loaded;
  loaded.reserve(paths.size());
  for (const std::string& p : paths) {
    PTQ_ASSIGN_OR_RETURN(ir::Model m, onnx::load_model(p));
    loaded.push_back(std::move(m));
  }
  report::DotOptions dot_options;
  dot_options.collapse_qdq = !o.full_graph;
  dot_options.title = fs::path(o.model).filename().string();
  const std::string dot = report::graph_dot(loaded[0], dot_options);
  if (!o.dot.empty()) PTQ_RETURN_IF_ERROR(util::write_file_atomic(o.dot, dot));
  std::string svg;
  if (!o.svg.empty() || (!o.out.empty() && !o.no_graph && report::have_graphviz())) {
    PTQ_ASSIGN_OR_RETURN(svg, report::render_svg(dot));
  }
  if (!o.svg.empty()) PTQ_RETURN_IF_ERROR(util::write_file_atomic(o.svg, svg));
  if (o.out.empty()) return Status::ok();

  std::vector<report::ModelEntry> models;
  for (size_t i = 0; i < paths.size(); ++i) {
    models.push_back({fs::path(paths[i]).filename().string(), paths[i], size_on_disk(paths[i]),
                      &loaded[i], std::nullopt});
  }
  PTQ_RETURN_IF_ERROR(attach_evals(o.eval_json, models));
  std::optional<report::SensitivityReport> sensitivity;
  if (!o.sensitivity.empty()) {
    PTQ_ASSIGN_OR_RETURN(std::string text, util::read_file(o.sensitivity));
    PTQ_ASSIGN_OR_RETURN(sensitivity, report::parse_sensitivity_json(text, o.sensitivity));
  }
  report::HtmlOptions options;
  options.title = o.title;
  options.trace = trace ? &*trace : nullptr;
  options.graph_svg = svg;
  if (svg.empty()) {
    options.graph_note = o.no_graph ? "Drawing left out (--no-graph)."
                                    : "No drawing: Graphviz 'dot' is not installed.";
  }
  options.generated_by = "ptq " PTQ_VERSION_STRING " (ptq report)";
  const std::string html =
      report::html_report(models, sensitivity ? &*sensitivity : nullptr, options);
  return util::write_file_atomic(o.out, html);
}

}  // namespace

Runner register_report(CLI::App& app, GlobalOptions& /*global*/) {
  auto o = std::make_shared<ReportCliOptions>();
  app.description(
      "HTML report of a quantized model (precision, lint, sensitivity, variants) "
      "and graph drawings");
  app.add_option("model", o->model, "ONNX model (quantized or not)")->required();
  app.add_option("--compare", o->compare, "other variants of the model to show side by side")
      ->expected(1, -1);
  app.add_option("--sensitivity", o->sensitivity,
                 "sensitivity sweep JSON ({\"metric\", \"layers\": [{\"name\", \"metric\"}]})");
  app.add_option("--eval-json", o->eval_json,
                 "accuracy JSON per model (ptq eval --json), matched by its \"model\" field or "
                 "in order")
      ->expected(1, -1);
  app.add_option("--trace", o->trace,
                 "per-tensor error trace (ptq compare --per-tensor --json), drawn along the graph");
  app.add_option("-o,--out", o->out, "the HTML page to write");
  app.add_option("--dot", o->dot, "write the graph drawing as Graphviz DOT");
  app.add_option("--svg", o->svg, "write the graph drawing as SVG (needs Graphviz 'dot')");
  app.add_option("--title", o->title, "page title");
  app.add_flag("--no-graph", o->no_graph, "leave the drawing out of the HTML page");
  app.add_flag("--full-graph", o->full_graph, "draw every Q/DQ node instead of collapsing pairs");
  return [o]() { return run_report(*o); };
}

}  // namespace ptq::apps
