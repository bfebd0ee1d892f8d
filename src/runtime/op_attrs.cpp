#include "ptq/runtime/op_attrs.h"

#include <algorithm>

namespace ptq::runtime {

Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return node_error(node, "axis {} is out of range for rank {}", axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t dims_product(const ir::Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::vector<int64_t> to_int64s(const ir::Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = t.as_int64(i);
  return v;
}

Expected<Window> read_window(const ir::Node& node, std::vector<int64_t> kernel) {
  Window w;
  const size_t r = kernel.size();
  w.kernel = std::move(kernel);
  w.strides = node.attr_ints("strides", std::vector<int64_t>(r, 1));
  w.dilations = node.attr_ints("dilations", std::vector<int64_t>(r, 1));
  w.pads = node.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  w.auto_pad = node.attr_string("auto_pad", "NOTSET");
  w.ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  if (w.strides.size() != r || w.dilations.size() != r || w.pads.size() != 2 * r) {
    return node_error(node, "strides/dilations/pads do not match the {} spatial dims", r);
  }
  for (size_t i = 0; i < r; ++i) {
    if (w.kernel[i] <= 0 || w.strides[i] <= 0 || w.dilations[i] <= 0) {
      return node_error(node, "kernel, strides and dilations must be positive");
    }
  }
  for (int64_t p : w.pads) {
    if (p < 0) return node_error(node, "pads must not be negative");
  }
  if (w.auto_pad != "NOTSET" && w.auto_pad != "SAME_UPPER" && w.auto_pad != "SAME_LOWER" &&
      w.auto_pad != "VALID") {
    return node_error(node, "unknown auto_pad '{}'", w.auto_pad);
  }
  return w;
}

Expected<std::vector<int64_t>> forward_output_dims(const ir::Node& node, Window& w,
                                                   const std::vector<int64_t>& in) {
  const size_t r = w.rank();
  if (in.size() != r) {
    return node_error(node, "input has {} spatial dims, kernel has {}", in.size(), r);
  }
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t ext = w.extent(i);
    if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + w.strides[i] - 1) / w.strides[i];
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * w.strides[i] + ext - in[i]);
      const int64_t small = total / 2;
      w.pads[i] = w.auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads[i + r] = total - w.pads[i];
      continue;
    }
    if (w.auto_pad == "VALID") w.pads[i] = w.pads[i + r] = 0;
    const int64_t span = in[i] + w.pads[i] + w.pads[i + r] - ext;
    if (span < 0) {
      return node_error(node, "window {} (dilated) is larger than the padded input {} in dim {}",
                        ext, in[i] + w.pads[i] + w.pads[i + r], i);
    }
    out[i] = (w.ceil_mode ? (span + w.strides[i] - 1) / w.strides[i] : span / w.strides[i]) + 1;
    if (w.ceil_mode && (out[i] - 1) * w.strides[i] >= in[i] + w.pads[i]) --out[i];
  }
  return out;
}

Expected<std::vector<int64_t>> transpose_output_dims(const ir::Node& node, Window& w,
                                                     const std::vector<int64_t>& in) {
  const size_t r = w.rank();
  if (in.size() != r) {
    return node_error(node, "input has {} spatial dims, kernel has {}", in.size(), r);
  }
  const std::vector<int64_t> out_pad = node.attr_ints("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> out_shape = node.attr_ints("output_shape", {});
  if (out_pad.size() != r) return node_error(node, "output_padding must have {} values", r);
  if (!out_shape.empty() && out_shape.size() != r) {
    if (out_shape.size() != r + 2) return node_error(node, "output_shape must have {} values", r);
    out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  }
  const bool same = w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER";
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t full = w.strides[i] * (in[i] - 1) + out_pad[i] + w.extent(i);
    if (!out_shape.empty() || same) {
      out[i] = !out_shape.empty() ? out_shape[i] : in[i] * w.strides[i];
      const int64_t total = full - out[i];
      // Floor division, as ONNX's reference: a negative total (output_shape larger than the
      // natural size) extends the end.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pads[i] = w.auto_pad == "SAME_UPPER" ? half : total - half;
      w.pads[i + r] = total - w.pads[i];
    } else {
      if (w.auto_pad == "VALID") w.pads[i] = w.pads[i + r] = 0;
      out[i] = full - w.pads[i] - w.pads[i + r];
    }
    if (out[i] <= 0) return node_error(node, "output dim {} would be {}", i, out[i]);
  }
  return out;
}

}  // namespace ptq::runtime
