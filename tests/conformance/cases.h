// ONNX backend node cases ($PTQ_TEST_DATA/onnx-backend/node/test_*): finding them, reading
// their TensorProtos and comparing outputs at ONNX's tolerances (rtol 1e-3, atol 1e-7; exact
// for integers, bools and strings). Shared by conformance_test (library) and
// cli_conformance_test (`ptq run`).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/paths.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::test {

namespace fs = std::filesystem;

using ptq::testing::test_data_dir;

// The case folders, sorted; empty when the test data is missing.
std::vector<fs::path> node_cases();
// A case's test_data_set_* folders, sorted.
std::vector<fs::path> data_sets(const fs::path& dir);

Expected<ir::Tensor> read_pb(const fs::path& path);
// Files named prefix_0.pb, prefix_1.pb, … in index order.
Expected<std::vector<ir::Tensor>> read_numbered(const fs::path& dir, const std::string& prefix);
// ONNX's generator stores bfloat16 data as uint16 TensorProtos (NumPy has no bfloat16): read
// them back as the bfloat16 the model declares.
ir::Tensor as_declared(ir::Tensor t, ir::DType declared);
// "" when equal within ONNX's tolerances; else what differs.
std::string compare(const ir::Tensor& got, const ir::Tensor& want);
// Sequence or optional inputs or outputs (the runtime runs tensors only).
bool has_non_tensor_io(const ir::Graph& g);
// tests/conformance/<list>: case name -> reason, one a line, '#' comments.
std::map<std::string, std::string> expected_failures(const std::string& list);

}  // namespace ptq::test
