// The per-tensor observers (trace.h).
#include "trace.h"

#include "ptq/ir/owned_copy.h"

namespace ptq::compare {

namespace {

Status on_host(const runtime::ObservedTensor& tensor) {
  if (tensor.host != nullptr) return Status::ok();
  return usage_error(
      "tracing tensor '{}': per-tensor comparison needs the values on the host (--backend cpu)",
      tensor.name);
}

}  // namespace

Tracer::Tracer(std::vector<TensorPair> pairs) {
  entries_.reserve(pairs.size());
  for (TensorPair& p : pairs) {
    by_reference_.emplace(p.reference, entries_.size());
    by_test_[p.test].push_back(entries_.size());
    entries_.push_back({std::move(p), {}, {}, -1});
  }
}

std::vector<std::string> Tracer::ReferenceObserver::wanted(const ir::Graph& /*graph*/) {
  std::vector<std::string> names;
  for (const Entry& e : t_.entries_) names.push_back(e.pair.reference);
  return names;
}

Status Tracer::ReferenceObserver::observe(const runtime::ObservedTensor& tensor) {
  PTQ_RETURN_IF_ERROR(on_host(tensor));
  if (!ir::is_float(tensor.dtype)) return Status::ok();
  Entry& e = t_.entries_[t_.by_reference_.at(tensor.name)];
  e.held = ir::copy_into(*tensor.host, std::move(e.held));
  e.held_batch = t_.batch_;
  return Status::ok();
}

std::vector<std::string> Tracer::TestObserver::wanted(const ir::Graph& /*graph*/) {
  std::vector<std::string> names;
  for (const auto& [name, entries] : t_.by_test_) names.push_back(name);
  return names;
}

Status Tracer::TestObserver::observe(const runtime::ObservedTensor& tensor) {
  PTQ_RETURN_IF_ERROR(on_host(tensor));
  for (size_t i : t_.by_test_.at(tensor.name)) {
    Entry& e = t_.entries_[i];
    if (e.held_batch != t_.batch_) continue;  // not a float value in the reference
    if (Status s = e.agreement.add(e.held, *tensor.host); !s.is_ok()) {
      return invalid_input("tensor '{}' (the test model's '{}'): {}", e.pair.reference, e.pair.test,
                           s.message());
    }
  }
  return Status::ok();
}

std::vector<TensorTrace> Tracer::finish(const ir::Graph& reference, double jump_db) const {
  std::vector<TensorTrace> out;
  for (const Entry& e : entries_) {
    if (e.agreement.count() == 0) continue;
    TensorTrace t;
    t.pair = e.pair;
    t.agreement = e.agreement;
    out.push_back(std::move(t));
  }
  mark_jumps(reference, jump_db, out);
  return out;
}

}  // namespace ptq::compare
