// sweep(): one variant per unit, evaluated batch by batch. With reuse, the base model runs once
// per batch and hands over the values at every unit's cut as extra outputs (so any backend
// works); each unit then runs only its subgraph. The units' models are merged into one graph
// per worker (merge.h), so a backend prepares one model per worker, not one per unit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include <unistd.h>

#include "cost.h"
#include "cut.h"
#include "fold.h"
#include "merge.h"
#include "rewire.h"
#include "ptq/ir/constant_attr.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/runtime/task_pool.h"
#include "ptq/sensitivity.h"

namespace ptq::sensitivity {

namespace {

struct Job {
  std::string name;                      // the unit's ("" for the fully quantized model)
  std::vector<std::string> only, skip;   // the units the variant quantizes, or leaves float
  // Stable address: the cut borrows its initializers. None for a rewired cut (rewire_jobs()).
  std::unique_ptr<ir::Model> variant;
  // With reuse, edges of the full plan when the variant is a rewiring of a model the sweep makes
  // anyway (rewire.h): all-but, the base's edges it drops; only, the fully quantized model's
  // edges it keeps. Its cut is then made once that model exists (rewire_jobs()).
  std::optional<std::vector<const planner::QuantEdge*>> rewire;
  std::optional<Cut> cut;
  double cost = 0.0;  // estimated_cost() of the part
  int64_t nodes = 0;  // the part's, before merging moves them (merge.h)
  Evaluator::Tally tally;
  Status status;
  bool mine = true;  // run by this rank (ranks())

  // What runs per batch: the cut, or the whole variant.
  const ir::Model& part() const { return cut ? cut->sub : *variant; }
  ir::Model& part() { return cut ? cut->sub : *variant; }
};

// Jobs whose parts run merged on one executor (one group per worker).
struct Group {
  std::vector<size_t> jobs;
  bool runs_base = false;  // its worker then runs the base on the next batch
  Merged merged;
  std::unique_ptr<runtime::Executor> exec;
  Status status;
};

// `model` quantized per `plan`. Given a borrowing copy of the float model, the float weights the
// planner leaves alone stay borrowed, so a sweep holds one copy of them, not one per unit.
Expected<ir::Model> quantized_copy(const ir::Model& model, const calib::CalibrationTable& table,
                                   const planner::PlanOptions& plan) {
  ir::Model m = model;
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult r, planner::quantize(m, table, plan));
  (void)r;
  return m;
}

// What a sweep's variants are made from: the float model (a borrowing copy, the model the
// planner analysed), the planner's analysis, its weights quantized once, and the folder every
// variant's constants go through.
struct Maker {
  const ir::Model& borrowed;
  const planner::Planner& planner;
  planner::WeightMemo& weights;
  ConstantFolder& folder;
};

// The float model quantized per `plan` (a plan of the maker's planner), folded.
Expected<ir::Model> made(const Maker& maker, const planner::Plan& plan) {
  ir::Model m = maker.borrowed;
  PTQ_ASSIGN_OR_RETURN(planner::QuantizeResult r, planner::apply(m, plan, &maker.weights));
  (void)r;
  PTQ_RETURN_IF_ERROR(maker.folder.fold(m).status());
  return m;
}

// A borrowing copy of `model` whose Constant nodes holding a tensor (`value`, or the
// value_float(s) / value_int(s) forms) are initializers of their outputs' names instead: the
// planner reads a constant the same either way, and the sweep's variants then neither copy nor
// fold those nodes again (60 of the small transformer's 199 nodes). A Constant giving a graph
// output stays a node.
ir::Model constants_as_initializers(const ir::Model& model) {
  ir::Model m = borrowing_copy(model);
  std::vector<ir::Node> kept;
  kept.reserve(m.graph.nodes.size());
  for (ir::Node& n : m.graph.nodes) {
    std::optional<ir::Tensor> value;
    if (n.op_type == "Constant" && n.in_default_domain() && n.outputs.size() == 1 &&
        !m.graph.is_graph_output(n.outputs[0])) {
      value = ir::constant_node_value(n);
    }
    if (value) {
      m.graph.add_initializer(n.outputs[0], std::move(*value));
    } else {
      kept.push_back(std::move(n));
    }
  }
  m.graph.nodes = std::move(kept);
  return m;
}

// One run of the base model: its own outputs and the values at the cuts, by name.
struct BaseRun {
  runtime::NamedTensors outputs;                       // the base model's graph outputs
  std::unordered_map<std::string, ir::Tensor> values;  // the extra outputs (cut values)
};

// `reuse`: a spent run's tensors (spent()), written into instead of fresh memory.
Expected<BaseRun> run_base(runtime::Executor& exec, size_t base_outputs,
                           const runtime::NamedTensors& inputs, runtime::NamedTensors reuse,
                           std::span<runtime::Observer* const> observers) {
  PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors all,
                       exec.run_reusing(inputs, std::move(reuse), observers));
  BaseRun r;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < base_outputs) r.outputs.push_back(std::move(all[i]));
    else r.values.emplace(std::move(all[i].first), std::move(all[i].second));
  }
  return r;
}

// The base's executor (null without reuse), the tapped graph it runs, and how many of its
// outputs are the base model's own.
struct BaseExec {
  runtime::Executor* exec = nullptr;
  const ir::Graph* tapped = nullptr;
  size_t outputs = 0;
};

// A spent base run's tensors in its executor's output order, for the next run to write into:
// the cut values of a ResNet-18 batch are ~100 MB, which fresh memory would have the system
// zero page by page every batch.
runtime::NamedTensors spent(BaseRun&& r, const BaseExec& base) {
  runtime::NamedTensors all = std::move(r.outputs);
  if (base.tapped == nullptr) return all;
  for (size_t i = all.size(); i < base.tapped->outputs.size(); ++i) {
    const std::string& name = base.tapped->outputs[i].name;
    auto it = r.values.find(name);
    all.emplace_back(name, it == r.values.end() ? ir::Tensor() : std::move(it->second));
  }
  return all;
}

// One batch's inputs and, with a base, its base run.
struct Fed {
  runtime::NamedTensors inputs;
  BaseRun base;
};

// `spare`: a batch whose base run is spent (its tensors are reused).
Expected<Fed> feed(const Evaluator& ev, const BaseExec& base, int64_t batch, Fed spare = {},
                   std::span<runtime::Observer* const> observers = {}) {
  Fed f;
  PTQ_ASSIGN_OR_RETURN(f.inputs, ev.data().batch(batch));
  if (base.exec != nullptr) {
    PTQ_ASSIGN_OR_RETURN(f.base, run_base(*base.exec, base.outputs, f.inputs,
                                          spent(std::move(spare.base), base), observers));
  }
  return f;
}

const ir::Tensor* find_named(const runtime::NamedTensors& list, const std::string& name) {
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& p) { return p.first == name; });
  return it == list.end() ? nullptr : &it->second;
}

// A value a part reads: a graph input, or one the base run handed over.
Expected<ir::Tensor> fed_value(const std::string& name, const runtime::NamedTensors& inputs,
                               const BaseRun& base) {
  const ir::Tensor* t = find_named(inputs, name);
  if (t == nullptr) t = find_named(base.outputs, name);
  if (t == nullptr) {
    auto it = base.values.find(name);
    if (it == base.values.end()) return runtime_error("value '{}' at the cut was not kept", name);
    t = &it->second;
  }
  return t->view();
}

// The variant's outputs, given its part's outputs (`part_out`, consumed) and the base run. A
// job with no variant of its own (a rewired cut) has the base's outputs.
Expected<runtime::NamedTensors> variant_outputs(const Job& job, std::vector<ir::Tensor> part_out,
                                                const BaseRun& base) {
  runtime::NamedTensors out;
  const size_t count = job.variant ? job.variant->graph.outputs.size() : base.outputs.size();
  for (size_t i = 0; i < count; ++i) {
    const std::string& name =
        job.variant ? job.variant->graph.outputs[i].name : base.outputs[i].first;
    const int64_t s = job.cut ? job.cut->sub_output[i] : static_cast<int64_t>(i);
    if (s >= 0) {
      out.emplace_back(name, std::move(part_out[static_cast<size_t>(s)]));
      continue;
    }
    const ir::Tensor* t = find_named(base.outputs, name);
    if (t == nullptr) return runtime_error("base output '{}' missing", name);
    out.emplace_back(name, t->view());
  }
  return out;
}

// Runs a group on one batch and adds each job's outputs to its tally.
Status run_group(Group& g, std::vector<Job>& jobs, const Evaluator& ev, int64_t batch,
                 const runtime::NamedTensors& inputs, const BaseRun& base) {
  if (g.jobs.empty()) return Status::ok();  // a worker that only runs the base
  runtime::NamedTensors given;
  for (const ir::ValueInfo& v : g.merged.model.graph.inputs) {
    PTQ_ASSIGN_OR_RETURN(ir::Tensor t, fed_value(v.name, inputs, base));
    given.emplace_back(v.name, std::move(t));
  }
  PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors all, g.exec->run(given));
  for (size_t k = 0; k < g.jobs.size(); ++k) {
    Job& job = jobs[g.jobs[k]];
    std::vector<ir::Tensor> part_out;
    for (size_t o : g.merged.outputs[k]) part_out.push_back(std::move(all[o].second));
    auto out = variant_outputs(job, std::move(part_out), base);
    job.status = out ? job.tally.add(ev, batch, *out) : out.status();
  }
  return Status::ok();
}

// A variant whose cut runs in its place: of it, the sweep reads only its outputs' names and the
// initializers the cut borrows. Its nodes and declarations go now, on the thread that made
// them, instead of with the rest at the end of the sweep.
void slim(ir::Model& variant) {
  variant.graph.nodes = {};
  variant.graph.value_info = {};
  variant.graph.inferred = {};
}

// The plan whose edges a variant's plan is compared with, where variants may be made by
// rewiring a model the sweep makes anyway (rewire.h): the base in all-but mode, the fully
// quantized model's job in only mode (made as usual itself).
struct FullPlan {
  Mode mode;
  const planner::Plan& plan;
};

// The job's variant, its constant nodes folded (as the base's are). With `full`, a variant
// that is a rewiring away from the base or the fully quantized model is only marked
// (Job::rewire): rewire_jobs() makes its cut.
Status make_variant(Job& job, const Maker& maker, const FullPlan* full) {
  PTQ_ASSIGN_OR_RETURN(planner::Plan plan, maker.planner.plan(job.only, job.skip));
  if (full != nullptr && !job.name.empty()) {
    job.rewire = full->mode == Mode::kAllBut ? dropped_edges(full->plan, plan)
                                             : added_edges(full->plan, plan);
    if (job.rewire) return Status::ok();
  }
  PTQ_ASSIGN_OR_RETURN(ir::Model m, made(maker, plan));
  job.variant = std::make_unique<ir::Model>(std::move(m));
  return Status::ok();
}

// A variant with no cut (none found, or nothing differs) runs whole: slower, same result.
void cut_job(Job& job, const CutMaker& cuts) {
  if (job.cut || !job.variant) return;  // cut already (rewire_jobs())
  auto cut = cuts.cut(*job.variant);
  if (!cut || cut->nodes == 0) return;
  job.cut = std::move(*cut);
  slim(*job.variant);
}

// The base of the cuts (none without reuse), folded: the float model, or (all-but) the fully
// quantized one (`full`, the sweep's plan), whose run then also scores it.
Expected<std::optional<ir::Model>> cut_base(const Maker& maker, const planner::Plan& full,
                                            const SweepOptions& o) {
  if (!o.reuse) return std::optional<ir::Model>();
  if (o.mode == Mode::kAllBut) {
    PTQ_ASSIGN_OR_RETURN(ir::Model quantized, made(maker, full));
    return std::optional<ir::Model>(std::move(quantized));
  }
  ir::Model base = borrowing_copy(maker.borrowed);
  PTQ_RETURN_IF_ERROR(maker.folder.fold(base).status());
  return std::optional<ir::Model>(std::move(base));
}

Status prepare_group(Group& g, std::vector<Job>& jobs, const Evaluator& ev, int threads) {
  if (g.jobs.empty()) return Status::ok();
  std::vector<ir::Model*> parts;
  for (size_t j : g.jobs) parts.push_back(&jobs[j].part());
  PTQ_ASSIGN_OR_RETURN(g.merged, merge_models(parts));
  PTQ_ASSIGN_OR_RETURN(g.exec, ev.make_executor(g.merged.model, threads));
  return Status::ok();
}

// Runs `fn(i)` for i in [0, n) on up to `workers` threads of the task pool, each taking the
// next i in order; the executors fn runs use threads of their own.
template <typename Fn>
void parallel_for(size_t n, int workers, Fn fn) {
  auto job = [&](int64_t i) { fn(static_cast<size_t>(i)); };
  runtime::run_jobs(workers, static_cast<int64_t>(n), job);
}

// The values every job's cut reads, sorted and unique.
std::vector<std::string> cut_values(const std::vector<Job>& jobs) {
  std::vector<std::string> wanted;
  for (const Job& job : jobs) {
    if (!job.cut || !job.mine) continue;
    wanted.insert(wanted.end(), job.cut->boundary.begin(), job.cut->boundary.end());
  }
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  return wanted;
}

Status with_unit(const Job& job) {
  if (job.status.is_ok()) return Status::ok();
  const std::string what = job.name.empty() ? "the quantized model" : "unit '" + job.name + "'";
  return Status(job.status.code(), what + ": " + job.status.message());
}

// The cut of a variant the rewiring makes of the base, found without making the variant; one
// that changes nothing runs whole.
Status cut_rewired(Job& job, const CutMaker& cuts, const Rewiring& r) {
  PTQ_ASSIGN_OR_RETURN(Cut cut, cuts.cut(r));
  if (cut.nodes == 0) {
    job.variant = std::make_unique<ir::Model>(rewired(cuts.base(), r));
    return Status::ok();
  }
  job.cut = std::move(cut);
  return Status::ok();
}

// Cuts the variants marked for rewiring (Job::rewire) on `threads` threads: rewirings of the
// base (all-but) or of the base by the fully quantized model's job, the last (only). One the
// model does not fit (a node or value not where the plan says) is made from the float model
// instead (and cut by cut_job()). `cuts`: the cuts' maker, whose index of the base's producers
// serves here too.
Status rewire_jobs(std::vector<Job>& jobs, const CutMaker& cuts, const Maker& maker, Mode mode,
                   int threads) {
  if (std::none_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.rewire.has_value(); })) {
    return Status::ok();
  }
  const ir::Model& base = cuts.base();
  const ir::GraphIndex& base_index = cuts.base_index();
  const ir::Model* quantized = mode == Mode::kOnly ? jobs.back().variant.get() : nullptr;
  std::optional<ir::GraphIndex> quantized_index;
  if (quantized != nullptr) quantized_index.emplace(quantized->graph);
  parallel_for(jobs.size(), threads, [&](size_t i) {
    Job& job = jobs[i];
    if (!job.rewire) return;
    std::optional<Rewiring> r =
        quantized != nullptr
            ? rewiring_adding(base, base_index, *quantized, *quantized_index, maker.borrowed,
                              *job.rewire)
            : rewiring_dropping(base, base_index, maker.borrowed, *job.rewire);
    job.status = r ? cut_rewired(job, cuts, *r) : make_variant(job, maker, nullptr);
  });
  for (const Job& job : jobs) PTQ_RETURN_IF_ERROR(with_unit(job));
  return Status::ok();
}

// What runs batch by batch.
struct Batches {
  std::vector<Group>& groups;
  std::vector<Job>& jobs;
  Evaluator& ev;
  int parallel;
  BaseExec base;
};

// Copies of a base run's outputs (which the next run writes into) as the evaluator's FP32
// outputs of its next batch.
Status add_reference(Evaluator& ev, const BaseRun& base) {
  runtime::NamedTensors outputs;
  for (const auto& [name, t] : base.outputs) outputs.emplace_back(name, ir::owned_copy(t));
  return ev.add_reference(std::move(outputs));
}

// Every batch through the groups, `first` (batch 0) fed already. The worker whose group
// carries the base feeds batch b + 1 once its parts of batch b are done, so the base's pass
// overlaps the other workers' parts instead of holding them all up; with no such group, batch
// b + 1 is fed after them. A batch the evaluator has no FP32 outputs for takes the base's
// (a base that is the FP32 model). With `quantized`, the base's outputs are scored into it.
// `done(b)` follows each batch.
Status run_batches(const Batches& r, Fed first, Evaluator::Tally* quantized,
                   const std::function<void(int64_t)>& done) {
  Fed current = std::move(first);
  Fed spare;  // the batch before `current`, done with: its base run's tensors are reused
  const bool overlapped = std::any_of(r.groups.begin(), r.groups.end(),
                                      [](const Group& g) { return g.runs_base; });
  for (int64_t b = 0; b < r.ev.num_batches(); ++b) {
    if (!r.ev.has_reference(b)) PTQ_RETURN_IF_ERROR(add_reference(r.ev, current.base));
    if (quantized != nullptr) PTQ_RETURN_IF_ERROR(quantized->add(r.ev, b, current.base.outputs));
    const bool more = b + 1 < r.ev.num_batches();
    Expected<Fed> next = Fed{};
    parallel_for(r.groups.size(), r.parallel, [&](size_t i) {
      Group& g = r.groups[i];
      g.status = run_group(g, r.jobs, r.ev, b, current.inputs, current.base);
      if (g.runs_base && more) next = feed(r.ev, r.base, b + 1, std::move(spare));
    });
    for (const Group& g : r.groups) PTQ_RETURN_IF_ERROR(g.status);
    for (const Job& job : r.jobs) PTQ_RETURN_IF_ERROR(with_unit(job));
    if (more && !overlapped) next = feed(r.ev, r.base, b + 1, std::move(current));
    if (!next) return next.status();
    done(b);
    spare = std::move(current);
    current = std::move(*next);
  }
  return Status::ok();
}

size_t mine_count(const std::vector<Job>& jobs) {
  auto mine = [](const Job& j) { return j.mine; };
  return static_cast<size_t>(std::count_if(jobs.begin(), jobs.end(), mine));
}

// One job per unit, then (unless the base run scores it) one for the fully quantized model.
std::vector<Job> make_jobs(const planner::Plan& plan, const SweepOptions& o,
                           bool base_is_quantized) {
  std::vector<Job> jobs(plan.units.size() + (base_is_quantized ? 0 : 1));
  for (size_t i = 0; i < plan.units.size(); ++i) {
    jobs[i].name = plan.units[i].name;
    (o.mode == Mode::kOnly ? jobs[i].only : jobs[i].skip).push_back(plan.units[i].name);
  }
  if (!base_is_quantized) {
    jobs.back().only = o.plan.only_units;
    jobs.back().skip = o.plan.skip_units;
  }
  return jobs;
}

// Whether the base's pass overlaps the workers' cuts (run_batches). It pays when the pass
// leaves its threads idle much of the time (a small transformer: an FP32 pass on two threads
// keeps them 50-78 % busy); a pass that keeps them busy (ResNet-18: 96 %) costs less run
// alone first, on every thread, than beside the cuts, which then slow it down by contending
// for the cores and caches. `idle`: whether an FP32 run left its threads idle so.
bool overlap_base(bool idle, int threads, int workers, SweepOptions::BaseOverlap overlap) {
  if (workers < 2 || overlap == SweepOptions::BaseOverlap::kOff) return false;
  if (overlap == SweepOptions::BaseOverlap::kOn) return true;
  return threads >= 2 && idle;
}

// Over the evaluator's whole FP32 pass: it kept its threads under 85 % busy (CPU time over wall
// time and threads).
bool idle_pass(const Evaluator& ev) {
  constexpr double kBusyAtMost = 0.85;
  if (ev.float_pass_seconds() <= 0.0) return false;
  return ev.float_pass_cpu_seconds() / (ev.float_pass_seconds() * std::max(ev.threads(), 1)) <
         kBusyAtMost;
}

// Over one cold batch (the base's first, `seconds` long) the busy share swings with the first
// run's costs (ResNet-18: 0.75-0.88, against 0.96 over a pass), so its kernels' mean duration
// decides instead: under 0.5 ms, waking the threads and waiting for the slowest at each kernel
// leaves them idle much of the time (the transformer at batch 16: ~20 us a kernel; ResNet-18:
// ~7 ms).
bool idle_batch(double seconds, const runtime::RunStats& stats) {
  constexpr double kShortKernel = 0.5e-3;
  return seconds / static_cast<double>(std::max<int64_t>(stats.steps - stats.fused, 1)) <
         kShortKernel;
}

// Workers for a sweep: SweepOptions::parallel, or as many as fit (auto_parallel()) given the
// activation bytes of an FP32 run.
int fitting_workers(int threads, int64_t pool_bytes, size_t jobs) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const int64_t budget = pages > 0 && page > 0 ? int64_t{pages} * page / 4 : 0;
  const int64_t fit = budget / std::max<int64_t>(2 * pool_bytes, 1);
  const int64_t most = std::min<int64_t>(threads, static_cast<int64_t>(jobs));
  return static_cast<int>(std::clamp<int64_t>(fit, 1, std::max<int64_t>(most, 1)));
}

int workers(const SweepOptions& o, int threads, int64_t pool_bytes, size_t jobs) {
  return o.parallel > 0 ? o.parallel : fitting_workers(threads, pool_bytes, jobs);
}

size_t group_count(size_t jobs, int workers) {
  return std::min(jobs, static_cast<size_t>(std::max(1, workers)));
}

// `workers` groups of jobs, balanced by their parts' estimated costs: the costliest part first,
// each to the group with the least cost so far (ties: the first). With `base_cost` > 0 the
// first group also runs the base, which counts as that much, once its parts are done.
std::vector<Group> make_groups(const std::vector<Job>& jobs, int workers, double base_cost) {
  std::vector<size_t> order;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].mine) order.push_back(j);
  }
  std::vector<Group> groups(group_count(order.size(), workers));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].cost > jobs[b].cost; });
  std::vector<double> load(groups.size(), 0.0);
  if (!groups.empty() && base_cost > 0.0) {
    groups[0].runs_base = true;
    load[0] = base_cost;
  }
  for (size_t j : order) {
    const auto least = std::min_element(load.begin(), load.end());
    const size_t g = static_cast<size_t>(least - load.begin());
    groups[g].jobs.push_back(j);
    load[g] += jobs[j].cost;
  }
  for (Group& g : groups) std::sort(g.jobs.begin(), g.jobs.end());  // graph order within a group
  return groups;
}

// Deals the prepared jobs to `parallel` workers by their parts' costs, from the shapes `seen`,
// and prepares each worker's merged graph and executor.
// A cut's values the base lacks are the Q/DQ a variant adds (costed by their inputs), so the
// base's declarations stand in for its variant's, which slim() dropped.
Expected<std::vector<Group>> deal(std::vector<Job>& jobs, const Evaluator& ev, int parallel,
                                  double base_cost, const ir::Graph& base, const SeenShapes& seen) {
  for (Job& job : jobs) {
    if (!job.mine) continue;
    job.cost = estimated_cost(job.part(), job.cut ? base : job.variant->graph, seen);
    job.nodes = static_cast<int64_t>(job.part().graph.nodes.size());
  }
  std::vector<Group> groups = make_groups(jobs, parallel, base_cost);
  const int threads = std::max(1, ev.threads() / static_cast<int>(groups.size()));
  parallel_for(groups.size(), parallel, [&](size_t i) {
    groups[i].status = prepare_group(groups[i], jobs, ev, threads);
  });
  for (const Group& g : groups) PTQ_RETURN_IF_ERROR(g.status);
  return groups;
}

// Batch 0 fed (its base run included) and the workers' groups made.
struct Start {
  Fed first;
  std::vector<Group> groups;
  int parallel = 1;  // workers
};

// With an evaluator that has run nothing (only mode, the base being the FP32 model), the
// base's first batch, run alone on every thread, gives the shapes, activation bytes and kernel
// times the workers are planned with; their executors are made after it.
Expected<Start> start_from_base(std::vector<Job>& jobs, const Evaluator& ev, const SweepOptions& o,
                                const BaseExec& base_run, const ir::Model& base) {
  Start s;
  const auto t0 = std::chrono::steady_clock::now();
  PTQ_ASSIGN_OR_RETURN(s.first, feed(ev, base_run, 0));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const runtime::RunStats stats = base_run.exec->last_run_stats();
  const auto shapes = base_run.exec->value_shapes();
  const SeenShapes seen(shapes.begin(), shapes.end());
  s.parallel = workers(o, ev.threads(), stats.pool_bytes, mine_count(jobs));
  const bool overlap =
      overlap_base(idle_batch(seconds, stats), ev.threads(), s.parallel, o.overlap);
  const double base_cost = overlap ? estimated_cost(base, base.graph, seen) : 0.0;
  PTQ_ASSIGN_OR_RETURN(s.groups, deal(jobs, ev, s.parallel, base_cost, base.graph, seen));
  return s;
}

// The groups are dealt by the parts' costs from the shapes of the evaluator's FP32 run, and the
// base's first run overlaps the making of their executors (neither keeps every core busy).
// Where the evaluator's executors do not tell shapes, the base's first run shows them to an
// observer (which keeps its fused kernels apart) and the groups are made after it.
Expected<Start> start(std::vector<Job>& jobs, const Evaluator& ev, const SweepOptions& o,
                      const BaseExec& base_run, const ir::Model& base) {
  if (!ev.has_reference(0)) return start_from_base(jobs, ev, o, base_run, base);
  const int parallel = workers(o, ev.threads(), ev.float_pool_bytes(), mine_count(jobs));
  const bool overlap = overlap_base(idle_pass(ev), ev.threads(), parallel, o.overlap);
  SeenShapes seen(ev.value_shapes().begin(), ev.value_shapes().end());
  auto base_cost = [&] {
    return base_run.exec != nullptr && overlap ? estimated_cost(base, base.graph, seen) : 0.0;
  };
  Start s;
  s.parallel = parallel;
  if (seen.empty()) {
    ShapeRecorder recorder;
    runtime::Observer* observers[] = {&recorder};
    PTQ_ASSIGN_OR_RETURN(s.first, feed(ev, base_run, 0, {}, observers));
    seen = recorder.take();
    PTQ_ASSIGN_OR_RETURN(s.groups, deal(jobs, ev, parallel, base_cost(), base.graph, seen));
    return s;
  }
  Expected<Fed> first = Fed{};
  Expected<std::vector<Group>> groups = std::vector<Group>{};
  parallel_for(2, 2, [&](size_t i) {
    if (i == 0) first = feed(ev, base_run, 0);
    else groups = deal(jobs, ev, parallel, base_cost(), base.graph, seen);
  });
  if (!first) return first.status();
  if (!groups) return groups.status();
  s.first = std::move(*first);
  s.groups = std::move(*groups);
  return s;
}

// A job's outcome, as the rank that ran it sends it to rank 0.
struct JobResult {
  Score score;
  int64_t nodes = 0;
};

// What a rank's part of the sweep gives: its jobs' results (jobs it did not run: empty).
struct Part {
  Score float_score;
  std::optional<Score> quantized_score;  // when the base's run scored it (all-but with reuse)
  std::vector<JobResult> results;        // one per job
  std::vector<size_t> mine;              // the jobs this rank ran
};

// Each unit's score, ranked.
std::vector<LayerResult> layer_results(const std::vector<planner::Unit>& units,
                                       const std::vector<JobResult>& results, Metric metric,
                                       Mode mode) {
  std::vector<LayerResult> layers;
  for (size_t i = 0; i < units.size(); ++i) {
    LayerResult l;
    l.name = units[i].name;
    l.kind = units[i].kind;
    l.score = results[i].score;
    l.subgraph_nodes = results[i].nodes;
    layers.push_back(std::move(l));
  }
  rank(layers, metric, mode);
  return layers;
}

// Which jobs this rank runs: the costliest first, each to the least loaded rank (ties: the
// lowest), so every rank's share is fixed by the plan alone. A job's cost, before any variant
// is made, is the nodes from its unit's anchor on (its cut spans at most those); the fully
// quantized model's is the whole graph.
void deal_to_ranks(std::vector<Job>& jobs, const planner::Plan& plan,
                   const dist::Communicator& comm) {
  if (comm.size() == 1) return;
  std::vector<int64_t> cost(jobs.size(), static_cast<int64_t>(plan.node_count) + 1);
  for (size_t i = 0; i < plan.units.size(); ++i) {
    cost[i] = static_cast<int64_t>(plan.node_count - plan.units[i].anchor);
  }
  std::vector<size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<int64_t> load(static_cast<size_t>(comm.size()), 0);
  for (size_t j : order) {
    const auto least =
        static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    jobs[j].mine = static_cast<int>(least) == comm.rank();
    load[least] += cost[j];
  }
}

std::string part_bytes(const Part& part) {
  dist::Writer w;
  for (size_t i : part.mine) {
    const JobResult& r = part.results[i];
    w.i64(static_cast<int64_t>(i));
    w.i64(r.nodes);
    w.f64(r.score.value);
    w.i64(static_cast<int64_t>(r.score.per_output.size()));
    for (double v : r.score.per_output) w.f64(v);
  }
  return w.bytes();
}

// Adds another rank's results (part_bytes()) into `results`.
Status add_part(const std::string& bytes, std::vector<JobResult>& results) {
  dist::Reader r(bytes);
  while (!r.done()) {
    PTQ_ASSIGN_OR_RETURN(int64_t i, r.i64());
    if (i < 0 || static_cast<size_t>(i) >= results.size()) {
      return runtime_error("a rank sent the result of job {}, of {}", i, results.size());
    }
    JobResult& out = results[static_cast<size_t>(i)];
    PTQ_ASSIGN_OR_RETURN(out.nodes, r.i64());
    PTQ_ASSIGN_OR_RETURN(out.score.value, r.f64());
    PTQ_ASSIGN_OR_RETURN(int64_t n, r.i64());
    out.score.per_output.clear();
    for (int64_t k = 0; k < n; ++k) {
      PTQ_ASSIGN_OR_RETURN(double v, r.f64());
      out.score.per_output.push_back(v);
    }
  }
  return Status::ok();
}

}  // namespace

int auto_parallel(const Evaluator& ev, size_t jobs) {
  return fitting_workers(ev.threads(), ev.float_pool_bytes(), jobs);
}

namespace {

// `name` as an ECMAScript regex matching only itself.
std::string regex_quoted(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

// A unit named after its node is excluded by that name, as `ptq quantize --exclude NAME` does,
// so that the model is that command's, byte for byte (metadata included); a unit of an
// unnamed node ("<op>_<index>") is skipped instead.
Expected<ir::Model> partial_model(const ir::Model& model, const calib::CalibrationTable& table,
                                  const planner::PlanOptions& plan,
                                  const std::vector<std::string>& float_set) {
  planner::PlanOptions p = plan;
  std::unordered_set<std::string_view> named;
  for (const ir::Node& n : model.graph.nodes) {
    if (!n.name.empty()) named.insert(n.name);
  }
  for (const std::string& unit : float_set) {
    if (named.contains(unit)) {
      p.exclude_nodes.push_back(regex_quoted(unit));
    } else {
      p.skip_units.push_back(unit);
    }
  }
  return quantized_copy(model, table, p);
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

namespace {

// This rank's part of the sweep (every job, with one rank); `plan_units` receives the plan's
// units.
Expected<Part> sweep_part(const calib::CalibrationTable& table, Evaluator& ev,
                          const SweepOptions& o, const dist::Communicator& comm,
                          std::vector<planner::Unit>& plan_units) {
  const ir::Model borrowed = constants_as_initializers(ev.model());
  // The placement rules run once, and each weight is quantized once; each variant only selects
  // its units.
  PTQ_ASSIGN_OR_RETURN(planner::Planner planner, planner::Planner::create(borrowed, table, o.plan));
  PTQ_ASSIGN_OR_RETURN(planner::Plan plan, planner.plan(o.plan.only_units, o.plan.skip_units));
  planner::WeightMemo weights(ev.model());  // outlives the variants, which hold views of it
  // The base and every variant run with their constants folded (fold.h), with reuse or
  // without. Unless the base's run scores the fully quantized model, that is one more job.
  ConstantFolder folder(
      [&ev](const ir::Model& m, int threads) { return ev.make_executor(m, threads); });
  const Maker maker{borrowed, planner, weights, folder};
  const bool base_scores_quantized = o.reuse && o.mode == Mode::kAllBut;
  std::vector<Job> jobs = make_jobs(plan, o, base_scores_quantized);
  plan_units = plan.units;
  deal_to_ranks(jobs, plan, comm);
  Part part;
  part.results.resize(jobs.size());
  if (mine_count(jobs) == 0) return part;
  // Only mode's variants are rewirings of the fully quantized model: every rank makes it.
  const bool quantized_needed = o.reuse && o.mode == Mode::kOnly;
  // The base and the variants are made independently of each other: all threads make them
  // (the base and the fully quantized model, the last job, first: they take longest), then
  // cut each variant against the base. A variant a rewiring away from the base (all-but) or
  // the fully quantized model (only) is made from it then (rewire.h).
  const int makers = std::max(o.parallel, ev.threads());
  const FullPlan full{o.mode, plan};
  Expected<std::optional<ir::Model>> own_base = std::optional<ir::Model>();
  parallel_for(jobs.size() + 1, makers, [&](size_t i) {
    if (i == 0) own_base = cut_base(maker, plan, o);
    else if (Job& job = jobs[jobs.size() - i]; job.mine || (i == 1 && quantized_needed)) {
      job.status = make_variant(job, maker, o.reuse ? &full : nullptr);
    }
  });
  if (!own_base) return own_base.status();
  for (const Job& job : jobs) PTQ_RETURN_IF_ERROR(with_unit(job));
  const ir::Model& base = *own_base ? **own_base : ev.model();
  if (o.reuse) {
    const CutMaker cuts(base);
    PTQ_RETURN_IF_ERROR(rewire_jobs(jobs, cuts, maker, o.mode, makers));
    parallel_for(jobs.size(), makers, [&](size_t i) { cut_job(jobs[i], cuts); });
  }
  // The base runs once per batch and hands over the values at every cut. Each worker runs its
  // group on a share of the threads; the base has them all: run between batches it uses them,
  // and run by a worker after its cuts (overlap_base) its helpers take a core another worker
  // leaves idle.
  std::optional<ir::Model> tapped;  // outlives base_exec, which borrows it
  std::unique_ptr<runtime::Executor> base_exec;
  if (o.reuse) {
    tapped = with_outputs(base, cut_values(jobs));
    PTQ_ASSIGN_OR_RETURN(base_exec, ev.make_executor(*tapped, ev.threads()));
  }
  const BaseExec base_run{base_exec.get(), tapped ? &tapped->graph : nullptr,
                          base.graph.outputs.size()};
  PTQ_ASSIGN_OR_RETURN(Start started, start(jobs, ev, o, base_run, base));
  std::vector<Group>& groups = started.groups;
  const int parallel = started.parallel;

  Evaluator::Tally quantized_tally;
  const int64_t units = static_cast<int64_t>(plan.units.size());
  PTQ_RETURN_IF_ERROR(run_batches({groups, jobs, ev, parallel, base_run}, std::move(started.first),
                                  base_scores_quantized ? &quantized_tally : nullptr,
                                  [&](int64_t b) {
                                    if (o.progress)
                                      o.progress((b + 1) * units, ev.num_batches() * units);
                                  }));
  part.float_score = ev.float_score();
  if (base_scores_quantized) part.quantized_score = quantized_tally.score(ev);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].mine) continue;
    part.results[i] = {jobs[i].tally.score(ev), jobs[i].nodes};
    part.mine.push_back(i);
  }
  // The executors, merged graphs and variants are freed here, on one thread: freed on two new
  // threads at once (freeing memory that other threads allocated, and unmapping arenas in one
  // address space) a 64-sample transformer sweep took 3-4 ms longer (docs/perf-history.md, session
  // 19).
  for (Group& g : groups) g = Group{};
  for (Job& job : jobs) job = Job{};
  return part;
}

}  // namespace

Expected<SweepResult> sweep(const calib::CalibrationTable& table, Evaluator& ev,
                            const SweepOptions& o) {
  if (!ev.has_all_references() && !(o.reuse && o.mode == Mode::kOnly)) {
    return runtime_error(
        "the evaluator lacks FP32 outputs that only an only-mode sweep with reuse supplies");
  }
  dist::Solo solo;
  dist::Communicator& comm = o.comm != nullptr ? *o.comm : solo;
  std::vector<planner::Unit> units;
  Expected<Part> part = sweep_part(table, ev, o, comm, units);
  PTQ_RETURN_IF_ERROR(comm.agree(part.status()));
  const std::vector<std::string> parts = comm.gather(part_bytes(*part));
  SweepResult result;
  result.mode = o.mode;
  if (comm.rank() != 0) return result;
  std::vector<JobResult> results = std::move(part->results);
  for (size_t r = 1; r < parts.size(); ++r) PTQ_RETURN_IF_ERROR(add_part(parts[r], results));
  result.float_score = part->float_score;
  result.quantized_score = part->quantized_score ? *part->quantized_score : results.back().score;
  result.layers = layer_results(units, results, ev.metric(), o.mode);
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
