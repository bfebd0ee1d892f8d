// Helpers for apply(): fresh names, constant lookup on a graph being edited, BN folding.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ptq/planner.h"

namespace ptq::planner {

// Every value and node name of a graph, to make new ones that collide with nothing.
class NameSet {
 public:
  // The names `graph` uses. With `known` (names of a graph it was copied from), only the names
  // `known` lacks are copied; `known` must outlive the set.
  explicit NameSet(const ir::Graph& graph, const std::unordered_set<std::string>* known = nullptr);
  // `base` when free, else base_1, base_2, …; the name is then taken.
  std::string fresh(const std::string& base);
  bool taken(const std::string& name) const {
    return used_.contains(name) || (known_ != nullptr && known_->contains(name));
  }

 private:
  const std::unordered_set<std::string>* known_;
  std::unordered_set<std::string> used_;
};

// Every name `graph` uses (values, nodes, declarations), as NameSet takes them.
std::unordered_set<std::string> graph_names(const ir::Graph& graph);

// The constant value of `name` (initializer or Constant node 'value'), or null.
const ir::Tensor* find_constant(const ir::Graph& graph, std::string_view name);
// Reads of `name` by nodes (not dead ones) plus graph outputs.
size_t count_uses(const ir::Graph& graph, std::string_view name, const std::vector<bool>& dead);

// Folds each planned BatchNormalization into its Conv: new or updated initializers, the conv
// takes the BN's output name, the BN is marked dead. Names of replaced weights go to `replaced`.
Status fold_batchnorms(ir::Graph& graph, const Plan& plan, NameSet& names, std::vector<bool>& dead,
                       std::set<std::string>& replaced, std::vector<std::string>& gone_values);

// Subtracts PlanOptions::bias_corrections from the biases of the nodes whose weights the plan
// quantizes (a bias is added where there is none), under fresh names; the old bias names go to
// `replaced`. A bias computed by other nodes than Identity is left, with a warning. Returns how
// many biases changed.
Expected<int64_t> correct_biases(ir::Graph& graph, const Plan& plan, NameSet& names,
                                 std::set<std::string>& replaced,
                                 std::vector<std::string>& warnings);

}  // namespace ptq::planner
