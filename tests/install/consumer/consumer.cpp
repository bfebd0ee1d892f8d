// A program embedding the installed ptqkit library as a user would: it loads a float model,
// calibrates it on samples it holds in memory (its own data::SampleSource, no files), writes
// the Q/DQ model, and checks what it wrote: a valid ONNX model with Q/DQ nodes whose outputs
// follow the float model's. Usage: consumer MODEL.onnx OUT.onnx
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <ptq/calibration.h>
#include <ptq/data.h>
#include <ptq/onnx.h>
#include <ptq/planner.h>
#include <ptq/runtime.h>
#include <ptq/version.h>

namespace {

// Normally distributed samples, fixed seed: a program's own data.
class MemorySamples : public ptq::data::SampleSource {
 public:
  MemorySamples(ptq::ir::Shape sample, int64_t count) : sample_(std::move(sample)), count_(count) {
    std::mt19937 gen(7);
    std::normal_distribution<float> normal;
    values_.resize(static_cast<size_t>(count * ptq::ir::num_elements(sample_)));
    for (float& v : values_) v = normal(gen);
  }
  std::string name() const override { return "memory"; }
  ptq::ir::DType dtype() const override { return ptq::ir::DType::kFloat32; }
  ptq::ir::Shape sample_shape() const override { return sample_; }
  int64_t count() const override { return count_; }
  ptq::Status read(int64_t i, void* dst) const override {
    const size_t n = static_cast<size_t>(ptq::ir::num_elements(sample_));
    std::memcpy(dst, values_.data() + static_cast<size_t>(i) * n, n * sizeof(float));
    return {};
  }

 private:
  ptq::ir::Shape sample_;
  int64_t count_;
  std::vector<float> values_;
};

// The model's only input, without its batch axis; every other dim must be fixed.
ptq::Expected<ptq::ir::Shape> sample_shape(const ptq::ir::Model& model) {
  const auto inputs = model.graph.real_inputs();
  if (inputs.size() != 1 || !inputs[0]->type.dims) {
    return ptq::invalid_input("the consumer feeds models with one input of known rank");
  }
  ptq::ir::Shape shape;
  const auto& dims = *inputs[0]->type.dims;
  for (size_t i = 1; i < dims.size(); ++i) {
    if (!dims[i].known()) return ptq::invalid_input("input dim {} is not fixed", i);
    shape.push_back(dims[i].value);
  }
  return shape;
}

ptq::Expected<ptq::runtime::NamedTensors> run_once(const ptq::ir::Model& model,
                                                   const ptq::data::NamedTensors& batch) {
  auto backend = ptq::runtime::make_cpu_backend();
  PTQ_ASSIGN_OR_RETURN(auto executor, ptq::runtime::Executor::create(model, *backend));
  return executor->run(batch);
}

double cosine(const ptq::ir::Tensor& a, const ptq::ir::Tensor& b) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return ab / std::sqrt(aa * bb);
}

int64_t count_ops(const ptq::ir::Model& model, const std::string& op) {
  int64_t n = 0;
  for (const auto& node : model.graph.nodes) n += node.op_type == op;
  return n;
}

ptq::Status quantize_and_check(const std::string& model_path, const std::string& out_path) {
  PTQ_ASSIGN_OR_RETURN(ptq::ir::Model model, ptq::onnx::load_model(model_path));
  PTQ_ASSIGN_OR_RETURN(ptq::ir::Shape shape, sample_shape(model));
  const MemorySamples samples(shape, 16);
  ptq::data::DatasetSpec spec;
  spec.sources.push_back({.input = "", .path = {}, .samples = &samples});
  spec.batch = 4;
  PTQ_ASSIGN_OR_RETURN(ptq::data::Dataset dataset, ptq::data::Dataset::open(spec));
  PTQ_RETURN_IF_ERROR(dataset.bind(model.graph));

  auto backend = ptq::runtime::make_cpu_backend();
  PTQ_ASSIGN_OR_RETURN(auto executor, ptq::runtime::Executor::create(model, *backend));
  ptq::calibration::CalibrationOptions options;
  PTQ_ASSIGN_OR_RETURN(auto table,
                       ptq::calibration::calibrate(model, *executor, dataset, options));
  PTQ_ASSIGN_OR_RETURN(ptq::ir::Model quantized, ptq::onnx::load_model(model_path));
  PTQ_ASSIGN_OR_RETURN(auto result, ptq::planner::quantize(quantized, table, options.plan));
  PTQ_RETURN_IF_ERROR(ptq::onnx::save_model(quantized, out_path));

  PTQ_ASSIGN_OR_RETURN(ptq::ir::Model written, ptq::onnx::load_model(out_path));
  PTQ_RETURN_IF_ERROR(ptq::onnx::check_model(written));
  const int64_t q = count_ops(written, "QuantizeLinear");
  if (q == 0 || q != result.quantize_nodes) {
    return ptq::runtime_error("{} holds {} QuantizeLinear nodes; quantize() inserted {}", out_path,
                              q, result.quantize_nodes);
  }
  PTQ_ASSIGN_OR_RETURN(auto batch, dataset.batch(0));
  PTQ_ASSIGN_OR_RETURN(auto expected, run_once(model, batch));
  PTQ_ASSIGN_OR_RETURN(auto got, run_once(written, batch));
  const double c = cosine(expected[0].second, got[0].second);
  std::printf("ptqkit %s: %s: %lld QuantizeLinear, %lld DequantizeLinear, cosine %.4f\n",
              PTQ_VERSION_STRING, out_path.c_str(), static_cast<long long>(q),
              static_cast<long long>(count_ops(written, "DequantizeLinear")), c);
  if (!(c > 0.95)) return ptq::runtime_error("INT8 output's cosine to FP32 is only {:.4f}", c);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer MODEL.onnx OUT.onnx\n");
    return 2;
  }
  const ptq::Status s = quantize_and_check(argv[1], argv[2]);
  if (!s.is_ok()) {
    std::fprintf(stderr, "consumer: error: %s\n", s.message().c_str());
    return s.exit_code();
  }
  return 0;
}
