// Graph drawing: DOT text coloured by precision; SVG through Graphviz's `dot`.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "ptq/report.h"
#include "qdq_view.h"

extern char** environ;

namespace ptq::report {

namespace {

namespace fs = std::filesystem;

std::string esc(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Where an edge into a drawn node starts: the producing node id (looking back through hidden
// Q/DQ nodes), a graph input's id, or "" when the value is a constant.
struct EdgeSource {
  std::string id;
  std::string value;  // the value that leaves the source
};

class DotWriter {
 public:
  DotWriter(const QdqView& v, const DotOptions& o) : v_(v), o_(o) {}

  std::string run() {
    out_ << "digraph model {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
            "fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
    if (!o_.title.empty()) out_ << fmt::format("  label=\"{}\";\n  labelloc=t;\n", esc(o_.title));
    const ir::Graph& g = v_.graph();
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (v_.is_constant(g.inputs[i].name)) continue;
      out_ << fmt::format("  in{} [shape=ellipse, fillcolor=\"#ffffff\", label=\"{}\\n{}\"];\n", i,
                          esc(g.inputs[i].name), esc(v_.type_str(g.inputs[i].name)));
    }
    for (size_t n = 0; n < v_.size(); ++n) {
      if (drawn(n)) node(n);
    }
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      out_ << fmt::format("  out{} [shape=ellipse, fillcolor=\"#ffffff\", label=\"{}\"];\n", i,
                          esc(g.outputs[i].name));
      edge(g.outputs[i].name, fmt::format("out{}", i));
    }
    legend();
    out_ << "}\n";
    return out_.str();
  }

 private:
  bool hidden_qdq(const ir::Node& node) const {
    return o_.collapse_qdq && (is_q(node) || is_dq(node));
  }
  bool drawn(size_t n) const {
    const ir::Node& node = v_.node(n);
    return !op_is(node, "Constant") && !hidden_qdq(node);
  }

  void node(size_t n) {
    const ir::Node& nd = v_.node(n);
    std::string label = v_.node_name(n) + "\n" + nd.op_type;
    if (o_.collapse_qdq) {
      for (const std::string& in : nd.inputs) {
        const int64_t dq = v_.dq_producing(in);
        if (dq < 0 || !v_.is_weight_like(in)) continue;
        const ir::Tensor* scale = v_.scale_of(static_cast<size_t>(dq));
        const bool per_channel = scale && scale->size() > 1;
        const ir::Tensor* w = v_.weight_data(in);
        label += fmt::format(
            "\n{} {} {}", v_.dequantized_source(in), w ? ir::shape_str(w->shape()) : "",
            per_channel
                ? fmt::format("int8/axis{}", v_.node(static_cast<size_t>(dq)).attr_int("axis", 1))
                : "int8");
      }
    }
    out_ << fmt::format("  n{} [fillcolor=\"{}\", label=\"{}\", tooltip=\"{}\"];\n", n,
                        precision_colour(v_.precision(n)), esc(label),
                        precision_name(v_.precision(n)));
    for (const std::string& in : nd.inputs) {
      if (in.empty()) continue;
      if (o_.collapse_qdq && v_.is_dequantized(in) && v_.is_weight_like(in)) continue;
      edge(in, fmt::format("n{}", n));
    }
  }

  EdgeSource source(std::string value) const {
    for (int hops = 0; hops < 4; ++hops) {
      const int64_t p = v_.producer(value);
      if (p >= 0) {
        const size_t n = static_cast<size_t>(p);
        if (drawn(n)) return {fmt::format("n{}", n), value};
        if (op_is(v_.node(n), "Constant")) return {};
        value = v_.node(n).input(0);  // a hidden Q/DQ: look through it
        continue;
      }
      const ir::Graph& g = v_.graph();
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        if (g.inputs[i].name == value && !v_.is_constant(value))
          return {fmt::format("in{}", i), value};
      }
      return {};
    }
    return {};
  }

  void edge(const std::string& value, const std::string& to) {
    if (v_.is_constant(value)) return;
    const EdgeSource from = source(value);
    if (from.id.empty()) return;
    const int64_t dq = o_.collapse_qdq ? v_.dq_producing(value) : -1;
    std::string label = v_.type_str(from.value);
    std::string style;
    if (dq >= 0) {
      const ir::Tensor* scale = v_.scale_of(static_cast<size_t>(dq));
      const ir::DType q = v_.type(v_.node(static_cast<size_t>(dq)).input(0)).dtype;
      label += fmt::format(
          "\nQ/DQ {}{}", q == ir::DType::kUndefined ? "int8" : ir::dtype_name(q),
          scale && scale->size() == 1 ? fmt::format(" scale {:.4g}", scale->as_double(0)) : "");
      style = ", penwidth=2.5, color=\"#1b7837\"";
    }
    out_ << fmt::format("  {} -> {} [label=\"{}\"{}];\n", from.id, to, esc(label), style);
  }

  void legend() {
    out_ << "  subgraph cluster_legend {\n    label=\"precision\";\n    fontsize=10;\n";
    for (size_t p = 0; p < kPrecisionCount; ++p) {
      const auto pr = static_cast<Precision>(p);
      if (o_.collapse_qdq && pr == Precision::kQdq) continue;
      out_ << fmt::format("    legend_{} [label=\"{}\", fillcolor=\"{}\"];\n", precision_name(pr),
                          precision_name(pr), precision_colour(pr));
    }
    out_ << "  }\n";
  }

  const QdqView& v_;
  const DotOptions& o_;
  std::ostringstream out_;
};

// A fresh empty file in the temporary folder; removed by the caller.
Expected<fs::path> temp_file(const char* stem) {
  std::string name = (fs::temp_directory_path() / fmt::format("{}_XXXXXX", stem)).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0)
    return runtime_error("cannot create a temporary file in {}",
                         fs::temp_directory_path().string());
  ::close(fd);
  return fs::path(name);
}

std::string first_line(const std::string& s) {
  const size_t end = s.find('\n');
  return s.substr(0, end);
}

}  // namespace

std::string graph_dot(const ir::Model& model, const DotOptions& options) {
  const QdqView view(model);
  return DotWriter(view, options).run();
}

bool have_graphviz() {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / "dot";
    if (::access(p.c_str(), X_OK) == 0) return true;
  }
  return false;
}

Expected<std::string> render_svg(std::string_view dot_text) {
  if (!have_graphviz())
    return runtime_error("Graphviz 'dot' is not on PATH (apt-get install graphviz)");
  PTQ_ASSIGN_OR_RETURN(fs::path in, temp_file("ptq_dot_in"));
  PTQ_ASSIGN_OR_RETURN(fs::path out, temp_file("ptq_dot_out"));
  PTQ_ASSIGN_OR_RETURN(fs::path err, temp_file("ptq_dot_err"));
  auto cleanup = [&] {
    std::error_code ec;
    for (const fs::path& p : {in, out, err}) fs::remove(p, ec);
  };
  {
    std::ofstream f(in, std::ios::binary);
    f.write(dot_text.data(), static_cast<std::streamsize>(dot_text.size()));
    if (!f) {
      cleanup();
      return runtime_error("cannot write {}", in.string());
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(), O_WRONLY | O_TRUNC, 0);
  const std::string in_s = in.string();
  const std::string out_s = "-o" + out.string();
  std::vector<char*> argv = {const_cast<char*>("dot"), const_cast<char*>("-Tsvg"),
                             const_cast<char*>(in_s.c_str()), const_cast<char*>(out_s.c_str()),
                             nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "dot", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (rc == 0) ::waitpid(pid, &status, 0);
  std::stringstream svg, msg;
  svg << std::ifstream(out, std::ios::binary).rdbuf();
  msg << std::ifstream(err).rdbuf();
  cleanup();
  if (rc != 0) return runtime_error("cannot run Graphviz 'dot': error {}", rc);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return runtime_error("Graphviz 'dot' failed: {}", first_line(msg.str()));
  }
  return svg.str();
}

}  // namespace ptq::report
