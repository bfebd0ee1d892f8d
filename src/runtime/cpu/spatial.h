// Window geometry shared by Conv, ConvTranspose and the pooling ops: kernel, strides,
// dilations, pads and auto_pad as ONNX defines them, resolved against actual input dims.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace ptq::runtime::cpu {

struct Window {
  std::vector<int64_t> kernel;     // per spatial dim
  std::vector<int64_t> strides;    // default 1
  std::vector<int64_t> dilations;  // default 1
  std::vector<int64_t> pads;       // begin..., end... (resolved for auto_pad by resolve())
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;          // pooling only

  size_t rank() const { return kernel.size(); }
  int64_t pad_begin(size_t i) const { return pads[i]; }
  int64_t pad_end(size_t i) const { return pads[i + rank()]; }
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// Reads the window attributes; `kernel` comes from the weights (Conv) or kernel_shape (pooling).
inline Expected<Window> read_window(const ir::Node& node, std::vector<int64_t> kernel) {
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

// Output spatial dims for a forward window (Conv, pooling) over `in`; also fixes the pads of
// `w` for auto_pad. ceil_mode drops a last window that would start in the end padding.
inline Expected<std::vector<int64_t>> forward_output_dims(const ir::Node& node, Window& w,
                                                          const std::vector<int64_t>& in) {
  const size_t r = w.rank();
  if (in.size() != r) return node_error(node, "input has {} spatial dims, kernel has {}", in.size(), r);
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

}  // namespace ptq::runtime::cpu
