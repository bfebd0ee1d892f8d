// WeightMemo: see planner.h.
#include <memory>

#include "ptq/planner.h"
#include "rewrite.h"

namespace ptq::planner {

WeightMemo::WeightMemo(const ir::Model& source) : names_(graph_names(source.graph)) {
  for (const ir::Initializer& i : source.graph.initializers()) {
    if (i.tensor.dtype() == ir::DType::kFloat32 && i.tensor.nbytes() > 0) {
      sources_.insert(i.tensor.raw());
    }
  }
}

WeightMemo::Entry* WeightMemo::find(const ir::Tensor& w, int64_t axis) {
  for (const std::unique_ptr<Entry>& e : entries_) {
    if (e->data == w.raw() && e->axis == axis && e->shape == w.shape()) return e.get();
  }
  return nullptr;
}

std::vector<float> WeightMemo::scales(const ir::Tensor& w, int64_t axis) {
  if (!sources_.contains(w.raw())) return weight_scales(w, axis);
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* e = find(w, axis);
  if (e == nullptr) {
    auto fresh = std::make_unique<Entry>();
    fresh->data = w.raw();
    fresh->axis = axis;
    fresh->shape = w.shape();
    fresh->scales = weight_scales(w, axis);
    e = entries_.emplace_back(std::move(fresh)).get();
  }
  return e->scales;
}

ir::Tensor WeightMemo::quantized(const ir::Tensor& w, int64_t axis,
                                 const std::vector<float>& scales) {
  if (!sources_.contains(w.raw())) return quantize_weights(w, axis, scales);
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* e = find(w, axis);
  if (e == nullptr || e->scales != scales) return quantize_weights(w, axis, scales);  // widened
  if (!e->has_quantized) {
    e->quantized = quantize_weights(w, axis, scales);
    e->has_quantized = true;
  }
  return e->quantized.view();
}

}  // namespace ptq::planner
