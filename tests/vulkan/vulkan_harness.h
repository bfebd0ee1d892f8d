// Test harness for the Vulkan backend: builds one-node models in code, runs them through the
// CPU executor (reference kernels: the truth) and the Vulkan executor (strict: every node on
// the GPU), and compares the outputs. Runs on whatever device 0 is (lavapipe in CI).
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/node_builder.h"
#include "common/random.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/vulkan.h"

namespace ptq::vulkan::testing {

using ptq::testing::attr_float;
using ptq::testing::attr_int;
using ptq::testing::attr_ints;
using ptq::testing::attr_string;
using ptq::testing::random_tensor;

inline ir::Tensor int64_tensor(ir::Shape shape, std::vector<int64_t> values) {
  return ir::make_tensor<int64_t>(std::move(shape), std::span<const int64_t>(values));
}

// A one-node model: `feeds` become graph inputs (fed at run time), `constants` initializers.
// Input names are listed in node order; "" marks an omitted optional input.
struct OneNode {
  std::string op;
  std::vector<ir::Attribute> attrs;
  std::vector<std::pair<std::string, ir::Tensor>> feeds;
  std::vector<std::pair<std::string, ir::Tensor>> constants;
  std::vector<std::string> inputs;  // node input order
  size_t outputs = 1;
  int64_t opset = 17;
};

inline ir::Model build_model(const OneNode& spec) {
  ir::Model m;
  m.set_opset("", spec.opset);
  ir::Node n;
  n.op_type = spec.op;
  n.name = "node";
  n.inputs = spec.inputs;
  for (size_t i = 0; i < spec.outputs; ++i) n.outputs.push_back(fmt::format("y{}", i));
  n.attributes = spec.attrs;
  m.graph.nodes.push_back(n);
  for (const auto& [name, t] : spec.feeds) {
    ir::ValueInfo vi;
    vi.name = name;
    vi.type.dtype = t.dtype();
    m.graph.inputs.push_back(vi);
  }
  for (const auto& [name, t] : spec.constants) m.graph.set_initializer(name, t);
  for (size_t i = 0; i < spec.outputs; ++i) {
    ir::ValueInfo vi;
    vi.name = fmt::format("y{}", i);
    m.graph.outputs.push_back(vi);
  }
  return m;
}

inline runtime::NamedTensors feeds_of(const OneNode& spec) {
  runtime::NamedTensors f;
  for (const auto& [name, t] : spec.feeds) f.emplace_back(name, t.view());
  return f;
}

inline double to_double(const ir::Tensor& t, int64_t i) { return t.as_double(i); }

// Max |a - b| / (max |b| + floor) over all elements, and exact dtype/shape equality.
inline void expect_close(const ir::Tensor& got, const ir::Tensor& want, double tol,
                         const std::string& what, double floor = 1e-3) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  double scale = floor, worst = 0.0;
  int64_t worst_i = -1;
  for (int64_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::fabs(to_double(want, i)));
  for (int64_t i = 0; i < want.size(); ++i) {
    const double a = to_double(got, i), b = to_double(want, i);
    if (std::isnan(b) && std::isnan(a)) continue;
    const double d = std::fabs(a - b);
    if (!(d <= worst)) {
      worst = std::isnan(d) ? 1e300 : d;
      worst_i = i;
    }
  }
  EXPECT_LE(worst / scale, tol) << what << ": worst element " << worst_i << " got "
                                << (worst_i >= 0 ? to_double(got, worst_i) : 0.0) << " want "
                                << (worst_i >= 0 ? to_double(want, worst_i) : 0.0)
                                << " (scale " << scale << ")";
}

// Relative L2 error ||a - b|| / ||b||.
inline double rel_l2(const ir::Tensor& a, const ir::Tensor& b) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < b.size(); ++i) {
    const double d = to_double(a, i) - to_double(b, i);
    num += d * d;
    den += to_double(b, i) * to_double(b, i);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline VulkanOptions strict_options() {
  VulkanOptions o;
  o.strict = true;
  o.threads = 2;
  return o;
}

// One case of a batch: a one-node model, its tolerance and a name for messages.
struct Case {
  OneNode spec;
  double tol = 1e-5;
  std::string what;
};

// Runs the cases on the CPU (reference kernels) and on Vulkan (strict: every node on the GPU)
// and compares each output. Cases of one opset share one model (each node with its own inputs
// and outputs), so one executor and one set of pipelines serve them all.
inline void check_cases(const std::vector<Case>& cases,
                        const VulkanOptions& options = strict_options()) {
  std::map<int64_t, std::vector<size_t>> by_opset;
  for (size_t k = 0; k < cases.size(); ++k) by_opset[cases[k].spec.opset].push_back(k);
  for (const auto& [opset, ks] : by_opset) {
    ir::Model model;
    model.set_opset("", opset);
    runtime::NamedTensors feeds;
    std::vector<std::pair<size_t, std::string>> outputs;  // case, output name
    for (size_t k : ks) {
      const OneNode& spec = cases[k].spec;
      const std::string p = fmt::format("k{}_", k);
      ir::Model one = build_model(spec);
      ir::Node n = one.graph.nodes[0];
      n.name = p + "node";
      for (std::string& in : n.inputs) {
        if (!in.empty()) in = p + in;
      }
      for (std::string& out : n.outputs) {
        out = p + out;
        ir::ValueInfo vi;
        vi.name = out;
        model.graph.outputs.push_back(vi);
        outputs.emplace_back(k, out);
      }
      model.graph.nodes.push_back(std::move(n));
      for (const auto& [name, t] : spec.feeds) {
        ir::ValueInfo vi;
        vi.name = p + name;
        vi.type.dtype = t.dtype();
        model.graph.inputs.push_back(vi);
        feeds.emplace_back(p + name, t.view());
      }
      for (const auto& [name, t] : spec.constants) model.graph.set_initializer(p + name, t);
    }
    auto cpu_backend = runtime::make_cpu_backend(runtime::CpuBackendOptions{true});
    auto cpu = runtime::Executor::create(model, *cpu_backend);
    ASSERT_TRUE(cpu.has_value()) << cpu.status().message();
    auto want = (*cpu)->run(feeds);
    ASSERT_TRUE(want.has_value()) << want.status().message();
    auto gpu = make_vulkan_executor(model, options);
    ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
    auto got = (*gpu)->run(feeds);
    ASSERT_TRUE(got.has_value()) << got.status().message();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      const Case& c = cases[outputs[i].first];
      expect_close((*got)[i].second, (*want)[i].second, c.tol,
                   c.what + " output " + outputs[i].second);
    }
  }
}

}  // namespace ptq::vulkan::testing
