#include "batch_axis.h"

#include "ptq/data.h"

namespace ptq::data {

namespace {

// A rank-1 array of exactly the shape the model fixes: a parameter (scales, pads, a shape),
// not a stack of scalar samples.
bool is_fixed_vector(const std::vector<ir::Dim>& dims, const ir::Shape& item) {
  return dims.size() == 1 && dims[0].known() && item == ir::Shape{dims[0].value};
}

}  // namespace

Expected<BatchAxis> choose_batch_axis(const ir::ValueInfo& input, const ir::Shape& item,
                                      const std::string& where, bool as_stored,
                                      std::optional<int64_t> asked) {
  if (!input.type.dims) {  // rank unknown: stored items are records as they are, or stacked
    const bool whole = asked ? *asked == kNoBatchAxis : as_stored;
    if (whole) return BatchAxis{kNoBatchAxis, static_cast<int64_t>(item.size())};
    return BatchAxis{asked.value_or(0), -1};
  }
  const auto& dims = *input.type.dims;
  const auto rank = static_cast<int64_t>(dims.size());
  const auto item_rank = static_cast<int64_t>(item.size());
  if (asked) {
    if (*asked >= rank) {
      return invalid_input("--batch-axis {}={} is beyond input '{}', which is {} (rank {})",
                           input.name, *asked, input.name, ir::dims_str(input.type.dims), rank);
    }
    const bool whole = *asked == kNoBatchAxis;
    return BatchAxis{*asked, whole ? rank : rank - 1};
  }
  if (rank == 0 && item_rank == 0) return BatchAxis{kNoBatchAxis, 0};
  if (item_rank == rank - 1) return BatchAxis{0, rank - 1};
  if (item_rank == rank + 1) return BatchAxis{kNoBatchAxis, rank};
  if (rank == 0) {
    return invalid_input("input '{}' is a scalar but {} holds arrays of shape {}: give one "
                         "scalar, or one a record stacked on a first axis",
                         input.name, where, ir::shape_str(item));
  }
  if (item_rank == rank && (as_stored || is_fixed_vector(dims, item))) {
    return BatchAxis{kNoBatchAxis, rank};
  }
  if (item_rank == rank) return BatchAxis{0, rank - 1};
  return invalid_input("input '{}' is {} (rank {}) but {} holds arrays of shape {}: samples "
                       "must have rank {} (or {} stacked)",
                       input.name, ir::dims_str(input.type.dims), rank, where, ir::shape_str(item),
                       rank - 1, rank);
}

int64_t output_batch_axis(const ir::Graph& graph, const std::vector<InputInfo>& inputs,
                          const std::string& output, const ir::Shape& got, int64_t n) {
  const InputInfo* first = nullptr;
  const ir::ValueInfo* out = graph.find_value_info(output);
  for (const InputInfo& in : inputs) {
    if (in.batch_axis == kNoBatchAxis) continue;
    if (first == nullptr) first = &in;
    const ir::ValueInfo* v = graph.find_value_info(in.name);
    if (v == nullptr || !v->type.dims || out == nullptr || !out->type.dims) continue;
    const std::string& symbol = (*v->type.dims)[static_cast<size_t>(in.batch_axis)].param;
    const auto& dims = *out->type.dims;
    for (size_t d = 0; !symbol.empty() && d < dims.size() && d < got.size(); ++d) {
      if (dims[d].param == symbol) return static_cast<int64_t>(d);
    }
  }
  if (first == nullptr) return kNoBatchAxis;
  const auto k = static_cast<size_t>(first->batch_axis);
  return k < got.size() && got[k] == n ? first->batch_axis : kNoBatchAxis;
}

}  // namespace ptq::data
