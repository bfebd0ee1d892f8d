// Cast and CastLike: conversions between float32/float16/bfloat16/double, the integer types,
// bool and string, with C conversion semantics (float to int truncates toward zero; anything
// to bool is `x != 0`). Half types go through float32.
#include <charconv>
#include <cstring>
#include <string>
#include <system_error>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

template <typename F>
bool dispatch_plain(ir::DType t, F&& fn) {
  return dispatch_all(t, std::forward<F>(fn));
}

// Half <-> float32 (the only conversions that touch half bits).
void widen_half(const ir::Tensor& in, ir::Tensor& out, int threads) {
  if (in.dtype() == ir::DType::kFloat16) {
    map_unary<uint16_t, float>(in, out, threads, ir::half_to_float);
  } else {
    map_unary<uint16_t, float>(in, out, threads, ir::bfloat16_to_float);
  }
}

void narrow_to_half(const ir::Tensor& in, ir::Tensor& out, int threads) {
  if (out.dtype() == ir::DType::kFloat16) {
    map_unary<float, uint16_t>(in, out, threads, ir::float_to_half);
  } else {
    map_unary<float, uint16_t>(in, out, threads, ir::float_to_bfloat16);
  }
}

// Between the plain (non-half, non-string) types.
void convert_plain(const ir::Tensor& in, ir::Tensor& out, int threads) {
  dispatch_plain(in.dtype(), [&](auto in_tag) {
    using In = typename decltype(in_tag)::type;
    dispatch_plain(out.dtype(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      if constexpr (std::is_same_v<In, Out>) {
        if (in.nbytes() > 0) std::memcpy(out.raw(), in.raw(), in.nbytes());
      } else {
        map_unary<In, Out>(in, out, threads, [](In x) { return static_cast<Out>(x); });
      }
    });
  });
}

// Shortest text that reads back to the same value, as NumPy prints floats.
Status to_strings(const ir::Node& node, const ir::Tensor& in, ir::Tensor& out) {
  const ir::Tensor f = convert(in, ir::DType::kFloat64, 1);
  std::vector<std::string>& s = out.strings();
  s.assign(static_cast<size_t>(in.size()), std::string());  // pooled tensors carry no strings
  for (int64_t i = 0; i < in.size(); ++i) {
    char buf[64];
    std::to_chars_result r{};
    if (in.dtype() == ir::DType::kFloat32) {
      r = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(f.data<double>()[i]));
    } else if (is_float(in.dtype())) {
      r = std::to_chars(buf, buf + sizeof(buf), f.data<double>()[i]);
    } else {
      r = std::to_chars(buf, buf + sizeof(buf), in.as_int64(i));
    }
    if (r.ec != std::errc()) return node_error(node, "cannot format element {}", i);
    s[static_cast<size_t>(i)] = std::string(buf, r.ptr);
  }
  return Status::ok();
}

Status from_strings(const ir::Node& node, const ir::Tensor& in, ir::Tensor& out) {
  ir::Tensor d(ir::DType::kFloat64, in.shape());
  if (static_cast<int64_t>(in.strings().size()) != in.size()) {
    return node_error(node, "string input holds {} strings for shape {}", in.strings().size(),
                      ir::shape_str(in.shape()));
  }
  for (int64_t i = 0; i < in.size(); ++i) {
    const std::string& text = in.strings()[static_cast<size_t>(i)];
    // from_chars takes no leading '+' ("+INF" is what NumPy writes for infinity).
    const size_t skip = !text.empty() && text[0] == '+' ? 1 : 0;
    double v = 0;
    auto r = std::from_chars(text.data() + skip, text.data() + text.size(), v);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
      return node_error(node, "cannot parse '{}' as a number", text);
    }
    d.data<double>()[i] = v;
  }
  convert_into(d, out, 1);
  return Status::ok();
}

Status cast_run(const ir::Node& node, const ir::Tensor& in, ir::DType to, ir::Tensor& out,
                Allocator& alloc, int threads) {
  out = alloc.allocate(to, in.shape());
  if (in.dtype() == ir::DType::kString && to == ir::DType::kString) {
    out.strings() = in.strings();
    return Status::ok();
  }
  if (to == ir::DType::kString) return to_strings(node, in, out);
  if (in.dtype() == ir::DType::kString) return from_strings(node, in, out);
  if (ir::dtype_size(in.dtype()) == 0) return unsupported_dtype(node, in.dtype());
  convert_into(in, out, threads);
  return Status::ok();
}

bool castable(ir::DType t) { return t == ir::DType::kString || ir::dtype_size(t) > 0; }

}  // namespace

void convert_into(const ir::Tensor& in, ir::Tensor& out, int threads) {
  const ir::DType from = in.dtype();
  const ir::DType to = out.dtype();
  if (from == to) {
    if (in.nbytes() > 0) std::memcpy(out.raw(), in.raw(), in.nbytes());
    return;
  }
  if (is_half(from) && to == ir::DType::kFloat32) return widen_half(in, out, threads);
  if (from == ir::DType::kFloat32 && is_half(to)) return narrow_to_half(in, out, threads);
  if (is_half(from)) {
    ir::Tensor f(ir::DType::kFloat32, in.shape());
    widen_half(in, f, threads);
    return convert_into(f, out, threads);
  }
  if (is_half(to)) {
    ir::Tensor f(ir::DType::kFloat32, in.shape());
    convert_plain(in, f, threads);
    return narrow_to_half(f, out, threads);
  }
  convert_plain(in, out, threads);
}

ir::Tensor convert(const ir::Tensor& in, ir::DType to, int threads) {
  ir::Tensor out(to, in.shape());
  convert_into(in, out, threads);
  return out;
}

Expected<std::unique_ptr<Kernel>> make_cast(const KernelContext& ctx) {
  const ir::Node node = ctx.node;
  if (!node.has_attr("to")) return node_error(node, "attribute 'to' is missing");
  const auto to = static_cast<ir::DType>(node.attr_int("to", 0));
  if (!castable(to))
    return node_error(node, "cannot cast to element type {}", node.attr_int("to", 0));
  return make_kernel([node, to, threads = ctx.threads](Inputs in, Outputs out, Allocator& alloc) {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    return cast_run(node, *in[0], to, out[0], alloc, threads);
  });
}

Expected<std::unique_ptr<Kernel>> make_cast_like(const KernelContext& ctx) {
  return make_kernel(
      [node = ctx.node, threads = ctx.threads](Inputs in, Outputs out, Allocator& alloc) {
        PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
        if (!castable(in[1]->dtype())) return unsupported_dtype(node, in[1]->dtype());
        return cast_run(node, *in[0], in[1]->dtype(), out[0], alloc, threads);
      });
}

}  // namespace ptq::runtime::cpu
