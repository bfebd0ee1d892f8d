// `ptq info MODEL [--json]`: what a model is made of, without running it.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend_options.h"
#include "command.h"
#include "ptq/onnx.h"
#ifdef PTQ_HAVE_CPU_RUNTIME
#include "ptq/runtime.h"
#endif

namespace ptq::apps {

namespace {

using Json = nlohmann::ordered_json;

struct InfoOptions {
  std::string model;
  bool json = false;
  bool devices = false;  // ptq info --devices (apps/backend_options.cpp)
  std::string cpu_isa = "auto";
};

struct Summary {
  std::vector<std::pair<std::string, int64_t>> op_counts;  // most frequent first
  int64_t params = 0;
  int64_t param_bytes = 0;
  int64_t quantize = 0;
  int64_t dequantize = 0;
  std::optional<std::vector<std::string>> unsupported;  // nullopt: no runtime in this build
  std::string cpu_isa;  // the CPU kernels' level that runs; "" without the CPU runtime
  std::string cpu_isa_best;
};

std::string op_key(const ir::Node& n) {
  return n.in_default_domain() ? n.op_type : n.domain + "." + n.op_type;
}

Summary summarize(const ir::Model& model, [[maybe_unused]] runtime::CpuIsa isa) {
  Summary s;
  std::map<std::string, int64_t> counts;
  for (const ir::Node& n : model.graph.nodes) {
    ++counts[op_key(n)];
    if (n.op_type == "QuantizeLinear") ++s.quantize;
    if (n.op_type == "DequantizeLinear") ++s.dequantize;
  }
  s.op_counts.assign(counts.begin(), counts.end());
  std::stable_sort(s.op_counts.begin(), s.op_counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const ir::Initializer& i : model.graph.initializers()) {
    s.params += i.tensor.size();
    s.param_bytes += static_cast<int64_t>(i.tensor.nbytes());
    for (const std::string& str : i.tensor.strings())
      s.param_bytes += static_cast<int64_t>(str.size());
  }
#ifdef PTQ_HAVE_CPU_RUNTIME
  runtime::CpuBackendOptions options;
  options.isa = isa;
  auto backend = runtime::make_cpu_backend(options);
  s.unsupported = runtime::unsupported_ops(model, *backend);
  s.cpu_isa = runtime::cpu_isa_name(*runtime::resolve_cpu_isa(isa));
  s.cpu_isa_best = runtime::cpu_isa_name(runtime::best_cpu_isa());
#endif
  return s;
}

std::string opsets_str(const ir::Model& m) {
  std::string out;
  for (const ir::OpsetImport& o : m.opset_imports) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", o.domain.empty() ? "ai.onnx" : o.domain, o.version);
  }
  return out;
}

std::string bytes_str(int64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (int64_t{1} << 20)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024.0);
  if (b < (int64_t{1} << 30)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / 1048576.0);
  return fmt::format("{:.2f} GiB", static_cast<double>(b) / 1073741824.0);
}

void print_values(const char* title, const std::vector<const ir::ValueInfo*>& values) {
  fmt::print("{}:\n", title);
  size_t width = 0;
  for (const ir::ValueInfo* v : values) width = std::max(width, v->name.size());
  for (const ir::ValueInfo* v : values) {
    const bool tensor = v->type.opaque.empty();
    fmt::print("  {:<{}}  {}{}\n", v->name, width, onnx::type_name(v->type),
               tensor ? " " + ir::dims_str(v->type.dims) : "");
  }
}

std::vector<const ir::ValueInfo*> pointers(const std::vector<ir::ValueInfo>& values) {
  std::vector<const ir::ValueInfo*> out;
  for (const ir::ValueInfo& v : values) out.push_back(&v);
  return out;
}

void print_text(const InfoOptions& o, const ir::Model& m, const Summary& s) {
  fmt::print("model:       {}\n", o.model);
  fmt::print("ir version:  {}\n", m.ir_version);
  fmt::print("opsets:      {}\n", opsets_str(m));
  fmt::print("producer:    {}\n", m.producer_name.empty() ? "(none)"
                                  : m.producer_version.empty()
                                      ? m.producer_name
                                      : fmt::format("{} {}", m.producer_name, m.producer_version));
  print_values("inputs", m.graph.real_inputs());
  print_values("outputs", pointers(m.graph.outputs));
  fmt::print("nodes:       {}\n", m.graph.nodes.size());
  size_t width = 0;
  for (const auto& [op, n] : s.op_counts) width = std::max(width, op.size());
  for (const auto& [op, n] : s.op_counts) fmt::print("  {:<{}}  {}\n", op, width, n);
  fmt::print("parameters:  {} ({} in {} initializers)\n", s.params, bytes_str(s.param_bytes),
             m.graph.initializers().size());
  fmt::print("Q/DQ nodes:  {} ({} QuantizeLinear, {} DequantizeLinear)\n",
             s.quantize + s.dequantize, s.quantize, s.dequantize);
  if (!s.unsupported) {
    fmt::print("unsupported ops (cpu): unknown (built without the CPU runtime)\n");
  } else if (s.unsupported->empty()) {
    fmt::print("unsupported ops (cpu): none\n");
  } else {
    fmt::print("unsupported ops (cpu): {}\n", fmt::join(*s.unsupported, ", "));
  }
  if (!s.cpu_isa.empty()) {
    fmt::print("cpu kernels: {} (this CPU runs up to {})\n", s.cpu_isa, s.cpu_isa_best);
  }
}

Json value_json(const ir::ValueInfo& v) {
  Json shape = nullptr;
  if (v.type.dims) {
    shape = Json::array();
    for (const ir::Dim& d : *v.type.dims) {
      if (d.known()) {
        shape.push_back(d.value);
      } else if (!d.param.empty()) {
        shape.push_back(d.param);
      } else {
        shape.push_back(nullptr);
      }
    }
  }
  return Json{{"name", v.name}, {"dtype", onnx::type_name(v.type)}, {"shape", shape}};
}

void print_json(const InfoOptions& o, const ir::Model& m, const Summary& s) {
  Json j;
  j["model"] = o.model;
  j["ir_version"] = m.ir_version;
  j["opset"] = m.opset("");
  j["opsets"] = Json::array();
  for (const ir::OpsetImport& op : m.opset_imports) {
    j["opsets"].push_back({{"domain", op.domain}, {"version", op.version}});
  }
  j["producer"] = {{"name", m.producer_name}, {"version", m.producer_version}};
  j["inputs"] = Json::array();
  for (const ir::ValueInfo* v : m.graph.real_inputs()) j["inputs"].push_back(value_json(*v));
  j["outputs"] = Json::array();
  for (const ir::ValueInfo& v : m.graph.outputs) j["outputs"].push_back(value_json(v));
  j["node_count"] = m.graph.nodes.size();
  j["op_counts"] = Json::object();
  for (const auto& [op, n] : s.op_counts) j["op_counts"][op] = n;
  j["parameters"] = {{"count", s.params},
                     {"bytes", s.param_bytes},
                     {"initializers", m.graph.initializers().size()}};
  j["qdq_nodes"] = {{"total", s.quantize + s.dequantize},
                    {"quantize_linear", s.quantize},
                    {"dequantize_linear", s.dequantize}};
  j["unsupported_ops"] = s.unsupported ? Json(*s.unsupported) : Json(nullptr);
  j["cpu_isa"] = s.cpu_isa.empty() ? Json(nullptr) : Json(s.cpu_isa);
  fmt::print("{}\n", j.dump(2));
}

}  // namespace

Runner register_info(CLI::App& app, GlobalOptions& /*global*/) {
  app.description("Print a model's opsets, inputs/outputs, op counts, parameters, Q/DQ nodes, "
                  "the ops the CPU runtime cannot run and the CPU kernels' instruction set.");
  auto o = std::make_shared<InfoOptions>();
  app.add_option("MODEL", o->model, "ONNX model file");
  app.add_flag("--json", o->json, "print JSON instead of text");
  app.add_flag("--devices", o->devices, "list the Vulkan devices and the features ptqkit uses");
  add_cpu_isa_option(app, o->cpu_isa);
  return [o]() -> Status {
    if (o->devices) return print_vulkan_devices(o->json);
    if (o->model.empty()) return usage_error("info: MODEL is required (or --devices)");
    PTQ_ASSIGN_OR_RETURN(const runtime::CpuIsa isa, cpu_isa_option(o->cpu_isa));
    PTQ_ASSIGN_OR_RETURN(ir::Model model, onnx::load_model(o->model));
    const Summary s = summarize(model, isa);
    if (o->json) {
      print_json(*o, model, s);
    } else {
      print_text(*o, model, s);
    }
    return {};
  };
}

}  // namespace ptq::apps
