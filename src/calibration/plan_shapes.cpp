// Input shapes for planning (calibration.h, "input shapes for planning"): merge the sources,
// bind and infer, and measure what inference cannot follow by one run of the model.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "ptq/calibration.h"
#include "ptq/runtime.h"

namespace ptq::calibration {

namespace {

std::string dims_str(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : std::to_string(d));
  return fmt::format("{}", fmt::join(parts, ","));
}

// The sources joined per input, in order: a later source fills only the dims still open.
Expected<onnx::InputShapes> merge(const std::vector<ShapeSource>& sources) {
  std::map<std::string, std::pair<std::vector<int64_t>, std::string>> merged;
  onnx::InputShapes order;
  for (const ShapeSource& src : sources) {
    for (const auto& [name, dims] : src.shapes) {
      auto [it, inserted] = merged.try_emplace(name, dims, src.label);
      if (inserted) {
        order.emplace_back(name, dims);
        continue;
      }
      std::vector<int64_t>& have = it->second.first;
      bool agree = have.size() == dims.size();
      for (size_t d = 0; agree && d < dims.size(); ++d) {
        agree = have[d] < 0 || dims[d] < 0 || have[d] == dims[d];
      }
      if (!agree) {
        return invalid_input("input '{}': {} gives shape {} but {} gave {}", name, src.label,
                             dims_str(dims), it->second.second, dims_str(have));
      }
      for (size_t d = 0; d < dims.size(); ++d) {
        if (have[d] < 0) have[d] = dims[d];
      }
    }
  }
  for (auto& [name, dims] : order) dims = merged.at(name).first;
  return order;
}

// Records the shapes of the tensors it is asked about.
class ShapeRecorder final : public runtime::Observer {
 public:
  explicit ShapeRecorder(std::vector<std::string> tensors) : tensors_(std::move(tensors)) {}
  std::vector<std::string> wanted(const ir::Graph& /*graph*/) override { return tensors_; }
  Status observe(const runtime::ObservedTensor& t) override {
    shapes_[t.name] = t.shape;
    return Status::ok();
  }
  const std::map<std::string, ir::Shape>& shapes() const { return shapes_; }

 private:
  std::vector<std::string> tensors_;
  std::map<std::string, ir::Shape> shapes_;
};

// Zero inputs of the bound shapes, or nullopt when some input's shape is still open.
std::optional<runtime::NamedTensors> zero_inputs(const ir::Model& model,
                                                 const onnx::ValueDims& dims) {
  runtime::NamedTensors inputs;
  for (const ir::ValueInfo* v : model.graph.real_inputs()) {
    auto it = dims.find(v->name);
    if (it == dims.end()) return std::nullopt;
    ir::Shape shape;
    for (const ir::Dim& d : it->second) {
      if (!d.known()) return std::nullopt;
      shape.push_back(d.value);
    }
    const ir::DType dtype =
        v->type.dtype == ir::DType::kUndefined ? ir::DType::kFloat32 : v->type.dtype;
    inputs.emplace_back(v->name, ir::Tensor(dtype, std::move(shape)));
  }
  return inputs;
}

// Runs the model once on zeros of the bound shapes and adds the measured shapes of the tensors
// whose dims are still open. Best effort: a model that cannot run here leaves them open.
void measure(const ir::Model& model, const std::vector<planner::UnresolvedDim>& open,
             runtime::Backend& backend, int threads, onnx::ValueDims& dims) {
  std::optional<runtime::NamedTensors> inputs = zero_inputs(model, dims);
  if (!inputs) return;
  std::set<std::string> names;
  for (const planner::UnresolvedDim& d : open) names.insert(d.tensor);
  ShapeRecorder recorder({names.begin(), names.end()});
  runtime::ExecutorOptions eo;
  eo.threads = threads;
  Expected<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::create(model, backend, eo);
  if (!executor) return;
  runtime::Observer* observers[] = {&recorder};
  if (!(*executor)->run(*inputs, observers)) return;
  for (const auto& [name, shape] : recorder.shapes()) {
    std::vector<ir::Dim>& d = dims[name];
    d.clear();
    for (int64_t v : shape) d.push_back(ir::Dim::of(v));
  }
}

// The source's shapes for inputs this model has; a checked source naming another is an error.
Expected<onnx::InputShapes> model_inputs_only(const ir::Model& model, const ShapeSource& src) {
  std::set<std::string> inputs;
  for (const ir::ValueInfo* v : model.graph.real_inputs()) inputs.insert(v->name);
  onnx::InputShapes out;
  for (const auto& s : src.shapes) {
    if (inputs.count(s.first)) {
      out.push_back(s);
    } else if (src.checked) {
      return invalid_input("{}: '{}' is not an input of the model (inputs: {})", src.label, s.first,
                           fmt::join(inputs, ", "));
    }
  }
  return out;
}

}  // namespace

Status resolve_plan_shapes(const ir::Model& model, const std::vector<ShapeSource>& sources,
                           runtime::Backend& backend, int threads, planner::PlanOptions& plan) {
  plan.require_shapes = true;
  std::vector<ShapeSource> fitting = sources;
  for (ShapeSource& s : fitting) {
    PTQ_ASSIGN_OR_RETURN(s.shapes, model_inputs_only(model, s));
  }
  PTQ_ASSIGN_OR_RETURN(onnx::InputShapes shapes, merge(fitting));
  PTQ_ASSIGN_OR_RETURN(std::vector<planner::UnresolvedDim> open,
                       planner::unresolved_dims(model, plan));
  if (open.empty()) return Status::ok();
  if (shapes.empty()) return Status::ok();
  PTQ_ASSIGN_OR_RETURN(plan.value_dims, onnx::bind_input_shapes(model, shapes));
  PTQ_ASSIGN_OR_RETURN(open, planner::unresolved_dims(model, plan));
  if (!open.empty()) measure(model, open, backend, threads, plan.value_dims);
  return Status::ok();
}

onnx::InputShapes fed_shapes(const data::Dataset& dataset) {
  onnx::InputShapes out;
  const int64_t batch = std::min(dataset.batch_size(), dataset.size());
  for (const data::InputInfo& in : dataset.inputs()) {
    out.emplace_back(in.name, data::batch_shape(in, batch));
  }
  return out;
}

}  // namespace ptq::calibration
