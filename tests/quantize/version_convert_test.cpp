// ptq::onnx::convert_opset: an opset-11 graph with the ops whose meaning changed at 13
// (Softmax/LogSoftmax/Hardmax "coerce to 2-D at axis", Unsqueeze's axes attribute) converted to
// 13, checked by onnx::checker, run by the CPU runtime and compared with the opset-11
// definitions computed here in float64 on random inputs (fixed seed).
//
//   x [2,3,4] ─┬─ Softmax(axis=1, default) ── y_soft ── Unsqueeze(axes=[0]) ── y_unsq
//              ├─ LogSoftmax(axis=-1) ─────── y_log
//              ├─ Hardmax(axis=0) ─────────── y_hard
//              └─ Reshape(x, shape) ── r (rank unknown: `shape` is an input of unknown length)
//                                       └─ Softmax(axis=2) ── y_dyn
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ptq/ir/builders.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::onnx {
namespace {

ir::ValueInfo value(const std::string& name, ir::DType dtype,
                    std::optional<std::vector<ir::Dim>> dims) {
  return {name, ir::TypeInfo{dtype, std::move(dims), {}}, {}};
}

using ir::int_attr;

ir::Model opset11_model() {
  ir::Model m;
  m.ir_version = 6;
  m.set_opset("", 11);
  m.producer_name = "test";
  m.set_metadata("origin", "version_convert_test");
  using D = ir::Dim;
  ir::Graph& g = m.graph;
  g.name = "coerced";
  g.inputs.push_back(value("x", ir::DType::kFloat32, std::vector<D>{D::of(2), D::of(3), D::of(4)}));
  g.inputs.push_back(value("shape", ir::DType::kInt64, std::vector<D>{D::symbol("")}));
  g.nodes.push_back(ir::make_node("Softmax", "soft", {"x"}, {"y_soft"}));
  ir::Node unsq = ir::make_node("Unsqueeze", "unsq", {"y_soft"}, {"y_unsq"});
  ir::Attribute axes;
  axes.name = "axes";
  axes.type = ir::AttrType::kInts;
  axes.ints = {0};
  unsq.attributes.push_back(axes);
  g.nodes.push_back(unsq);
  ir::Node log = ir::make_node("LogSoftmax", "log", {"x"}, {"y_log"});
  log.attributes.push_back(int_attr("axis", -1));
  g.nodes.push_back(log);
  ir::Node hard = ir::make_node("Hardmax", "hard", {"x"}, {"y_hard"});
  hard.attributes.push_back(int_attr("axis", 0));
  g.nodes.push_back(hard);
  g.nodes.push_back(ir::make_node("Reshape", "reshape", {"x", "shape"}, {"r"}));
  ir::Node dyn = ir::make_node("Softmax", "dyn", {"r"}, {"y_dyn"});
  dyn.attributes.push_back(int_attr("axis", 2));
  g.nodes.push_back(dyn);
  // The checker wants a shape on graph outputs; y_dyn's dims are unknown.
  const std::vector<D> x_dims = {D::of(2), D::of(3), D::of(4)};
  g.outputs.push_back(
      value("y_unsq", ir::DType::kFloat32, std::vector<D>{D::of(1), D::of(2), D::of(3), D::of(4)}));
  g.outputs.push_back(value("y_log", ir::DType::kFloat32, x_dims));
  g.outputs.push_back(value("y_hard", ir::DType::kFloat32, x_dims));
  g.outputs.push_back(value("y_dyn", ir::DType::kFloat32,
                            std::vector<D>{D::symbol("a"), D::symbol("b"), D::symbol("c")}));
  return m;
}

// Opset <= 12 semantics: rows = prod(dims[:axis]), each row of prod(dims[axis:]) values.
enum class Kind { kSoftmax, kLogSoftmax, kHardmax };
std::vector<double> coerced(const std::vector<float>& x, const std::vector<int64_t>& dims,
                            int64_t axis, Kind kind) {
  int64_t cols = 1;
  for (size_t i = static_cast<size_t>(axis); i < dims.size(); ++i) cols *= dims[i];
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * cols;
    double mx = row[0];
    int64_t arg = 0;
    for (int64_t c = 1; c < cols; ++c) {
      if (row[c] > mx) {
        mx = row[c];
        arg = c;
      }
    }
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(row[c]) - mx);
    for (int64_t c = 0; c < cols; ++c) {
      const double e = static_cast<double>(row[c]) - mx;
      double v = 0;
      if (kind == Kind::kSoftmax) v = std::exp(e) / sum;
      if (kind == Kind::kLogSoftmax) v = e - std::log(sum);
      if (kind == Kind::kHardmax) v = c == arg ? 1.0 : 0.0;
      y[static_cast<size_t>(r * cols + c)] = v;
    }
  }
  return y;
}

void expect_close(const ir::Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want[i], 1e-5) << what << " element " << i;
  }
}

TEST(ConvertOpset, Opset11To13KeepsTheOldMeaning) {
  ir::Model m = opset11_model();
  Status s = convert_opset(m, 13);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(m.opset(), 13);
  EXPECT_GE(m.ir_version, 7);
  ASSERT_NE(m.metadata("origin"), nullptr);
  EXPECT_EQ(*m.metadata("origin"), "version_convert_test");
  Status checked = check_model(m);
  EXPECT_TRUE(checked.is_ok()) << checked.message();
  // The converter moved Unsqueeze's axes to an input.
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "Unsqueeze") {
      EXPECT_FALSE(n.has_attr("axes"));
      EXPECT_EQ(n.inputs.size(), 2u);
    }
  }

  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<float> x(24);
  for (float& v : x) v = d(rng);
  // The rank-unknown branch is fed [3,2,4]: Softmax(axis=2) over the last 4 at opset 11.
  const std::vector<int64_t> reshaped = {3, 2, 4};
  auto backend = runtime::make_cpu_backend();
  auto exec = runtime::Executor::create(m, *backend);
  ASSERT_TRUE(exec.has_value()) << exec.status().message();
  runtime::NamedTensors in;
  in.emplace_back("x", ir::make_tensor<float>({2, 3, 4}, std::span<const float>(x)));
  in.emplace_back("shape", ir::make_tensor<int64_t>({3}, std::span<const int64_t>(reshaped)));
  auto out = (*exec)->run(in);
  ASSERT_TRUE(out.has_value()) << out.status().message();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ((*out)[0].second.shape(), (ir::Shape{1, 2, 3, 4}));
  expect_close((*out)[0].second, coerced(x, {2, 3, 4}, 1, Kind::kSoftmax), "Softmax axis 1");
  expect_close((*out)[1].second, coerced(x, {2, 3, 4}, 2, Kind::kLogSoftmax), "LogSoftmax axis -1");
  expect_close((*out)[2].second, coerced(x, {2, 3, 4}, 0, Kind::kHardmax), "Hardmax axis 0");
  EXPECT_EQ((*out)[3].second.shape(), (ir::Shape{3, 2, 4}));
  expect_close((*out)[3].second, coerced(x, reshaped, 2, Kind::kSoftmax),
               "Softmax of unknown rank");
}

TEST(ConvertOpset, SameOpsetIsANoOp) {
  ir::Model m = opset11_model();
  const size_t nodes = m.graph.nodes.size();
  ASSERT_TRUE(convert_opset(m, 11).is_ok());
  EXPECT_EQ(m.graph.nodes.size(), nodes);
  EXPECT_EQ(m.opset(), 11);
}

TEST(ConvertOpset, ConverterFailureIsOneLineError) {
  ir::Model m = opset11_model();
  m.graph.nodes.push_back(ir::make_node("NoSuchOp", "bogus", {"x"}, {"z"}));
  Status s = convert_opset(m, 13);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("opset 11 to 13"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ptq::onnx
