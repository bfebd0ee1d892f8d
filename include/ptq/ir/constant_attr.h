// The value of a Constant node given in one of its list-or-scalar attribute forms.
#pragma once

#include <optional>

#include "ptq/ir/graph.h"
#include "ptq/ir/tensor.h"

namespace ptq::ir {

// value_float(s), value_int(s) or value_string(s) as a new tensor (a scalar for the singular
// forms); nullopt when the node holds its value otherwise (`value`, `sparse_value`) or not at all.
std::optional<Tensor> constant_attr_value(const Node& node);

// A Constant node's dense value: its `value` tensor (a view: the node must outlive it) or one
// of the forms above; nullopt for `sparse_value` or none.
std::optional<Tensor> constant_node_value(const Node& node);

}  // namespace ptq::ir
