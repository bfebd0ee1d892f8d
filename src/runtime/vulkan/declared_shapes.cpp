// Shapes without running the model. ONNX shape inference at load time (src/onnx) gives most
// values a type whose dims are numbers or symbols shared with the graph inputs ("batch"); once
// the fed inputs bind those symbols, such a type is a concrete shape. A node whose output type
// inference left open (a Slice whose bounds are computed from shapes, say) runs alone on the
// CPU with stand-in inputs of the right shapes: static_values() has already refused models
// where an output shape could depend on non-static values. Anything else open is "not
// settled", and the executor runs the batch on the CPU as before: no shape is ever guessed.
#include "declared_shapes.h"
#include "host_values.h"
#include "ptq/ir/owned_copy.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace ptq::vulkan {

namespace {

using Bindings = std::map<std::string, int64_t>;

// Binds the symbols of one declared input to the fed tensor's dims; "" or why not.
std::string bind_input(const ir::ValueInfo& declared, const ir::Tensor& fed, Bindings& b) {
  if (declared.type.dtype != fed.dtype())
    return fmt::format("input '{}' is fed as another dtype", declared.name);
  if (!declared.type.dims || declared.type.dims->size() != fed.shape().size()) {
    return fmt::format("input '{}' has no declared shape of the fed rank", declared.name);
  }
  for (size_t d = 0; d < fed.shape().size(); ++d) {
    const ir::Dim& dim = (*declared.type.dims)[d];
    const int64_t size = fed.shape()[d];
    if (dim.known() && dim.value != size)
      return fmt::format("input '{}' dim {} differs", declared.name, d);
    if (dim.known() || dim.param.empty()) continue;
    auto [it, fresh] = b.try_emplace(dim.param, size);
    if (!fresh && it->second != size) return fmt::format("symbol '{}' is fed two sizes", dim.param);
  }
  return "";
}

// The concrete shape of a declared type under `b`, or nullopt.
std::optional<ir::Shape> concrete(const ir::TypeInfo& type, const Bindings& b) {
  if (!type.dims || type.dtype == ir::DType::kUndefined) return std::nullopt;
  ir::Shape shape;
  for (const ir::Dim& dim : *type.dims) {
    if (dim.known()) {
      shape.push_back(dim.value);
      continue;
    }
    auto it = dim.param.empty() ? b.end() : b.find(dim.param);
    if (it == b.end()) return std::nullopt;
    shape.push_back(it->second);
  }
  return shape;
}

bool reads_shape_only(const ir::Node& node) {
  return node.in_default_domain() && (node.op_type == "Shape" || node.op_type == "Size");
}

// A non-static input of a node run for its output shapes: zeros of the value's shape (ones
// for an integer divisor), from zero pages that reading does not even make resident.
ir::Tensor stand_in(const ir::Node& node, size_t slot, const ValueFacts& fact) {
  ir::Tensor t(fact.dtype, fact.shape);
  const bool divisor = slot == 1 && (node.op_type == "Div" || node.op_type == "Mod");
  if (divisor && !ir::is_float(fact.dtype) && fact.dtype != ir::DType::kString) {
    const size_t size = ir::dtype_size(fact.dtype);
    auto* bytes = static_cast<std::byte*>(t.raw());
    for (int64_t i = 0; i < t.size(); ++i)
      bytes[static_cast<size_t>(i) * size] = std::byte{1};  // little-endian 1
  }
  return t;
}

struct Folder {
  const ir::Graph& graph;
  int64_t opset;
  runtime::Backend& cpu;
  ShapeFacts& out;

  // One input of a static node: a constant, a folded value, or (for Shape/Size) a tensor that
  // has the value's shape and no data.
  std::optional<ir::Tensor> input(const ir::Node& node, const std::string& name) const {
    if (const ir::Tensor* init = graph.initializer(name)) return init->view();
    if (auto f = out.folded.find(name); f != out.folded.end()) return f->second.view();
    auto fact = out.facts.find(name);
    if (!reads_shape_only(node) || fact == out.facts.end()) return std::nullopt;
    return ir::Tensor::borrow(fact->second.dtype, fact->second.shape,
                              static_cast<const void*>(nullptr));
  }

  // Runs a node whose declared output types are not settled on stand-in inputs: by the rules
  // of static_values(), its output shapes follow from its inputs' shapes and static values
  // alone. False (with `why`) when an input is unknown or the kernel refuses.
  bool run_on_stand_ins(const ir::Node& node, std::string& why) {
    std::vector<ir::Tensor> held(node.inputs.size());
    std::vector<const ir::Tensor*> ins(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& name = node.inputs[i];
      if (name.empty()) continue;
      if (std::optional<ir::Tensor> t = input(node, name)) {
        held[i] = std::move(*t);
      } else if (auto fact = out.facts.find(name); fact != out.facts.end()) {
        held[i] = stand_in(node, i, fact->second);
      } else {
        why = fmt::format("{}: input '{}' is not settled", node.label(), name);
        return false;
      }
      ins[i] = &held[i];
    }
    std::vector<ir::Tensor> outs(node.outputs.size());
    HostAllocator alloc;
    runtime::KernelContext kc{node, opset, 1, &graph};
    auto kernel = cpu.create_kernel(kc);
    const Status ran = kernel.has_value() ? (*kernel)->run(ins, outs, alloc) : kernel.status();
    if (!ran.is_ok()) {
      why = ran.message().starts_with(node.label())
                ? ran.message()
                : fmt::format("{}: {}", node.label(), ran.message());
      return false;
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty() || outs[i].empty()) continue;
      out.facts[node.outputs[i]] = ValueFacts{outs[i].dtype(), outs[i].shape(), true};
    }
    return true;
  }

  // Runs a static node on the CPU; false (with `why`) when an input is unavailable.
  Expected<bool> run(const ir::Node& node, std::string& why) {
    std::vector<ir::Tensor> held(node.inputs.size());
    std::vector<const ir::Tensor*> ins(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      std::optional<ir::Tensor> t = input(node, node.inputs[i]);
      if (!t) {
        why = fmt::format("{}: input '{}' is not settled", node.label(), node.inputs[i]);
        return false;
      }
      held[i] = std::move(*t);
      ins[i] = &held[i];
    }
    runtime::KernelContext kc{node, opset, 1, &graph};
    PTQ_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Kernel> kernel, cpu.create_kernel(kc));
    std::vector<ir::Tensor> outs(node.outputs.size());
    HostAllocator alloc;
    PTQ_RETURN_IF_ERROR(kernel->run(ins, outs, alloc));
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i].empty() || outs[i].empty()) continue;
      out.facts[node.outputs[i]] = ValueFacts{outs[i].dtype(), outs[i].shape(), true};
      out.folded.emplace(node.outputs[i], ir::owned_copy(outs[i]));
    }
    return true;
  }
};

// Declared types by value name (the lists find_value_info reads, first match wins).
std::unordered_map<std::string_view, const ir::ValueInfo*> declared_types(const ir::Graph& graph) {
  std::unordered_map<std::string_view, const ir::ValueInfo*> m;
  for (const auto* list : {&graph.inputs, &graph.outputs, &graph.value_info, &graph.inferred}) {
    for (const ir::ValueInfo& v : *list) m.try_emplace(v.name, &v);
  }
  return m;
}

// Ops whose output shape depends on input values, not just input shapes: a program recorded
// for one batch would be wrong for the next.
bool data_dependent_shape(const ir::Node& node) {
  static const std::set<std::string> kOps = {"NonZero", "Unique", "NonMaxSuppression", "Compress",
                                             "If", "Loop", "Scan"};
  return node.in_default_domain() && kOps.count(node.op_type) > 0;
}

// Inputs (by index, from 1) that define an op's output shape.
bool shape_input(const ir::Node& node, size_t i) {
  static const std::set<std::string> kFromOne = {"Reshape", "Expand", "Tile", "Slice", "Pad",
                                                 "Resize", "Upsample", "TopK", "OneHot", "Split",
                                                 "Squeeze", "Unsqueeze", "ReduceSum", "ReduceMean",
                                                 "ReduceMax", "ReduceMin", "ReduceProd",
                                                 "ReduceL1", "ReduceL2", "ReduceLogSum",
                                                 "ReduceLogSumExp", "ReduceSumSquare"};
  static const std::set<std::string> kAll = {"ConstantOfShape", "Range"};
  if (!node.in_default_domain()) return false;
  if (kAll.count(node.op_type)) return true;
  return i >= 1 && kFromOne.count(node.op_type) > 0;
}

bool random_op(const ir::Node& node) {
  return node.op_type.starts_with("Random") || node.op_type == "Multinomial" ||
         node.op_type == "Bernoulli";
}

}  // namespace

Expected<std::unordered_set<std::string>> static_values(const ir::Graph& graph) {
  std::unordered_set<std::string> s;
  for (const ir::Initializer& i : graph.initializers()) s.insert(i.name);
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::topological_order(graph));
  for (size_t n : order) {
    const ir::Node& node = graph.nodes[n];
    if (data_dependent_shape(node)) {
      return invalid_input("{}: the Vulkan executor needs shapes that follow from the input "
                           "shapes, and this op's output shape depends on values", node.label());
    }
    bool all = !node.inputs.empty() || node.op_type == "Constant";
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const std::string& in = node.inputs[i];
      if (in.empty()) continue;
      const bool st = s.count(in) > 0;
      if (!st && shape_input(node, i)) {
        return invalid_input(
            "{}: the Vulkan executor needs shapes that follow from the input "
            "shapes, and input '{}' of this op is computed from values",
            node.label(), in);
      }
      all = all && st;
    }
    const bool from_shapes =
        node.in_default_domain() && (node.op_type == "Shape" || node.op_type == "Size");
    if ((all || from_shapes) && !random_op(node)) {
      for (const std::string& o : node.outputs) {
        if (!o.empty()) s.insert(o);
      }
    }
  }
  return s;
}

Expected<std::optional<ShapeFacts>> declared_shape_facts(
    const ir::Graph& graph, int64_t opset, const runtime::NamedTensors& inputs,
    const std::unordered_set<std::string>& statics, runtime::Backend& cpu, std::string& why) {
  const std::optional<ShapeFacts> kUnsettled;
  ShapeFacts out;
  Bindings bindings;
  for (const ir::ValueInfo* in : graph.real_inputs()) {
    auto fed = std::find_if(inputs.begin(), inputs.end(),
                            [&](const auto& p) { return p.first == in->name; });
    if (fed == inputs.end()) {
      why = fmt::format("input '{}' is not fed", in->name);
      return kUnsettled;
    }
    why = bind_input(*in, fed->second, bindings);
    if (!why.empty()) return kUnsettled;
    out.facts[in->name] = ValueFacts{fed->second.dtype(), fed->second.shape(), true};
  }
  const auto types = declared_types(graph);
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::topological_order(graph));
  Folder folder{graph, opset, cpu, out};
  for (size_t n : order) {
    const ir::Node& node = graph.nodes[n];
    const bool is_static =
        std::any_of(node.outputs.begin(), node.outputs.end(),
                    [&](const std::string& o) { return !o.empty() && statics.count(o); });
    if (is_static) {
      PTQ_ASSIGN_OR_RETURN(bool ran, folder.run(node, why));
      if (!ran) return kUnsettled;
      continue;
    }
    bool settled = true;
    for (const std::string& o : node.outputs) {
      if (o.empty()) continue;
      auto t = types.find(o);
      std::optional<ir::Shape> shape =
          t == types.end() ? std::nullopt : concrete(t->second->type, bindings);
      if (!shape) {
        settled = false;
        break;
      }
      out.facts[o] = ValueFacts{t->second->type.dtype, std::move(*shape), true};
    }
    if (settled) continue;
    if (!folder.run_on_stand_ins(node, why)) return kUnsettled;
  }
  return std::optional<ShapeFacts>(std::move(out));
}

}  // namespace ptq::vulkan
