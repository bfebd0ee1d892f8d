// `ptq run` batching per input, end to end: a sequence-first input (--batch-axis x=1) gathered
// on its output's batch axis, a scalar input fed whole to every batch, an output with no batch
// axis written per batch (OUT/<name>/<k>.npy), and a dtype mismatch refused unless --cast.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/run_ptq.h"
#include "ptq/data.h"
#include "ptq/onnx.h"

namespace ptq {
namespace {

namespace fs = std::filesystem;
using ptq::testing::run_ptq;

fs::path work_dir(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) /
                     ("ptq_run_axis_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

ir::ValueInfo info(const std::string& name, ir::DType dtype, std::vector<ir::Dim> dims) {
  ir::ValueInfo v;
  v.name = name;
  v.type.dtype = dtype;
  v.type.dims = std::move(dims);
  return v;
}

// x [seq, batch, 2] and a scalar t:
//   x, t ─► Add ─► y [seq, batch, 2] ─► ReduceSum (all axes, keepdims 0) ─► s []
ir::Model seq_first_model() {
  ir::Model m;
  m.set_opset("", 17);
  const std::vector<ir::Dim> xd = {ir::Dim::symbol("seq"), ir::Dim::symbol("batch"),
                                   ir::Dim::of(2)};
  m.graph.inputs = {info("x", ir::DType::kFloat32, xd), info("t", ir::DType::kFloat32, {})};
  m.graph.outputs = {info("y", ir::DType::kFloat32, xd), info("s", ir::DType::kFloat32, {})};
  ir::Node add;
  add.op_type = "Add";
  add.name = "add";
  add.inputs = {"x", "t"};
  add.outputs = {"y"};
  ir::Node sum;
  sum.op_type = "ReduceSum";
  sum.name = "sum";
  sum.inputs = {"y"};
  sum.outputs = {"s"};
  ir::Attribute keep;
  keep.name = "keepdims";
  keep.type = ir::AttrType::kInt;
  keep.i = 0;
  sum.set_attr(keep);
  m.graph.nodes = {add, sum};
  return m;
}

TEST(RunBatchAxis, SequenceFirstInputScalarInputAndPerBatchOutput) {
  const fs::path dir = work_dir("seq");
  ASSERT_TRUE(onnx::save_model(seq_first_model(), dir / "m.onnx").is_ok());
  // 5 samples of [seq 3, hidden 2]: x[k][s][h] = 100 k + 10 s + h.
  ir::Tensor x(ir::DType::kFloat32, {5, 3, 2});
  for (int64_t i = 0; i < x.size(); ++i) {
    x.data<float>()[i] = static_cast<float>(100 * (i / 6) + 10 * (i / 2 % 3) + i % 2);
  }
  ir::Tensor t(ir::DType::kFloat32, {});
  t.data<float>()[0] = 0.5f;
  ASSERT_TRUE(data::save_npy(dir / "x.npy", x).is_ok());
  ASSERT_TRUE(data::save_npy(dir / "t.npy", t).is_ok());
  const auto r = run_ptq({"run", (dir / "m.onnx").string(), "--data",
                          "x=" + (dir / "x.npy").string(), "--data",
                          "t=" + (dir / "t.npy").string(), "--batch-axis", "x=1", "--batch", "2",
                          "--quiet", "-o", (dir / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto y = data::load_npy(dir / "out" / "y.npy");
  ASSERT_TRUE(y.has_value()) << y.status().message();
  ASSERT_EQ(y->shape(), (ir::Shape{3, 5, 2}));  // gathered on the batch axis, 1
  for (int64_t s = 0; s < 3; ++s) {
    for (int64_t k = 0; k < 5; ++k) {
      for (int64_t h = 0; h < 2; ++h) {
        EXPECT_EQ(y->data<float>()[(s * 5 + k) * 2 + h], 100 * k + 10 * s + h + 0.5f);
      }
    }
  }
  // s has no batch axis: one file per batch (samples 0-1, 2-3, 4).
  // Each sample adds 600 k + 63 (its 10 s + h) + 6 * 0.5.
  const float sums[3] = {600 * (0 + 1) + 2 * 66, 600 * (2 + 3) + 2 * 66, 600 * 4 + 66};
  for (int k = 0; k < 3; ++k) {
    auto s = data::load_npy(dir / "out" / "s" / (std::to_string(k) + ".npy"));
    ASSERT_TRUE(s.has_value()) << s.status().message();
    EXPECT_EQ(s->shape(), ir::Shape{});
    EXPECT_FLOAT_EQ(s->data<float>()[0], sums[k]) << k;
  }
  fs::remove_all(dir);
}

TEST(RunBatchAxis, DtypeMismatchIsRefusedUnlessCast) {
  const fs::path dir = work_dir("dtype");
  ASSERT_TRUE(onnx::save_model(seq_first_model(), dir / "m.onnx").is_ok());
  ir::Tensor x(ir::DType::kUInt8, {2, 3, 2});
  for (int64_t i = 0; i < x.size(); ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(20 * i);
  ir::Tensor t(ir::DType::kFloat32, {});
  t.data<float>()[0] = 0.0f;
  ASSERT_TRUE(data::save_npy(dir / "x.npy", x).is_ok());
  ASSERT_TRUE(data::save_npy(dir / "t.npy", t).is_ok());
  std::vector<std::string> args = {"run", (dir / "m.onnx").string(), "--data",
                                   "x=" + (dir / "x.npy").string(), "--data",
                                   "t=" + (dir / "t.npy").string(), "--batch-axis", "x=1",
                                   "--quiet", "-o", (dir / "out").string()};
  const auto refused = run_ptq(args);
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("input 'x' is float32 but"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--cast"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find('\n'), refused.err.size() - 1) << refused.err;
  args.push_back("--cast");
  const auto cast = run_ptq(args);
  ASSERT_EQ(cast.exit_code, 0) << cast.err;
  auto y = data::load_npy(dir / "out" / "y.npy");
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->data<float>()[1], 20.0f);  // x[k 0][s 0][h 1] lands at y[0][0][1]
  // A --batch-axis beyond the input's rank names both.
  args.push_back("--batch-axis");
  args.push_back("t=0");
  const auto beyond = run_ptq(args);
  EXPECT_EQ(beyond.exit_code, 3);
  EXPECT_NE(beyond.err.find("--batch-axis t=0 is beyond input 't'"), std::string::npos)
      << beyond.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ptq
