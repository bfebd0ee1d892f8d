// A minimal .npy reader for tests and benchmarks (little-endian, C order, numeric dtypes):
// independent of the data module so the runtime's tests depend on nothing under test elsewhere.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::runtime::testing {

inline Expected<ir::Tensor> read_npy(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return invalid_input("{}: cannot open", path.string());
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(1, 5, "NUMPY") != 0) {
    return invalid_input("{}: not an .npy file", path.string());
  }
  const bool v1 = bytes[6] == 1;
  size_t hlen =
      static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  size_t start = 10;
  if (!v1) {
    uint32_t l = 0;
    std::memcpy(&l, bytes.data() + 8, 4);
    hlen = l;
    start = 12;
  }
  const std::string header = bytes.substr(start, hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'"))) {
    return invalid_input("{}: no descr", path.string());
  }
  const std::string descr = m[1];
  const std::pair<const char*, ir::DType> types[] = {
      {"<f4", ir::DType::kFloat32}, {"<f8", ir::DType::kFloat64}, {"<i8", ir::DType::kInt64},
      {"<i4", ir::DType::kInt32},   {"|u1", ir::DType::kUInt8},   {"|i1", ir::DType::kInt8},
      {"|b1", ir::DType::kBool}};
  ir::DType dtype = ir::DType::kUndefined;
  for (const auto& [d, t] : types) {
    if (descr == d) dtype = t;
  }
  if (dtype == ir::DType::kUndefined)
    return invalid_input("{}: dtype {} not supported", path.string(), descr);
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    return invalid_input("{}: no shape", path.string());
  }
  ir::Shape shape;
  std::stringstream dims(m[1].str());
  std::string d;
  while (std::getline(dims, d, ',')) {
    if (d.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(d));
  }
  ir::Tensor t(dtype, shape);
  if (bytes.size() < start + hlen + t.nbytes())
    return invalid_input("{}: truncated", path.string());
  std::memcpy(t.raw(), bytes.data() + start + hlen, t.nbytes());
  return t;
}

}  // namespace ptq::runtime::testing
