// Metrics of a variant against the FP32 reference outputs, and the Evaluator holding them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

#include "ptq/sensitivity.h"

namespace ptq::sensitivity {

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::kTop1: return "top1";
    case Metric::kSqnr: return "sqnr";
    case Metric::kCosine: return "cosine";
    case Metric::kMse: return "mse";
  }
  return "?";
}

std::string_view mode_name(Mode m) { return m == Mode::kOnly ? "only" : "all-but"; }

Expected<Metric> parse_metric(std::string_view name) {
  for (Metric m : {Metric::kTop1, Metric::kSqnr, Metric::kCosine, Metric::kMse}) {
    if (metric_name(m) == name) return m;
  }
  return usage_error("unknown metric '{}' (choose top1, sqnr, cosine or mse)", name);
}

Expected<Mode> parse_mode(std::string_view name) {
  if (name == "only") return Mode::kOnly;
  if (name == "all-but") return Mode::kAllBut;
  return usage_error("unknown mode '{}' (choose only or all-but)", name);
}

bool higher_is_better(Metric m) { return m != Metric::kMse; }

namespace {

// Sum of squared differences of two float32 tensors of one shape.
Expected<double> sum_squared_error(const ir::Tensor& r, const ir::Tensor& t) {
  if (r.dtype() != ir::DType::kFloat32 || t.dtype() != ir::DType::kFloat32 ||
      r.shape() != t.shape()) {
    return invalid_input("mse needs float32 outputs of one shape, got {} and {}",
                         ir::shape_str(r.shape()), ir::shape_str(t.shape()));
  }
  double s = 0.0;
  const float* a = r.data<float>();
  const float* b = t.data<float>();
  for (int64_t i = 0; i < r.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    s += d * d;
  }
  return s;
}

}  // namespace

Status Evaluator::Tally::add(const Evaluator& ev, int64_t batch,
                             const runtime::NamedTensors& outputs) {
  const runtime::NamedTensors& ref = ev.reference(batch);
  if (outputs.size() != ref.size()) {
    return runtime_error("variant gives {} outputs, the float model {}", outputs.size(),
                         ref.size());
  }
  if (agree_.empty()) {
    agree_.resize(ref.size());
    sse_.assign(ref.size(), 0.0);
    n_.assign(ref.size(), 0);
  }
  switch (ev.metric()) {
    case Metric::kTop1: {
      PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> top, metrics::argmax_rows(outputs.front().second));
      std::vector<int64_t> truth;
      if (ev.has_labels()) {
        const size_t first = static_cast<size_t>(batch * ev.data().batch_size());
        truth.assign(ev.labels_.begin() + static_cast<std::ptrdiff_t>(first),
                     ev.labels_.begin() + static_cast<std::ptrdiff_t>(first + top.size()));
      } else {
        PTQ_ASSIGN_OR_RETURN(truth, metrics::argmax_rows(ref.front().second));
      }
      for (size_t i = 0; i < top.size(); ++i) hits_ += top[i] == truth[i] ? 1 : 0;
      count_ += static_cast<int64_t>(top.size());
      break;
    }
    case Metric::kSqnr:
    case Metric::kCosine:
      for (size_t i = 0; i < ref.size(); ++i) {
        if (Status s = agree_[i].add(ref[i].second, outputs[i].second); !s.is_ok()) {
          return invalid_input("output '{}': {}", ref[i].first, s.message());
        }
      }
      break;
    case Metric::kMse:
      for (size_t i = 0; i < ref.size(); ++i) {
        auto sse = sum_squared_error(ref[i].second, outputs[i].second);
        if (!sse) return invalid_input("output '{}': {}", ref[i].first, sse.status().message());
        sse_[i] += *sse;
        n_[i] += ref[i].second.size();
      }
      break;
  }
  return Status::ok();
}

Score Evaluator::Tally::score(const Evaluator& ev) const {
  Score s;
  if (ev.metric() == Metric::kTop1) {
    s.value = count_ > 0 ? static_cast<double>(hits_) / static_cast<double>(count_)
                         : std::numeric_limits<double>::quiet_NaN();
    s.per_output = {s.value};
    return s;
  }
  for (size_t i = 0; i < agree_.size(); ++i) {
    double v = 0.0;
    if (ev.metric() == Metric::kSqnr) v = agree_[i].sqnr_db();
    if (ev.metric() == Metric::kCosine) v = agree_[i].cosine();
    if (ev.metric() == Metric::kMse) {
      v = n_[i] > 0 ? sse_[i] / static_cast<double>(n_[i])
                    : std::numeric_limits<double>::quiet_NaN();
    }
    s.per_output.push_back(v);
    s.value += v;
  }
  if (!s.per_output.empty()) s.value /= static_cast<double>(s.per_output.size());
  return s;
}

ExecutorFactory backend_executors(runtime::Backend& backend) {
  return [&backend](const ir::Model& m, int threads) {
    return runtime::Executor::create(m, backend, {.threads = threads});
  };
}

Expected<Evaluator> Evaluator::create(const ir::Model& model, ExecutorFactory executors,
                                      const data::Dataset& eval, const std::vector<int64_t>* labels,
                                      const Options& options) {
  Evaluator ev;
  ev.model_ = &model;
  ev.executors_ = std::move(executors);
  ev.eval_ = &eval;
  ev.options_ = options;
  if (eval.size() == 0) return invalid_input("the eval data holds no samples");
  if (labels != nullptr && options.metric == Metric::kTop1) {
    if (static_cast<int64_t>(labels->size()) != eval.size()) {
      return invalid_input("{} labels for {} eval samples", labels->size(), eval.size());
    }
    ev.labels_ = *labels;
  }
  const int64_t batches = eval.num_batches();
  const int64_t run =
      options.reference_batches >= 0 ? std::min(options.reference_batches, batches) : batches;
  ev.reference_.reserve(static_cast<size_t>(batches));  // add_reference() never moves them
  ev.float_score_.value = std::numeric_limits<double>::quiet_NaN();
  if (run == 0) return ev;
  PTQ_ASSIGN_OR_RETURN(auto exec, ev.make_executor(model, options.threads));
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  for (int64_t b = 0; b < run; ++b) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in, eval.batch(b));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out, exec->run(in));
    if (out.empty()) return invalid_input("the model has no outputs");
    ev.reference_.push_back(std::move(out));
  }
  ev.float_pass_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ev.float_pass_cpu_seconds_ = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  ev.float_pass_batches_ = run;
  ev.float_pool_bytes_ = exec->last_run_stats().pool_bytes;
  ev.value_shapes_ = exec->value_shapes();
  if (run == batches) PTQ_RETURN_IF_ERROR(ev.score_float());
  return ev;
}

Status Evaluator::add_reference(runtime::NamedTensors outputs) {
  if (has_all_references()) return runtime_error("every batch has its FP32 outputs already");
  if (outputs.empty()) return invalid_input("the model has no outputs");
  reference_.push_back(std::move(outputs));
  return has_all_references() ? score_float() : Status::ok();
}

Status Evaluator::score_float() {
  Tally t;
  for (int64_t b = 0; b < num_batches(); ++b) PTQ_RETURN_IF_ERROR(t.add(*this, b, reference(b)));
  float_score_ = t.score(*this);
  return Status::ok();
}

Expected<Score> Evaluator::evaluate(const ir::Model& variant) const {
  if (!has_all_references())
    return runtime_error("the FP32 outputs of some eval batches are missing");
  PTQ_ASSIGN_OR_RETURN(auto exec, make_executor(variant, options_.threads));
  Tally t;
  for (int64_t b = 0; b < num_batches(); ++b) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in, eval_->batch(b));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out, exec->run(in));
    PTQ_RETURN_IF_ERROR(t.add(*this, b, out));
  }
  return t.score(*this);
}

}  // namespace ptq::sensitivity
