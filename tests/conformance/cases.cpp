// Shared by the library-level and CLI conformance tests: finding ONNX backend node cases,
// reading their TensorProtos and comparing at ONNX's tolerances.
#include "cases.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "proto.h"  // src/onnx: TensorProto -> ir::Tensor

namespace ptq::test {

Expected<ir::Tensor> read_pb(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_input("{}: cannot open", path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(ss.str())) {
    return invalid_input("{}: not a TensorProto", path.string());
  }
  return onnx::tensor_from_proto(proto, {path.parent_path()}, path.string());
}

Expected<std::vector<ir::Tensor>> read_numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<ir::Tensor> out;
  for (int i = 0;; ++i) {
    const fs::path p = dir / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(p)) break;
    PTQ_ASSIGN_OR_RETURN(ir::Tensor t, read_pb(p));
    out.push_back(std::move(t));
  }
  return out;
}

ir::Tensor as_declared(ir::Tensor t, ir::DType declared) {
  if (declared != ir::DType::kBFloat16 || t.dtype() != ir::DType::kUInt16) return t;
  ir::Tensor b(ir::DType::kBFloat16, t.shape());
  if (t.nbytes() > 0) std::memcpy(b.raw(), t.raw(), t.nbytes());
  return b;
}

std::string compare(const ir::Tensor& got, const ir::Tensor& want) {
  if (got.dtype() != want.dtype()) {
    return fmt::format("dtype {} != {}", ir::dtype_name(got.dtype()), ir::dtype_name(want.dtype()));
  }
  if (got.shape() != want.shape()) {
    return fmt::format("shape {} != {}", ir::shape_str(got.shape()), ir::shape_str(want.shape()));
  }
  if (want.dtype() == ir::DType::kString) {
    return got.strings() == want.strings() ? "" : "strings differ";
  }
  const bool fp = ir::is_float(want.dtype());
  for (int64_t i = 0; i < want.size(); ++i) {
    if (fp) {
      const double g = got.as_double(i);
      const double w = want.as_double(i);
      if (std::isnan(w) && std::isnan(g)) continue;
      if (std::isinf(w) && g == w) continue;
      if (!(std::abs(g - w) <= 1e-7 + 1e-3 * std::abs(w))) {
        return fmt::format("element {}: {} != {}", i, g, w);
      }
    } else if (got.as_int64(i) != want.as_int64(i)) {
      return fmt::format("element {}: {} != {}", i, got.as_int64(i), want.as_int64(i));
    }
  }
  return "";
}

bool has_non_tensor_io(const ir::Graph& g) {
  for (const auto* list : {&g.inputs, &g.outputs}) {
    for (const ir::ValueInfo& v : *list) {
      if (!v.type.opaque.empty()) return true;
    }
  }
  return false;
}

std::map<std::string, std::string> expected_failures(const std::string& list) {
  std::map<std::string, std::string> out;
  std::ifstream in(fs::path(PTQ_SOURCE_DIR) / "tests/conformance" / list);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find_first_of(" \t");
    const std::string name = line.substr(0, sp);
    out[name] = sp == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", sp));
  }
  return out;
}

std::vector<fs::path> node_cases() {
  std::vector<fs::path> cases;
  const fs::path root = test_data_dir() / "onnx-backend" / "node";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory() && e.path().filename().string().starts_with("test_")) {
      cases.push_back(e.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_")) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

}  // namespace ptq::test
