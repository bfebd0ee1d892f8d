// sweep(): one variant per unit, evaluated batch by batch. With reuse, the base model runs once
// per batch and keeps the values at every unit's cut; each unit then runs only its subgraph.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "ptq/sensitivity.h"

namespace ptq::sensitivity {

namespace {

// Keeps host copies of the named values of one run.
class Capture : public runtime::Observer {
 public:
  explicit Capture(std::vector<std::string> names) : names_(std::move(names)) {}
  std::vector<std::string> wanted(const ir::Graph&) override { return names_; }
  Status observe(const runtime::ObservedTensor& t) override {
    if (t.host == nullptr) return runtime_error("value '{}' is not on the host", t.name);
    ir::Tensor copy(t.dtype, t.shape);
    if (t.host->nbytes() > 0) std::memcpy(copy.raw(), t.host->raw(), t.host->nbytes());
    values[t.name] = std::move(copy);
    return Status::ok();
  }
  std::unordered_map<std::string, ir::Tensor> values;

 private:
  std::vector<std::string> names_;
};

struct Job {
  planner::Unit unit;
  std::unique_ptr<ir::Model> variant;  // stable address: the cut borrows its initializers
  std::optional<Cut> cut;
  std::unique_ptr<runtime::Executor> exec;
  Evaluator::Tally tally;
  Status status;
};

planner::PlanOptions unit_options(planner::PlanOptions p, Mode mode, const std::string& unit) {
  p.only_units.clear();
  p.skip_units.clear();
  (mode == Mode::kOnly ? p.only_units : p.skip_units).push_back(unit);
  return p;
}

// Outputs of one variant on one batch.
Expected<runtime::NamedTensors> run_job(Job& job, const runtime::NamedTensors& inputs,
                                        const runtime::NamedTensors& base_out,
                                        const Capture& capture) {
  if (!job.cut) return job.exec->run(inputs);
  runtime::NamedTensors feed;
  for (const std::string& name : job.cut->boundary) {
    auto in = std::find_if(inputs.begin(), inputs.end(), [&](const auto& p) { return p.first == name; });
    if (in != inputs.end()) {
      feed.emplace_back(name, in->second.view());
      continue;
    }
    auto it = capture.values.find(name);
    if (it == capture.values.end()) return runtime_error("value '{}' at the cut was not captured", name);
    feed.emplace_back(name, it->second.view());
  }
  runtime::NamedTensors sub_out;
  if (!feed.empty() || job.cut->nodes > 0) {
    PTQ_ASSIGN_OR_RETURN(sub_out, job.exec->run(feed));
  }
  runtime::NamedTensors out;
  const auto& outputs = job.variant->graph.outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const int64_t s = job.cut->sub_output[i];
    if (s >= 0) {
      out.emplace_back(outputs[i].name, std::move(sub_out[static_cast<size_t>(s)].second));
      continue;
    }
    auto it = std::find_if(base_out.begin(), base_out.end(),
                           [&](const auto& p) { return p.first == outputs[i].name; });
    if (it == base_out.end()) return runtime_error("base output '{}' missing", outputs[i].name);
    out.emplace_back(outputs[i].name, it->second.view());
  }
  return out;
}

Status prepare_job(Job& job, const ir::Model& base, const calib::CalibrationTable& table,
                   const Evaluator& ev, const SweepOptions& o, int threads, bool reuse) {
  PTQ_ASSIGN_OR_RETURN(ir::Model v, partial_model(ev.model(), table,
                                                  unit_options(o.plan, o.mode, job.unit.name), {}));
  job.variant = std::make_unique<ir::Model>(std::move(v));
  if (reuse) {
    auto cut = make_cut(base, *job.variant);
    if (cut && cut->nodes > 0) job.cut = std::move(*cut);
  }
  const ir::Model& run_model = job.cut ? job.cut->sub : *job.variant;
  PTQ_ASSIGN_OR_RETURN(job.exec, runtime::Executor::create(run_model, ev.backend(), {.threads = threads}));
  return Status::ok();
}

// Runs `fn(i)` for i in [0, n) on up to `workers` threads; returns the first error.
template <typename Fn>
void parallel_for(size_t n, int workers, Fn fn) {
  if (workers <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  const size_t count = std::min(n, static_cast<size_t>(workers));
  for (size_t w = 0; w < count; ++w) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace

Expected<ir::Model> partial_model(const ir::Model& model, const calib::CalibrationTable& table,
                                  const planner::PlanOptions& plan,
                                  const std::vector<std::string>& float_set) {
  ir::Model m = model;
  planner::PlanOptions p = plan;
  p.skip_units.insert(p.skip_units.end(), float_set.begin(), float_set.end());
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult r, planner::quantize(m, table, p));
  (void)r;
  return m;
}

void rank(std::vector<LayerResult>& layers, Metric metric, Mode mode) {
  // kOnly: the worst variant is the most sensitive unit; kAllBut: the best one.
  const bool worst_first = mode == Mode::kOnly;
  const bool higher = higher_is_better(metric);
  auto key = [&](const LayerResult& l) {
    double v = l.score.value;
    if (std::isnan(v)) v = higher ? -INFINITY : INFINITY;  // NaN counts as the worst
    return higher ? v : -v;  // larger key = better
  };
  std::stable_sort(layers.begin(), layers.end(), [&](const LayerResult& a, const LayerResult& b) {
    return worst_first ? key(a) < key(b) : key(a) > key(b);
  });
}

Expected<SweepResult> sweep(const calib::CalibrationTable& table, const Evaluator& ev,
                            const SweepOptions& o) {
  SweepResult result;
  result.mode = o.mode;
  result.float_score = ev.float_score();
  PTQ_ASSIGN_OR_RETURN(planner::Plan plan, planner::plan(ev.model(), table, o.plan));
  PTQ_ASSIGN_OR_RETURN(ir::Model quantized, partial_model(ev.model(), table, o.plan, {}));
  PTQ_ASSIGN_OR_RETURN(result.quantized_score, ev.evaluate(quantized));
  const ir::Model& base = o.mode == Mode::kOnly ? ev.model() : quantized;
  // Values are copied out of the base run through an observer: the CPU backend only.
  const bool reuse = o.reuse && ev.backend().name() == "cpu";

  const int parallel = std::max(1, o.parallel);
  const int threads = std::max(1, ev.threads() / parallel);
  std::vector<Job> jobs(plan.units.size());
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].unit = plan.units[i];
  parallel_for(jobs.size(), parallel, [&](size_t i) {
    jobs[i].status = prepare_job(jobs[i], base, table, ev, o, threads, reuse);
  });
  std::vector<std::string> wanted;
  for (Job& job : jobs) {
    PTQ_RETURN_IF_ERROR(job.status);
    if (!job.cut) continue;
    wanted.insert(wanted.end(), job.cut->boundary.begin(), job.cut->boundary.end());
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());

  std::unique_ptr<runtime::Executor> base_exec;
  if (reuse) {
    PTQ_ASSIGN_OR_RETURN(base_exec, runtime::Executor::create(base, ev.backend(), {.threads = ev.threads()}));
  }
  const int64_t total = ev.num_batches() * static_cast<int64_t>(jobs.size());
  for (int64_t b = 0; b < ev.num_batches(); ++b) {
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors inputs, ev.data().batch(b));
    Capture capture(wanted);
    runtime::NamedTensors base_out;
    if (base_exec) {
      runtime::Observer* obs[] = {&capture};
      base_exec->forget_observers();
      PTQ_ASSIGN_OR_RETURN(base_out, base_exec->run(inputs, obs));
    }
    parallel_for(jobs.size(), parallel, [&](size_t i) {
      Job& job = jobs[i];
      auto out = run_job(job, inputs, base_out, capture);
      job.status = out ? job.tally.add(ev, b, *out) : out.status();
    });
    for (Job& job : jobs) {
      if (!job.status.is_ok()) {
        return Status(job.status.code(), "unit '" + job.unit.name + "': " + job.status.message());
      }
    }
    if (o.progress) o.progress((b + 1) * static_cast<int64_t>(jobs.size()), total);
  }
  for (Job& job : jobs) {
    LayerResult l;
    l.name = job.unit.name;
    l.kind = job.unit.kind;
    l.score = job.tally.score(ev);
    l.subgraph_nodes = job.cut ? job.cut->nodes : static_cast<int64_t>(job.variant->graph.nodes.size());
    result.layers.push_back(std::move(l));
  }
  rank(result.layers, ev.metric(), o.mode);
  return result;
}

bool meets_target(Metric metric, double score, double float_score, double target_drop) {
  if (std::isnan(score)) return false;
  switch (metric) {
    case Metric::kTop1:
    case Metric::kCosine: return score >= float_score - target_drop;
    case Metric::kSqnr: return score >= target_drop;
    case Metric::kMse: return score <= target_drop;
  }
  return false;
}

Expected<Selection> select(const ir::Model& model, const calib::CalibrationTable& table,
                           const Evaluator& ev, const planner::PlanOptions& plan,
                           const std::vector<LayerResult>& ranked, double target_drop,
                           int64_t max_float) {
  Selection s;
  const double ref = ev.float_score().value;
  for (size_t step = 0;; ++step) {
    PTQ_ASSIGN_OR_RETURN(ir::Model m, partial_model(model, table, plan, s.float_set));
    PTQ_ASSIGN_OR_RETURN(Score score, ev.evaluate(m));
    SelectStep st;
    st.added = step == 0 ? "" : s.float_set.back();
    st.float_count = static_cast<int64_t>(s.float_set.size());
    st.score = score;
    st.meets = meets_target(ev.metric(), score.value, ref, target_drop);
    s.trail.push_back(st);
    s.score = score;
    s.met = st.meets;
    if (s.met || step >= ranked.size()) break;
    if (max_float >= 0 && static_cast<int64_t>(s.float_set.size()) >= max_float) break;
    s.float_set.push_back(ranked[step].name);
  }
  return s;
}

}  // namespace ptq::sensitivity
