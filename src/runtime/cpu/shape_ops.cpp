// Ops that change only the shape, never the bytes: Reshape, Flatten, Squeeze, Unsqueeze,
// Identity, Dropout (inference). Their outputs are views of the input. Also Shape and Size,
// which read only the shape.
#include <algorithm>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// Normalises, checks and sorts a list of axes for a tensor of `rank` dims; no duplicates.
Expected<std::vector<int64_t>> normalize_axes(const ir::Node& node, std::vector<int64_t> axes,
                                              int64_t rank) {
  for (int64_t& a : axes) {
    PTQ_ASSIGN_OR_RETURN(a, normalize_axis(node, a, rank));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return node_error(node, "axes contain a duplicate");
  }
  return axes;
}

// Axes given as attribute (older opsets) or as optional input `index` (newer ones).
std::optional<std::vector<int64_t>> axes_of(const ir::Node& node, Inputs in, size_t index,
                                            bool from_input) {
  if (!from_input) {
    if (!node.has_attr("axes")) return std::nullopt;
    return node.attr_ints("axes", {});
  }
  const ir::Tensor* t = input_or_null(in, index);
  if (t == nullptr) return std::nullopt;
  return to_int64s(*t);
}

Expected<ir::Shape> reshape_target(const ir::Node& node, const ir::Shape& in_shape,
                                   const std::vector<int64_t>& spec, bool allow_zero) {
  ir::Shape out(spec.size());
  int64_t infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == 0 && !allow_zero) {
      if (i >= in_shape.size())
        return node_error(node, "shape[{}] = 0 has no input dim to copy", i);
      d = in_shape[i];
    }
    if (d == -1) {
      if (infer_at >= 0) return node_error(node, "shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0) return node_error(node, "shape[{}] = {} is invalid", i, d);
    out[i] = d;
    known *= d;
  }
  const int64_t total = ir::num_elements(in_shape);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return node_error(node, "cannot reshape {} to {}", ir::shape_str(in_shape),
                        ir::shape_str(spec));
    }
    out[static_cast<size_t>(infer_at)] = total / known;
  }
  if (ir::num_elements(out) != total) {
    return node_error(node, "cannot reshape {} ({} elements) to {}", ir::shape_str(in_shape), total,
                      ir::shape_str(out));
  }
  return out;
}

bool wants_output(const ir::Node& node, size_t i) {
  return i < node.outputs.size() && !node.outputs[i].empty();
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_reshape(const KernelContext& ctx) {
  const bool allow_zero = ctx.node.attr_int("allowzero", 0) != 0;
  return make_kernel([node = ctx.node, allow_zero](Inputs in, Outputs out, Allocator&) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    PTQ_ASSIGN_OR_RETURN(ir::Shape shape,
                         reshape_target(node, in[0]->shape(), to_int64s(*in[1]), allow_zero));
    out[0] = view_as(*in[0], std::move(shape));
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_flatten(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", 1);
  return make_kernel([node = ctx.node, axis_attr](Inputs in, Outputs out, Allocator&) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Shape& s = in[0]->shape();
    const auto rank = static_cast<int64_t>(s.size());
    // Flatten's axis may equal rank (everything in the outer dim).
    if (axis_attr < -rank || axis_attr > rank) {
      return node_error(node, "axis {} is out of range for rank {}", axis_attr, rank);
    }
    const auto axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
    out[0] = view_as(*in[0], {dims_product(s, 0, axis), dims_product(s, axis, s.size())});
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_squeeze(const KernelContext& ctx) {
  const bool from_input = ctx.opset >= 13;
  return make_kernel([node = ctx.node, from_input](Inputs in, Outputs out,
                                                   Allocator&) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Shape& s = in[0]->shape();
    auto axes = axes_of(node, in, 1, from_input);
    ir::Shape shape;
    if (!axes) {
      for (int64_t d : s) {
        if (d != 1) shape.push_back(d);
      }
    } else {
      PTQ_ASSIGN_OR_RETURN(auto norm, normalize_axes(node, *axes, static_cast<int64_t>(s.size())));
      for (size_t i = 0; i < s.size(); ++i) {
        const bool drop = std::binary_search(norm.begin(), norm.end(), static_cast<int64_t>(i));
        if (drop && s[i] != 1)
          return node_error(node, "cannot squeeze axis {} of size {}", i, s[i]);
        if (!drop) shape.push_back(s[i]);
      }
    }
    out[0] = view_as(*in[0], std::move(shape));
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_unsqueeze(const KernelContext& ctx) {
  const bool from_input = ctx.opset >= 13;
  return make_kernel([node = ctx.node, from_input](Inputs in, Outputs out,
                                                   Allocator&) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, from_input ? 2 : 1));
    const ir::Shape& s = in[0]->shape();
    auto axes = axes_of(node, in, 1, from_input);
    if (!axes) return node_error(node, "axes are missing");
    const auto rank = static_cast<int64_t>(s.size() + axes->size());
    PTQ_ASSIGN_OR_RETURN(auto norm, normalize_axes(node, *axes, rank));
    ir::Shape shape;
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i) {
      if (std::binary_search(norm.begin(), norm.end(), i)) {
        shape.push_back(1);
      } else {
        shape.push_back(s[next++]);
      }
    }
    out[0] = view_as(*in[0], std::move(shape));
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_identity(const KernelContext& ctx) {
  return make_kernel([node = ctx.node](Inputs in, Outputs out, Allocator&) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    out[0] = in[0]->view();
    return Status::ok();
  });
}

// Dropout at inference is the identity; the optional mask is all true. Training mode with a
// non-zero ratio is random and is refused rather than silently ignored.
Expected<std::unique_ptr<Kernel>> make_dropout(const KernelContext& ctx) {
  const bool inputs_from_12 = ctx.opset >= 12;
  return make_kernel([node = ctx.node, inputs_from_12](Inputs in, Outputs out,
                                                        Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    if (inputs_from_12) {
      const ir::Tensor* ratio = input_or_null(in, 1);
      const ir::Tensor* training = input_or_null(in, 2);
      const bool train = training != nullptr && training->size() == 1 && training->as_int64(0);
      const double r = ratio != nullptr && ratio->size() == 1 ? ratio->as_double(0) : 0.5;
      if (train && r != 0.0) {
        return node_error(node, "training-mode dropout (ratio {}) is random and not supported", r);
      }
    }
    out[0] = in[0]->view();
    if (wants_output(node, 1) && out.size() > 1) {
      out[1] = alloc.allocate(ir::DType::kBool, in[0]->shape());
      std::fill_n(out[1].data<bool>(), out[1].size(), true);
    }
    return Status::ok();
  });
}

// Shape (start/end from opset 15, clamped like Python slices).
Expected<std::unique_ptr<Kernel>> make_shape(const KernelContext& ctx) {
  const int64_t start_attr = ctx.node.attr_int("start", 0);
  const std::optional<int64_t> end_attr =
      ctx.node.has_attr("end") ? std::optional<int64_t>(ctx.node.attr_int("end", 0)) : std::nullopt;
  return make_kernel([node = ctx.node, start_attr, end_attr](Inputs in, Outputs out,
                                                             Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Shape& s = in[0]->shape();
    const auto rank = static_cast<int64_t>(s.size());
    auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    const int64_t start = clamp(start_attr);
    const int64_t end = std::max(start, end_attr ? clamp(*end_attr) : rank);
    out[0] = alloc.allocate(ir::DType::kInt64, {end - start});
    std::copy(s.begin() + start, s.begin() + end, out[0].data<int64_t>());
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_size(const KernelContext& ctx) {
  return make_kernel([node = ctx.node](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    out[0] = alloc.allocate(ir::DType::kInt64, {});
    out[0].data<int64_t>()[0] = in[0]->size();
    return Status::ok();
  });
}

}  // namespace ptq::runtime::cpu
