// Helpers of the data-module tests: temporary folders, fixtures written by NumPy and Pillow
// (tests/data/fixtures/make_fixtures.py), hand-made .npy bytes, small graphs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/temp_dir.h"
#include "ptq/data.h"
#include "ptq/ir.h"

namespace ptq::data::test {

namespace fs = std::filesystem;

// A fresh folder, removed with everything in it when the object dies.
using ptq::testing::TempDir;

std::string read_bytes(const fs::path& path);
void write_bytes(const fs::path& path, std::string_view bytes);

// Runs `/usr/bin/python3 ARGS` (script paths relative to the source tree's tests/); returns
// its exit status.
int python(const std::string& args);

// The folder make_fixtures.py filled (once per build and script version); throws if the
// script failed.
const fs::path& fixtures();

// A .npy file's bytes made by hand: `descr` as NumPy spells it, `data` as is.
std::string npy_bytes(const std::string& descr, const ir::Shape& shape, std::string_view data,
                      int major = 1, bool fortran = false);

// Random values with a fixed seed (never all zero).
std::vector<float> random_floats(size_t n, uint32_t seed);

ir::ValueInfo input(std::string name, ir::DType dtype, std::vector<ir::Dim> dims);
// [N] + fixed dims: a symbolic batch then the given sizes.
ir::ValueInfo batched(std::string name, ir::DType dtype, std::vector<int64_t> dims);
ir::Graph graph_of(std::vector<ir::ValueInfo> inputs);

// A spec with one source per "NAME=PATH" or "PATH".
DatasetSpec spec_of(std::vector<std::string> sources);

// The bytes of a tensor's storage.
std::string bytes_of(const ir::Tensor& t);

}  // namespace ptq::data::test

// Asserts an Expected/Status-returning expression fails with kInvalidInput and a message
// holding `needle`.
#define EXPECT_INVALID(expr, needle)                                              \
  do {                                                                            \
    ::ptq::Status s_ = ::ptq::data::test::status_of(expr);                        \
    EXPECT_EQ(s_.code(), ::ptq::StatusCode::kInvalidInput) << s_.message();       \
    EXPECT_NE(s_.message().find(needle), std::string::npos) << s_.message();      \
    EXPECT_EQ(s_.message().find('\n'), std::string::npos) << s_.message();        \
  } while (0)

namespace ptq::data::test {
inline Status status_of(const Status& s) { return s; }
template <typename T>
Status status_of(const Expected<T>& e) {
  return e.has_value() ? Status() : e.status();
}
}  // namespace ptq::data::test
