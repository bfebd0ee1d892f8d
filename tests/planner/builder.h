// Small graphs built in code for the planner tests, and questions about the Q/DQ result.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/random.h"
#include "ptq/calib_cache.h"
#include "ptq/ir.h"
#include "ptq/ir/builders.h"
#include "ptq/planner.h"

namespace ptq::planner::testing {

class Builder {
 public:
  explicit Builder(uint32_t seed = 7) : rng_(seed) { model.set_opset("", 17); }

  ir::Model model;

  ir::Graph& g() { return model.graph; }

  void input(const std::string& name, ir::Shape shape) { g().inputs.push_back(info(name, shape)); }
  // An input with symbolic dims among its dims.
  void input_dims(const std::string& name, std::vector<ir::Dim> dims) {
    ir::ValueInfo v = info(name, {});
    v.type.dims = std::move(dims);
    g().inputs.push_back(std::move(v));
  }
  // Outputs without a shape are fine for the planner; onnx::checker wants one (checker_test).
  void output(const std::string& name, ir::Shape shape = {}) {
    g().outputs.push_back(info(name, shape));
  }
  // Declares a value's shape (so MatMul can tell M and N).
  void shape(const std::string& name, ir::Shape s) { g().value_info.push_back(info(name, s)); }

  // A random float32 initializer, N(0, sd).
  std::string weight(const std::string& name, ir::Shape shape, float sd = 0.5f) {
    g().set_initializer(name, random_tensor(shape, sd));
    return name;
  }
  // The same as a Constant node (as some exporters write every weight).
  std::string constant_node(const std::string& name, ir::Shape shape, float sd = 0.5f) {
    ir::Attribute a;
    a.name = "value";
    a.type = ir::AttrType::kTensor;
    a.t = random_tensor(shape, sd);
    ir::Node& n = node("Constant", name + "_node", {}, {name});
    n.attributes.push_back(std::move(a));
    return name;
  }

  ir::Tensor random_tensor(ir::Shape shape, float sd) {
    return ptq::testing::normal_tensor(rng_, std::move(shape), sd);
  }

  ir::Node& node(const std::string& op, const std::string& name, std::vector<std::string> in,
                 std::vector<std::string> out) {
    ir::Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g().nodes.push_back(std::move(n));
    return g().nodes.back();
  }

  // Conv with a fresh random weight [cout, cin/group, k, k] and bias.
  ir::Node& conv(const std::string& name, const std::string& x, const std::string& y,
                 int64_t cin, int64_t cout, int64_t k = 3, int64_t group = 1, bool bias = true) {
    std::vector<std::string> in = {x, weight(name + ".weight", {cout, cin / group, k, k})};
    if (bias) in.push_back(weight(name + ".bias", {cout}, 0.1f));
    ir::Node& n = node("Conv", name, in, {y});
    if (group != 1) set_int(n, "group", group);
    if (k > 1) set_ints(n, "pads", {k / 2, k / 2, k / 2, k / 2});  // same size out
    return n;
  }

  // BatchNormalization with random statistics (var > 0).
  ir::Node& batchnorm(const std::string& name, const std::string& x, const std::string& y,
                      int64_t c) {
    weight(name + ".gamma", {c}, 0.5f);
    weight(name + ".beta", {c}, 0.2f);
    weight(name + ".mean", {c}, 0.3f);
    ir::Tensor var = random_tensor({c}, 0.5f);
    for (float& v : var.span<float>()) v = v * v + 0.1f;
    g().set_initializer(name + ".var", std::move(var));
    return node("BatchNormalization", name, {x, name + ".gamma", name + ".beta", name + ".mean",
                                             name + ".var"}, {y});
  }

  static void set_int(ir::Node& n, const std::string& key, int64_t v) {
    n.set_attr(ir::int_attr(key, v));
  }
  static void set_ints(ir::Node& n, const std::string& key, std::vector<int64_t> v) {
    n.set_attr(ir::ints_attr(key, std::move(v)));
  }

  // A range for every float value that is not a constant: amax in [0.5, 4], min/max around it.
  calib::CalibrationTable table(std::vector<std::string> skip = {}) {
    calib::CalibrationTable t;
    t.method = "minmax";
    std::uniform_real_distribution<double> dist(0.5, 4.0);
    std::vector<std::string> values;
    for (const ir::ValueInfo& v : g().inputs) values.push_back(v.name);
    for (const ir::Node& n : g().nodes) {
      if (n.op_type == "Constant") continue;
      for (const std::string& o : n.outputs) values.push_back(o);
    }
    for (const std::string& v : values) {
      if (std::find(skip.begin(), skip.end(), v) != skip.end()) continue;
      calib::TensorRange r;
      r.amax = dist(rng_);
      r.min = -r.amax * 0.5;
      r.max = r.amax;
      r.count = 100;
      t.tensors[v] = r;
    }
    return t;
  }

 private:
  static ir::ValueInfo info(const std::string& name, const ir::Shape& shape) {
    ir::ValueInfo v;
    v.name = name;
    v.type.dtype = ir::DType::kFloat32;
    if (!shape.empty()) {
      std::vector<ir::Dim> dims;
      for (int64_t d : shape) dims.push_back(ir::Dim::of(d));
      v.type.dims = dims;
    }
    return v;
  }
  std::mt19937 rng_;
};

// ---- Models shared by several tests ----------------------------------------------------------

//   x ─► conv1 ─► bn1 ─► relu1 ─► conv2 ─► bn2 ─► add ─► relu2 ─► y
//   │                                              ▲
//   └──────────────── skip ────────────────────────┘
inline Builder resnet_block() {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.conv("conv1", "x", "c1", 16, 16);
  b.batchnorm("bn1", "c1", "n1", 16);
  b.node("Relu", "relu1", {"n1"}, {"r1"});
  b.conv("conv2", "r1", "c2", 16, 16);
  b.batchnorm("bn2", "c2", "n2", 16);
  b.node("Add", "add", {"n2", "x"}, {"s"});
  b.node("Relu", "relu2", {"s"}, {"y"});
  b.output("y", {1, 16, 8, 8});
  return b;
}

//   x ─► conv1 ─► r1 ─► conv2 ─► r2 ─► conv3 ─► r3 ─► GlobalAveragePool ─► Flatten ─► fc ─► y
inline Builder chain() {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  std::string in = "x";
  for (int i = 1; i <= 3; ++i) {
    const std::string c = "c" + std::to_string(i);
    const std::string r = "r" + std::to_string(i);
    b.conv("conv" + std::to_string(i), in, c, 16, 16);
    b.node("Relu", "relu" + std::to_string(i), {c}, {r});
    in = r;
  }
  b.node("GlobalAveragePool", "gap", {"r3"}, {"g"});
  b.node("Flatten", "flatten", {"g"}, {"f"});
  ir::Node& fc = b.node("Gemm", "fc", {"f", b.weight("fc.w", {10, 16}), b.weight("fc.b", {10})},
                        {"y"});
  Builder::set_int(fc, "transB", 1);
  b.output("y", {1, 10});
  return b;
}

// ---- Questions about a model after apply() ----------------------------------------------------

inline int count_op(const ir::Model& m, const std::string& op) {
  return static_cast<int>(std::count_if(m.graph.nodes.begin(), m.graph.nodes.end(),
                                        [&](const ir::Node& n) { return n.op_type == op; }));
}

inline const ir::Node* find_node(const ir::Model& m, const std::string& name) {
  for (const ir::Node& n : m.graph.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

inline const ir::Node* producer_of(const ir::Model& m, const std::string& value) {
  for (const ir::Node& n : m.graph.nodes) {
    if (std::find(n.outputs.begin(), n.outputs.end(), value) != n.outputs.end()) return &n;
  }
  return nullptr;
}

// The DequantizeLinear feeding input `slot` of node `name`, or null when it reads a float value.
inline const ir::Node* dq_at(const ir::Model& m, const std::string& name, size_t slot) {
  const ir::Node* n = find_node(m, name);
  if (!n || slot >= n->inputs.size()) return nullptr;
  const ir::Node* p = producer_of(m, n->inputs[slot]);
  return p && p->op_type == "DequantizeLinear" ? p : nullptr;
}

// The float tensor quantized on the way into (name, slot): the Q's input for activations, the
// float weight for weights_float; the int8 initializer's name for stored weights.
inline std::string quantized_source(const ir::Model& m, const std::string& name, size_t slot) {
  const ir::Node* dq = dq_at(m, name, slot);
  if (!dq) return "";
  const ir::Node* q = producer_of(m, dq->inputs[0]);
  if (q && q->op_type == "QuantizeLinear") return q->inputs[0];
  return dq->inputs[0];
}

// Every node reading `value`.
inline std::vector<const ir::Node*> readers(const ir::Model& m, const std::string& value) {
  std::vector<const ir::Node*> out;
  for (const ir::Node& n : m.graph.nodes) {
    if (std::find(n.inputs.begin(), n.inputs.end(), value) != n.inputs.end()) out.push_back(&n);
  }
  return out;
}

inline float scalar(const ir::Model& m, const std::string& init) {
  const ir::Tensor* t = m.graph.initializer(init);
  EXPECT_NE(t, nullptr) << init;
  return t ? static_cast<float>(t->as_double(0)) : NAN;
}

// Runs plan + apply, failing the test on error.
inline QuantizeResult quantize_ok(ir::Model& m, const calib::CalibrationTable& t,
                                  const PlanOptions& o = {}) {
  auto r = quantize(m, t, o);
  EXPECT_TRUE(r.has_value()) << r.status().message();
  return r.has_value() ? *r : QuantizeResult{};
}

}  // namespace ptq::planner::testing
