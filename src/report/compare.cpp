// metrics::OutputComparison: model B's outputs against reference model A's, batch by batch.
#include <algorithm>

#include "ptq/metrics.h"

namespace ptq::metrics {

namespace {

// For each output of A, the index of the matching output of B.
Expected<std::vector<size_t>> match_outputs(const ir::Graph& a, const ir::Graph& b,
                                            std::string_view name_a, std::string_view name_b) {
  std::vector<size_t> map;
  for (const ir::ValueInfo& out : a.outputs) {
    auto it = std::find_if(b.outputs.begin(), b.outputs.end(),
                           [&](const ir::ValueInfo& v) { return v.name == out.name; });
    if (it == b.outputs.end()) break;
    map.push_back(static_cast<size_t>(it - b.outputs.begin()));
  }
  if (map.size() == a.outputs.size()) return map;
  if (a.outputs.size() != b.outputs.size()) {
    return invalid_input("{} has {} outputs and {} has {}, not matched by name either", name_a,
                         a.outputs.size(), name_b, b.outputs.size());
  }
  map.clear();
  for (size_t i = 0; i < a.outputs.size(); ++i) map.push_back(i);
  return map;
}

}  // namespace

Expected<OutputComparison> OutputComparison::create(const ir::Graph& a, const ir::Graph& b,
                                                    std::string_view name_a,
                                                    std::string_view name_b) {
  if (a.outputs.empty()) return invalid_input("{} has no outputs", name_a);
  OutputComparison c;
  PTQ_ASSIGN_OR_RETURN(c.map_, match_outputs(a, b, name_a, name_b));
  for (const ir::ValueInfo& v : a.outputs) c.names_.push_back(v.name);
  c.agreements_.resize(c.map_.size());
  return c;
}

Status OutputComparison::add(const Outputs& a, const Outputs& b) {
  for (size_t i = 0; i < map_.size(); ++i) {
    const auto& [name, ta] = a[i];
    if (Status s = agreements_[i].add(ta, b[map_[i]].second); !s.is_ok()) {
      return invalid_input("output '{}': {}", name, s.message());
    }
  }
  const ir::Tensor& first_a = a.front().second;
  classifier_ = classifier_ && first_a.rank() >= 2;
  if (classifier_) {
    PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> top_a, argmax_rows(first_a));
    PTQ_ASSIGN_OR_RETURN(std::vector<int64_t> top_b, argmax_rows(b[map_[0]].second));
    for (size_t i = 0; i < top_a.size(); ++i) top1_same_ += top_a[i] == top_b[i] ? 1 : 0;
  }
  samples_ += first_a.rank() > 0 ? first_a.dim(0) : 0;
  return Status::ok();
}

}  // namespace ptq::metrics
