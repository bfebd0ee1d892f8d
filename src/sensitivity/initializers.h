// Internal to ptq_sensitivity: a graph's initializers by name, for code that looks up many
// (Graph::initializer() looks through them all each time): the cut and the constant folder.
// It borrows the graph's names and tensors: valid until the graph's initializers change.
#pragma once

#include <string_view>
#include <unordered_map>

#include "ptq/ir.h"

namespace ptq::sensitivity {

class InitializerMap {
 public:
  explicit InitializerMap(const ir::Graph& g) {
    map_.reserve(g.initializers().size());
    for (const ir::Initializer& i : g.initializers()) map_.emplace(i.name, &i.tensor);
  }
  const ir::Tensor* find(std::string_view name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : it->second;
  }

 private:
  std::unordered_map<std::string_view, const ir::Tensor*> map_;
};

}  // namespace ptq::sensitivity
