// LSTM, GRU and RNN: what their reference and fast kernels share. The cell's attributes are
// read once (RecurrentSpec), each call's operands checked once (RecurrentCall), which also says
// where a (time, batch) row lives in layout 0 ([seq, batch, …]) or layout 1 ([batch, seq, …]).
// Gate order in W, R and B is ONNX's: LSTM i, o, f, c; GRU z, r, h; RNN one gate.
// Compiled once (recurrent.cpp, recurrent_ref.cpp); the fast kernel is compiled once per
// instruction-set level (recurrent_fast.cpp), which includes this header before isa_begin.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kernel_util.h"

namespace ptq::runtime::cpu {

enum class Cell { kRnn, kGru, kLstm };

// An activation function ONNX lists for the recurrent ops, with its alpha and beta.
struct RnnActivation {
  enum class Kind {
    kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid,
    kElu, kSoftsign, kSoftplus,
  };
  Kind kind = Kind::kTanh;
  double alpha = 0.0, beta = 0.0;

  template <typename T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    switch (kind) {
      case Kind::kRelu: return x > T(0) ? x : T(0);
      case Kind::kTanh: return std::tanh(x);
      case Kind::kSigmoid: return T(1) / (T(1) + std::exp(-x));
      case Kind::kAffine: return a * x + b;
      case Kind::kLeakyRelu: return x >= T(0) ? x : a * x;
      case Kind::kThresholdedRelu: return x > a ? x : T(0);
      case Kind::kScaledTanh: return a * std::tanh(b * x);
      case Kind::kHardSigmoid: return std::clamp(a * x + b, T(0), T(1));
      case Kind::kElu: return x >= T(0) ? x : a * (std::exp(x) - T(1));
      case Kind::kSoftsign: return x / (T(1) + std::abs(x));
      case Kind::kSoftplus: return std::log1p(std::exp(x));
    }
    return x;
  }
};

// The attributes of one LSTM, GRU or RNN node.
struct RecurrentSpec {
  Cell cell = Cell::kRnn;
  int64_t hidden = -1;        // hidden_size; -1 when absent (taken from R)
  int directions = 1;         // 2 for bidirectional
  bool reverse = false;       // direction = "reverse"
  bool batch_first = false;   // layout = 1
  bool linear_before_reset = false;  // GRU only
  std::optional<double> clip;        // bounds every activation's input to [-clip, clip]
  // Per direction, the cell's functions: RNN f; GRU f, g; LSTM f, g, h.
  std::vector<RnnActivation> activations;

  int gates() const { return cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1; }
  int functions() const { return cell == Cell::kLstm ? 3 : cell == Cell::kGru ? 2 : 1; }
  const RnnActivation& act(int64_t direction, int k) const {
    return activations[static_cast<size_t>(direction * functions() + k)];
  }
  // Direction d runs from the last valid step to the first.
  bool backwards(int64_t d) const { return reverse || d == 1; }
  template <typename T>
  T clipped(T x) const {
    return clip ? std::clamp(x, static_cast<T>(-*clip), static_cast<T>(*clip)) : x;
  }
};

Expected<RecurrentSpec> read_recurrent_spec(const ir::Node& node, Cell cell);

// One call's checked operands: X, W, R and the optional B, sequence_lens, initial_h,
// initial_c and P (null when omitted), and the dims.
struct RecurrentCall {
  const ir::Tensor* x = nullptr;
  const ir::Tensor* w = nullptr;
  const ir::Tensor* r = nullptr;
  const ir::Tensor* b = nullptr;
  const ir::Tensor* h0 = nullptr;
  const ir::Tensor* c0 = nullptr;
  const ir::Tensor* p = nullptr;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batch_first = false;
  std::vector<int64_t> lengths;  // per batch, sequence_lens or seq

  // The row of X (and of X·Wᵀ) holding time t of batch b; each row has `input` elements.
  int64_t x_row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
  // The row of Y holding (t, direction d, b); each row has `hidden` elements.
  int64_t y_row(int64_t t, int64_t d, int64_t b) const {
    return batch_first ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b;
  }
  // The row of Y_h, Y_c, initial_h and initial_c holding (d, b).
  int64_t state_row(int64_t d, int64_t b) const {
    return batch_first ? b * dirs + d : d * batch + b;
  }
  ir::Shape y_shape() const {
    return batch_first ? ir::Shape{batch, seq, dirs, hidden} : ir::Shape{seq, dirs, batch, hidden};
  }
  ir::Shape state_shape() const {
    return batch_first ? ir::Shape{batch, dirs, hidden} : ir::Shape{dirs, batch, hidden};
  }
};

Expected<RecurrentCall> check_recurrent_call(const ir::Node& node, const RecurrentSpec& spec,
                                             Inputs inputs);

// The outputs Y, Y_h and Y_c of one call, each null when the node does not produce it.
template <typename T>
struct RecurrentOutputs {
  T* y = nullptr;
  T* y_h = nullptr;
  T* y_c = nullptr;
};

// Zeroes Y's rows past each batch's sequence length (no step writes them).
template <typename T>
void zero_padding(const RecurrentCall& call, T* y) {
  if (y == nullptr) return;
  for (int64_t b = 0; b < call.batch; ++b) {
    for (int64_t t = call.lengths[static_cast<size_t>(b)]; t < call.seq; ++t) {
      for (int64_t d = 0; d < call.dirs; ++d) {
        std::fill_n(y + call.y_row(t, d, b) * call.hidden, call.hidden, T(0));
      }
    }
  }
}

namespace reference {
// Every (direction, batch) sequence on its own, sums in double.
template <typename T>
void recurrent(const RecurrentSpec& spec, const RecurrentCall& call, RecurrentOutputs<T> out,
               int threads);
}  // namespace reference

// float32: X·Wᵀ for all steps as one GEMM, then one GEMM of the states by Rᵀ per step. Each
// instruction-set level has its own, on its own sgemm (recurrent_fast.cpp).
using RecurrentFast = void (*)(const RecurrentSpec& spec, const RecurrentCall& call,
                               RecurrentOutputs<float> out, int threads);

// The kernel of an LSTM, GRU or RNN node: `fast` for float32, the reference for other types or
// when ctx.reference asks for it. Each level's make_lstm/make_gru/make_rnn passes its own `fast`.
Expected<std::unique_ptr<Kernel>> make_recurrent(const KernelContext& ctx, Cell cell,
                                                 RecurrentFast fast);

}  // namespace ptq::runtime::cpu
