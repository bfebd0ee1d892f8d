// The reference LSTM, GRU and RNN: each (direction, batch) sequence on its own, the state and
// every sum in double, written out as ONNX's operator definitions state the cells.
#include "recurrent.h"

namespace ptq::runtime::cpu::reference {

namespace {

// The weights of one direction, as T.
template <typename T>
struct DirectionWeights {
  const T* w = nullptr;   // [gates * hidden, input]
  const T* r = nullptr;   // [gates * hidden, hidden]
  const T* wb = nullptr;  // [gates * hidden] or null
  const T* rb = nullptr;
  const T* p = nullptr;   // LSTM peepholes i, o, f: [3 * hidden] or null
};

template <typename T>
DirectionWeights<T> weights_of(const RecurrentSpec& spec, const RecurrentCall& c, int64_t d) {
  const int64_t gh = spec.gates() * c.hidden;
  DirectionWeights<T> dw;
  dw.w = c.w->data<T>() + d * gh * c.input;
  dw.r = c.r->data<T>() + d * gh * c.hidden;
  if (c.b != nullptr) {
    dw.wb = c.b->data<T>() + d * 2 * gh;
    dw.rb = dw.wb + gh;
  }
  if (c.p != nullptr) dw.p = c.p->data<T>() + d * 3 * c.hidden;
  return dw;
}

// sum_i v[i] * m[row, i] over a row-major matrix with n columns, plus bias[row] if any.
template <typename T, typename V>
double dot_row(const T* m, int64_t row, const V* v, int64_t n, const T* bias) {
  double acc = bias != nullptr ? static_cast<double>(bias[row]) : 0.0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(m[row * n + i]) * v[i];
  return acc;
}

// One step of one sequence: x the input row, h and c the state (updated in place).
template <typename T>
class Stepper {
 public:
  Stepper(const RecurrentSpec& spec, const RecurrentCall& call, int64_t d)
      : spec_(spec), call_(call), d_(d), dw_(weights_of<T>(spec, call, d)) {}

  void step(const T* x, std::vector<double>& h, std::vector<double>& c) const {
    switch (spec_.cell) {
      case Cell::kRnn: return rnn(x, h);
      case Cell::kGru: return gru(x, h);
      case Cell::kLstm: return lstm(x, h, c);
    }
  }

 private:
  // Gate g's row j: X·Wᵀ + Wb and H·Rᵀ + Rb.
  double xw(const T* x, int g, int64_t j) const {
    return dot_row(dw_.w, g * call_.hidden + j, x, call_.input, dw_.wb);
  }
  double hr(const std::vector<double>& h, int g, int64_t j) const {
    return dot_row(dw_.r, g * call_.hidden + j, h.data(), call_.hidden, dw_.rb);
  }
  double f(int k, double v) const { return spec_.act(d_, k)(spec_.clipped(v)); }

  void rnn(const T* x, std::vector<double>& h) const {
    std::vector<double> next(h.size());
    for (int64_t j = 0; j < call_.hidden; ++j) next[j] = f(0, xw(x, 0, j) + hr(h, 0, j));
    h = std::move(next);
  }

  void gru(const T* x, std::vector<double>& h) const {
    const int64_t n = call_.hidden;
    std::vector<double> z(n), r(n), rh(n), next(n);
    for (int64_t j = 0; j < n; ++j) {
      z[j] = f(0, xw(x, 0, j) + hr(h, 0, j));
      r[j] = f(0, xw(x, 1, j) + hr(h, 1, j));
      rh[j] = r[j] * h[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      // linear_before_reset: r ⊙ (H·Rhᵀ + Rbh); else (r ⊙ H)·Rhᵀ + Rbh.
      const double rec = spec_.linear_before_reset ? r[j] * hr(h, 2, j) : hr(rh, 2, j);
      const double cand = f(1, xw(x, 2, j) + rec);
      next[j] = (1.0 - z[j]) * cand + z[j] * h[j];
    }
    h = std::move(next);
  }

  void lstm(const T* x, std::vector<double>& h, std::vector<double>& c) const {
    const int64_t n = call_.hidden;
    auto peep = [&](int k, int64_t j) {
      return dw_.p ? static_cast<double>(dw_.p[k * n + j]) : 0.0;
    };
    std::vector<double> next_h(n);
    for (int64_t j = 0; j < n; ++j) {
      const double i = f(0, xw(x, 0, j) + hr(h, 0, j) + peep(0, j) * c[j]);
      const double fg = f(0, xw(x, 2, j) + hr(h, 2, j) + peep(2, j) * c[j]);
      const double cand = f(1, xw(x, 3, j) + hr(h, 3, j));
      const double cell = fg * c[j] + i * cand;
      const double o = f(0, xw(x, 1, j) + hr(h, 1, j) + peep(1, j) * cell);
      next_h[j] = o * spec_.act(d_, 2)(cell);
      c[j] = cell;
    }
    h = std::move(next_h);
  }

  const RecurrentSpec& spec_;
  const RecurrentCall& call_;
  int64_t d_;
  DirectionWeights<T> dw_;
};

// The initial state row (d, b) of `init`, or zeros.
template <typename T>
std::vector<double> initial_state(const RecurrentCall& c, const ir::Tensor* init, int64_t d,
                                  int64_t b) {
  std::vector<double> s(static_cast<size_t>(c.hidden), 0.0);
  if (init == nullptr) return s;
  const T* row = init->data<T>() + c.state_row(d, b) * c.hidden;
  for (int64_t j = 0; j < c.hidden; ++j) s[j] = static_cast<double>(row[j]);
  return s;
}

template <typename T>
void store(const std::vector<double>& v, T* out) {
  for (size_t j = 0; j < v.size(); ++j) out[j] = static_cast<T>(v[j]);
}

}  // namespace

template <typename T>
void recurrent(const RecurrentSpec& spec, const RecurrentCall& call, RecurrentOutputs<T> out,
               int threads) {
  zero_padding(call, out.y);
  parallel_for(threads, call.dirs * call.batch, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t d = task / call.batch, b = task % call.batch;
      const Stepper<T> stepper(spec, call, d);
      std::vector<double> h = initial_state<T>(call, call.h0, d, b);
      std::vector<double> c = initial_state<T>(call, call.c0, d, b);
      const int64_t len = call.lengths[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = spec.backwards(d) ? len - 1 - s : s;
        stepper.step(call.x->data<T>() + call.x_row(t, b) * call.input, h, c);
        if (out.y) store(h, out.y + call.y_row(t, d, b) * call.hidden);
      }
      if (out.y_h) store(h, out.y_h + call.state_row(d, b) * call.hidden);
      if (out.y_c) store(c, out.y_c + call.state_row(d, b) * call.hidden);
    }
  });
}

template void recurrent<float>(const RecurrentSpec&, const RecurrentCall&,
                               RecurrentOutputs<float>, int);
template void recurrent<double>(const RecurrentSpec&, const RecurrentCall&,
                                RecurrentOutputs<double>, int);

}  // namespace ptq::runtime::cpu::reference
