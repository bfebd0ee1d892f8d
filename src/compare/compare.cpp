// The comparison loop (include/ptq/compare.h, compare()): both models batch by batch, their
// outputs (and with per_tensor every tensor they share) into float64 running sums.
#include "ptq/compare.h"

#include <algorithm>
#include <memory>

#include "trace.h"

namespace ptq::compare {

namespace {

// For each output of the reference, the index of the matching output of the test model.
Expected<std::vector<size_t>> match_outputs(const Side& r, const Side& t) {
  const std::vector<ir::ValueInfo>& ro = r.model.graph.outputs;
  const std::vector<ir::ValueInfo>& to = t.model.graph.outputs;
  std::vector<size_t> map;
  for (const ir::ValueInfo& out : ro) {
    auto it = std::find_if(to.begin(), to.end(),
                           [&](const ir::ValueInfo& v) { return v.name == out.name; });
    if (it == to.end()) break;
    map.push_back(static_cast<size_t>(it - to.begin()));
  }
  if (map.size() == ro.size()) return map;
  if (ro.size() != to.size()) {
    return invalid_input("{} has {} outputs and {} has {}, not matched by name either", r.label,
                         ro.size(), t.label, to.size());
  }
  map.clear();
  for (size_t i = 0; i < ro.size(); ++i) map.push_back(i);
  return map;
}

// Ranks equal and fixed dims equal (a symbolic or unknown dim matches anything).
bool dims_agree(const ir::TypeInfo& a, const ir::TypeInfo& b) {
  if (!a.dims || !b.dims) return true;
  if (a.dims->size() != b.dims->size()) return false;
  for (size_t i = 0; i < a.dims->size(); ++i) {
    const ir::Dim& x = (*a.dims)[i];
    const ir::Dim& y = (*b.dims)[i];
    if (x.known() && y.known() && x.value != y.value) return false;
  }
  return true;
}

}  // namespace

Status check_same_inputs(const ir::Model& reference, std::string_view reference_label,
                         const ir::Model& test, std::string_view test_label) {
  const std::vector<const ir::ValueInfo*> ri = reference.graph.real_inputs();
  const std::vector<const ir::ValueInfo*> ti = test.graph.real_inputs();
  if (ri.size() != ti.size()) {
    return invalid_input("{} takes {} inputs and {} takes {}", reference_label, ri.size(),
                         test_label, ti.size());
  }
  const bool by_name = std::all_of(ri.begin(), ri.end(), [&](const ir::ValueInfo* v) {
    return test.graph.is_graph_input(v->name);
  });
  for (size_t i = 0; i < ri.size(); ++i) {
    const ir::ValueInfo* other = by_name ? test.graph.find_value_info(ri[i]->name) : ti[i];
    if (!dims_agree(ri[i]->type, other->type)) {
      return invalid_input("input '{}' of {} is {} but '{}' of {} is {}", ri[i]->name,
                           reference_label, ir::dims_str(ri[i]->type.dims), other->name, test_label,
                           ir::dims_str(other->type.dims));
    }
  }
  return Status::ok();
}

namespace {

Status add_batch(const runtime::NamedTensors& ra, const runtime::NamedTensors& rb,
                 const std::vector<size_t>& map, Result& r) {
  for (size_t i = 0; i < map.size(); ++i) {
    if (Status s = r.outputs[i].agreement.add(ra[i].second, rb[map[i]].second); !s.is_ok()) {
      return invalid_input("output '{}': {}", ra[i].first, s.message());
    }
  }
  const ir::Tensor& first_a = ra.front().second;
  r.classifier = r.classifier && first_a.rank() >= 2;
  if (r.classifier) {
    PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> top_a, metrics::argmax_rows(first_a));
    PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> top_b, metrics::argmax_rows(rb[map[0]].second));
    for (size_t i = 0; i < top_a.size(); ++i) r.top1_same += top_a[i] == top_b[i] ? 1 : 0;
  }
  r.samples += first_a.rank() > 0 ? first_a.dim(0) : 0;
  return Status::ok();
}

Expected<std::unique_ptr<Tracer>> make_tracer(const Side& r, const Side& t) {
  Expected<std::vector<TensorPair>> pairs = match_tensors(r.model.graph, t.model.graph);
  if (!pairs) {
    return Status(pairs.status().code(),
                  fmt::format("{} vs {}: {}", r.label, t.label, pairs.status().message()));
  }
  return std::make_unique<Tracer>(std::move(*pairs));
}

}  // namespace

std::optional<double> Result::top1_agreement() const {
  if (!classifier || samples <= 0) return std::nullopt;
  return static_cast<double>(top1_same) / static_cast<double>(samples);
}

Expected<Result> compare(const Side& reference, const Side& test, const Options& options) {
  if (reference.model.graph.outputs.empty()) {
    return invalid_input("{} has no outputs", reference.label);
  }
  PTQ_RETURN_IF_ERROR(check_same_inputs(reference.model, reference.label, test.model, test.label));
  PTQ_ASSIGN_OR_RETURN(std::vector<size_t> map, match_outputs(reference, test));
  if (reference.data.num_batches() != test.data.num_batches() ||
      reference.data.batch_size() != test.data.batch_size()) {
    return invalid_input("{} and {} take different batch sizes ({} vs {}); give --batch",
                         reference.label, test.label, reference.data.batch_size(),
                         test.data.batch_size());
  }
  std::unique_ptr<Tracer> tracer;
  if (options.per_tensor) {
    PTQ_ASSIGN_OR_RETURN(tracer, make_tracer(reference, test));
  }
  std::vector<runtime::Observer*> ref_observers, test_observers;
  if (tracer) {
    // The executors remember observers by address: an earlier tracer may have lived here.
    reference.executor.forget_observers();
    test.executor.forget_observers();
    ref_observers.push_back(&tracer->reference_observer());
    test_observers.push_back(&tracer->test_observer());
  }
  Result r;
  r.reference_label = reference.label;
  r.test_label = test.label;
  r.per_tensor = options.per_tensor;
  r.jump_db = options.jump_db;
  for (const ir::ValueInfo& out : reference.model.graph.outputs)
    r.outputs.push_back({out.name, {}});
  for (int64_t i = 0; i < reference.data.num_batches(); ++i) {
    if (tracer) tracer->next_batch();
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in_a, reference.data.batch(i));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out_a, reference.executor.run(in_a, ref_observers));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors in_b, test.data.batch(i));
    PTQ_ASSIGN_OR_RETURN(runtime::NamedTensors out_b, test.executor.run(in_b, test_observers));
    PTQ_RETURN_IF_ERROR(add_batch(out_a, out_b, map, r));
    if (options.progress) options.progress(r.samples);
  }
  if (tracer) {
    r.tensors = tracer->finish(reference.model.graph, options.jump_db);
    reference.executor.forget_observers();
    test.executor.forget_observers();
  }
  return r;
}

Status check_gate(const Result& r, const Gate& gate) {
  for (const OutputAgreement& o : r.outputs) {
    const double sqnr = o.agreement.sqnr_db();
    const double cosine = o.agreement.cosine();
    // Written as "not at least" so that NaN fails.
    if (gate.min_sqnr_db && !(sqnr >= *gate.min_sqnr_db)) {
      return invalid_input("output '{}': SQNR {} dB is below --min-sqnr {}", o.name,
                           metrics::format_metric(sqnr, 2), *gate.min_sqnr_db);
    }
    if (gate.min_cosine && !(cosine >= *gate.min_cosine)) {
      return invalid_input("output '{}': cosine {} is below --min-cosine {}", o.name,
                           metrics::format_metric(cosine, 6), *gate.min_cosine);
    }
  }
  return Status::ok();
}

}  // namespace ptq::compare
