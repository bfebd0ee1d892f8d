// Pad: constant, reflect, edge and wrap modes; pads as attribute (< 11) or input (>= 11), axes
// input from opset 18. Negative pads crop.
#include <cstring>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// The input index that output index `i` (already shifted by the begin pad) reads, or -1 for
// the constant value.
int64_t source_index(PadMode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  if (n == 0) return -1;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t j = ((i % period) + period) % period;
      return j < n ? j : period - j;
    }
  }
  return -1;
}

struct PadSpec {
  PadMode mode = PadMode::kConstant;
  std::vector<int64_t> begin;  // per dim
  ir::Shape out;
};

template <typename T>
void pad_rows(const ir::Tensor& x, ir::Tensor& y, const PadSpec& spec, T value, int threads) {
  const ir::Shape& in = x.shape();
  const ir::Shape& out = spec.out;
  const size_t rank = in.size();
  const std::vector<int64_t> in_strides = strides_of(in);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t cols = out.back();
  const int64_t rows = cols == 0 ? 0 : y.size() / cols;
  const int64_t in_cols = in.back();
  const int64_t shift = spec.begin.back();
  parallel_for(threads, rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* row = dst + r * cols;
      int64_t off = 0;
      int64_t rem = r;
      bool constant_row = false;
      for (size_t d = rank - 1; d-- > 0;) {
        const int64_t s = source_index(spec.mode, rem % out[d] - spec.begin[d], in[d]);
        rem /= out[d];
        if (s < 0) constant_row = true;
        off += s * in_strides[d];
      }
      if (constant_row) {
        std::fill(row, row + cols, value);
        continue;
      }
      const T* src_row = src + off;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t s = source_index(spec.mode, c - shift, in_cols);
        row[c] = s < 0 ? value : src_row[s];
      }
    }
  }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(cols, 1)));
}

Expected<PadMode> parse_mode(const ir::Node& node) {
  const std::string m = node.attr_string("mode", "constant");
  if (m == "constant") return PadMode::kConstant;
  if (m == "reflect") return PadMode::kReflect;
  if (m == "edge") return PadMode::kEdge;
  if (m == "wrap") return PadMode::kWrap;
  return node_error(node, "unknown mode '{}'", m);
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_pad(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(const PadMode mode, parse_mode(ctx.node));
  const bool from_inputs = ctx.opset >= 11;
  const std::vector<int64_t> pads_attr =
      ctx.node.attr_ints(ctx.opset < 2 ? "paddings" : "pads", {});
  const double value_attr = ctx.node.attr_float("value", 0.0f);
  return make_kernel([node = ctx.node, threads = ctx.threads, mode, from_inputs, pads_attr,
                      value_attr](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, from_inputs ? 2 : 1));
    const ir::Tensor& x = *in[0];
    const int64_t rank = x.rank();
    std::vector<int64_t> pads = from_inputs ? to_int64s(*in[1]) : pads_attr;
    std::vector<int64_t> axes;
    if (const ir::Tensor* a = from_inputs ? input_or_null(in, 3) : nullptr) {
      for (int64_t v : to_int64s(*a)) {
        PTQ_ASSIGN_OR_RETURN(int64_t n, normalize_axis(node, v, rank));
        axes.push_back(n);
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    const auto na = static_cast<int64_t>(axes.size());
    if (static_cast<int64_t>(pads.size()) != 2 * na) {
      return node_error(node, "pads has {} entries, expected {}", pads.size(), 2 * na);
    }
    PadSpec spec;
    spec.mode = mode;
    spec.begin.assign(static_cast<size_t>(rank), 0);
    spec.out = x.shape();
    for (int64_t i = 0; i < na; ++i) {
      const auto d = static_cast<size_t>(axes[static_cast<size_t>(i)]);
      const int64_t b = pads[static_cast<size_t>(i)];
      const int64_t e = pads[static_cast<size_t>(i + na)];
      spec.begin[d] = b;
      spec.out[d] = x.shape()[d] + b + e;
      if (spec.out[d] < 0) return node_error(node, "pads make axis {} negative", d);
      if (mode != PadMode::kConstant && x.shape()[d] == 0 && spec.out[d] > 0) {
        return node_error(node, "cannot pad empty axis {} in this mode", d);
      }
    }
    out[0] = alloc.allocate(x.dtype(), spec.out);
    // The constant in the data's type: input 2 (same dtype) or the float attribute.
    ir::Tensor value(x.dtype(), {});
    if (const ir::Tensor* v = from_inputs ? input_or_null(in, 2) : nullptr) {
      if (v->size() >= 1 && ir::dtype_size(v->dtype()) > 0) {
        convert_into(ir::Tensor::borrow(v->dtype(), {}, v->raw()), value, 1);
      }
    } else if (ir::dtype_size(x.dtype()) > 0) {
      ir::Tensor f(ir::DType::kFloat64, {});
      f.data<double>()[0] = value_attr;
      convert_into(f, value, 1);
    }
    bool ok = true;
    switch (ir::dtype_size(x.dtype())) {
      case 1: pad_rows<uint8_t>(x, out[0], spec, value.data<uint8_t>()[0], threads); break;
      case 2: pad_rows<uint16_t>(x, out[0], spec, value.data<uint16_t>()[0], threads); break;
      case 4: pad_rows<uint32_t>(x, out[0], spec, value.data<uint32_t>()[0], threads); break;
      case 8: pad_rows<uint64_t>(x, out[0], spec, value.data<uint64_t>()[0], threads); break;
      default: ok = false;
    }
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  });
}

}  // namespace ptq::runtime::cpu
