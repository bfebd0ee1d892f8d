// Op attributes as ONNX defines them, read the same way by every backend (the CPU kernels and
// the Vulkan ops): errors naming the node, axes, shapes, integer inputs (axes, pads, shapes
// given as tensors) and the window of a convolution or pooling op resolved against actual dims.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::runtime {

// An invalid-input error prefixed by the node's label: "Conv 'conv1': …".
template <typename... Args>
Status node_error(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return invalid_input("{}: {}", node.label(), fmt::format(f, std::forward<Args>(args)...));
}

// Maps a possibly negative axis into [0, rank); fails naming the node when out of range.
Expected<int64_t> normalize_axis(const ir::Node& node, int64_t axis, int64_t rank);

// Product of dims [begin, end) (those past the shape's rank count as 1).
int64_t dims_product(const ir::Shape& shape, size_t begin, size_t end);

// Integer tensor (int32/int64/…) to a vector of int64 (axes, shapes, pads given as inputs).
std::vector<int64_t> to_int64s(const ir::Tensor& t);

// The window of Conv, ConvTranspose and the pooling ops: kernel, strides, dilations, pads and
// auto_pad.
struct Window {
  std::vector<int64_t> kernel;     // per spatial dim
  std::vector<int64_t> strides;    // default 1
  std::vector<int64_t> dilations;  // default 1
  std::vector<int64_t> pads;       // begin..., end... (resolved for auto_pad by *_output_dims)
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;          // pooling only

  size_t rank() const { return kernel.size(); }
  int64_t pad_begin(size_t i) const { return pads[i]; }
  int64_t pad_end(size_t i) const { return pads[i + rank()]; }
  int64_t extent(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
};

// Reads the window attributes; `kernel` comes from the weights (Conv) or kernel_shape (pooling).
Expected<Window> read_window(const ir::Node& node, std::vector<int64_t> kernel);

// Output spatial dims for a forward window (Conv, pooling) over `in`; also fixes the pads of
// `w` for auto_pad. ceil_mode drops a last window that would start in the end padding.
Expected<std::vector<int64_t>> forward_output_dims(const ir::Node& node, Window& w,
                                                   const std::vector<int64_t>& in);

// Output spatial dims of a ConvTranspose over `in` (output_padding and output_shape read from
// the node); also fixes the pads of `w` for auto_pad or output_shape.
Expected<std::vector<int64_t>> transpose_output_dims(const ir::Node& node, Window& w,
                                                     const std::vector<int64_t>& in);

}  // namespace ptq::runtime
