#include "test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ptq::data::test {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

int python(const std::string& args) {
  const std::string cmd =
      fmt::format("cd '{}/tests' && /usr/bin/python3 {}", PTQ_SOURCE_DIR, args);
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// Generated once per build and script version (ctest runs each test in its own process):
// into a temporary folder renamed into place, so parallel tests never see a half-made one.
const fs::path& fixtures() {
  static const fs::path dir = [] {
    const std::string script =
        read_bytes(fs::path(PTQ_SOURCE_DIR) / "tests/data/fixtures/make_fixtures.py");
    const fs::path final_dir = fs::path(PTQ_BINARY_DIR) / "tests" / "data" /
                               fmt::format("fixtures-{:016x}", std::hash<std::string>{}(script));
    if (fs::exists(final_dir)) return final_dir;
    const fs::path tmp = final_dir.string() + fmt::format(".tmp{}", ::getpid());
    fs::remove_all(tmp);
    if (python(fmt::format("data/fixtures/make_fixtures.py '{}'", tmp.string())) != 0) {
      throw std::runtime_error("tests/data/fixtures/make_fixtures.py failed (needs "
                               "/usr/bin/python3 with numpy and PIL)");
    }
    std::error_code ec;
    fs::rename(tmp, final_dir, ec);
    if (ec) fs::remove_all(tmp);  // another test process got there first
    return final_dir;
  }();
  return dir;
}

std::string npy_bytes(const std::string& descr, const ir::Shape& shape, std::string_view data,
                      int major, bool fortran) {
  std::string dims = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1) dims += ",";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': ({}), }}", descr,
                                 fortran ? "True" : "False", dims);
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = dict.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + dict + std::string(data);
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

ir::ValueInfo input(std::string name, ir::DType dtype, std::vector<ir::Dim> dims) {
  ir::ValueInfo v;
  v.name = std::move(name);
  v.type.dtype = dtype;
  v.type.dims = std::move(dims);
  return v;
}

ir::ValueInfo batched(std::string name, ir::DType dtype, std::vector<int64_t> dims) {
  std::vector<ir::Dim> d{ir::Dim::symbol("batch")};
  for (int64_t v : dims) d.push_back(ir::Dim::of(v));
  return input(std::move(name), dtype, std::move(d));
}

ir::Graph graph_of(std::vector<ir::ValueInfo> inputs) {
  ir::Graph g;
  g.inputs = std::move(inputs);
  return g;
}

DatasetSpec spec_of(std::vector<std::string> sources) {
  DatasetSpec spec;
  for (const std::string& s : sources) spec.sources.push_back(parse_source(s));
  return spec;
}

std::string bytes_of(const ir::Tensor& t) {
  return std::string(static_cast<const char*>(t.raw()), t.nbytes());
}

}  // namespace ptq::data::test
