// The fast float32 LSTM, GRU and RNN. Per direction, X·Wᵀ for every step is one GEMM; then each
// step multiplies all batch states by Rᵀ in one GEMM (a GEMV at batch 1) and combines the gates
// row by row. sgemm's tiles and the row split do not depend on the thread count, so results
// are bit-identical for any --threads. Batches whose sequence has ended keep their state.
// Compiled once per instruction-set level, on the level's own sgemm; the attributes, operand
// checks and reference kernel are shared (recurrent.cpp, recurrent_ref.cpp).
// recurrent.h is shared code: included before isa_begin.h's target pragma, so its inline and
// template functions (the activations, zero_padding) are compiled for the baseline in every copy.
#include "recurrent.h"

#include "isa_begin.h"  // this file is compiled once per instruction-set level

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

class Direction {
 public:
  Direction(const RecurrentSpec& spec, const RecurrentCall& call, int64_t d, int threads)
      : spec_(spec),
        c_(call),
        d_(d),
        threads_(threads),
        n_(call.hidden),
        gh_(spec.gates() * call.hidden) {}

  void run(RecurrentOutputs<float> out) {
    project_inputs();
    fold_bias();
    init_state(c_.h0, h_);
    init_state(c_.c0, cell_);
    hr_.resize(static_cast<size_t>(c_.batch * gh_));
    if (spec_.cell == Cell::kGru) gru_scratch_.resize(static_cast<size_t>(3 * c_.batch * n_));
    if (c_.batch == 0) return;
    const int64_t steps = *std::max_element(c_.lengths.begin(), c_.lengths.end());
    for (int64_t s = 0; s < steps; ++s) step(s, out.y);
    for (int64_t b = 0; b < c_.batch; ++b) {
      const int64_t at = c_.state_row(d_, b) * n_;
      if (out.y_h) std::copy_n(h_.data() + b * n_, n_, out.y_h + at);
      if (out.y_c) std::copy_n(cell_.data() + b * n_, n_, out.y_c + at);
    }
  }

 private:
  const float* w() const { return c_.w->data<float>() + d_ * gh_ * c_.input; }
  const float* r() const { return c_.r->data<float>() + d_ * gh_ * n_; }
  // GRU with linear_before_reset keeps Rbh inside the reset product.
  bool reset_bias_apart() const { return spec_.cell == Cell::kGru && spec_.linear_before_reset; }

  // xw_ = X·Wᵀ, one row per X row.
  void project_inputs() {
    const int64_t rows = c_.seq * c_.batch;
    xw_.resize(static_cast<size_t>(rows * gh_));
    sgemm(false, true, rows, gh_, c_.input, c_.x->data<float>(), c_.input, w(), c_.input,
          xw_.data(), gh_, threads_);
  }

  // bias_ = Wb + Rb (without Rbh when it stays apart: rbh_).
  void fold_bias() {
    bias_.assign(static_cast<size_t>(gh_), 0.0f);
    rbh_.assign(static_cast<size_t>(n_), 0.0f);
    if (c_.b == nullptr) return;
    const float* wb = c_.b->data<float>() + d_ * 2 * gh_;
    const float* rb = wb + gh_;
    for (int64_t j = 0; j < gh_; ++j) bias_[j] = wb[j] + rb[j];
    if (!reset_bias_apart()) return;
    for (int64_t j = 0; j < n_; ++j) {
      bias_[2 * n_ + j] = wb[2 * n_ + j];
      rbh_[j] = rb[2 * n_ + j];
    }
  }

  void init_state(const ir::Tensor* init, std::vector<float>& state) const {
    state.assign(static_cast<size_t>(c_.batch * n_), 0.0f);
    if (init == nullptr) return;
    for (int64_t b = 0; b < c_.batch; ++b) {
      std::copy_n(init->data<float>() + c_.state_row(d_, b) * n_, n_, state.data() + b * n_);
    }
  }

  // The time of step s of batch b, or -1 when its sequence has ended.
  int64_t time(int64_t s, int64_t b) const {
    const int64_t len = c_.lengths[static_cast<size_t>(b)];
    if (s >= len) return -1;
    return spec_.backwards(d_) ? len - 1 - s : s;
  }

  // Calls fn(b, t) for every batch still running at step s, rows split over the threads.
  template <typename F>
  void for_running(int64_t s, F&& fn) const {
    const int64_t per = std::max<int64_t>(1, 4096 / std::max<int64_t>(gh_, 1));
    parallel_for(
        threads_, c_.batch,
        [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b) {
            const int64_t t = time(s, b);
            if (t >= 0) fn(b, t);
          }
        },
        per);
  }

  void step(int64_t s, float* y) {
    // GRU without linear_before_reset multiplies r ⊙ H by Rhᵀ: the gates z, r first.
    const int64_t cols = spec_.cell == Cell::kGru && !spec_.linear_before_reset ? 2 * n_ : gh_;
    sgemm(false, true, c_.batch, cols, n_, h_.data(), n_, r(), n_, hr_.data(), gh_, threads_);
    if (spec_.cell == Cell::kGru) {
      for_running(s, [&](int64_t b, int64_t t) { gru_gates(b, t); });
      if (cols < gh_) {
        sgemm(false, true, c_.batch, n_, n_, gru_scratch_.data() + 2 * c_.batch * n_, n_,
              r() + 2 * n_ * n_, n_, hr_.data() + 2 * n_, gh_, threads_);
      }
    }
    for_running(s, [&](int64_t b, int64_t t) {
      const float* xw = xw_.data() + c_.x_row(t, b) * gh_;
      switch (spec_.cell) {
        case Cell::kRnn:
          rnn_row(b, xw);
          break;
        case Cell::kGru:
          gru_row(b, xw);
          break;
        case Cell::kLstm:
          lstm_row(b, xw);
          break;
      }
      if (y) std::copy_n(h_.data() + b * n_, n_, y + c_.y_row(t, d_, b) * n_);
    });
  }

  // Gate g's pre-activation for row b, column j (without peepholes).
  float gate(const float* xw, int64_t b, int g, int64_t j) const {
    const int64_t k = g * n_ + j;
    return xw[k] + bias_[k] + hr_[b * gh_ + k];
  }
  float f(int k, float v) const { return spec_.act(d_, k)(spec_.clipped(v)); }

  void rnn_row(int64_t b, const float* xw) {
    float* h = h_.data() + b * n_;
    for (int64_t j = 0; j < n_; ++j) h[j] = f(0, gate(xw, b, 0, j));
  }

  // z and r of row b into the scratch ([z | r | r ⊙ H], each batch × hidden).
  void gru_gates(int64_t b, int64_t t) {
    const float* xw = xw_.data() + c_.x_row(t, b) * gh_;
    const float* h = h_.data() + b * n_;
    float* z = gru_scratch_.data() + b * n_;
    float* rg = z + c_.batch * n_;
    float* rh = rg + c_.batch * n_;
    for (int64_t j = 0; j < n_; ++j) {
      z[j] = f(0, gate(xw, b, 0, j));
      rg[j] = f(0, gate(xw, b, 1, j));
      rh[j] = rg[j] * h[j];
    }
  }

  void gru_row(int64_t b, const float* xw) {
    const float* z = gru_scratch_.data() + b * n_;
    const float* rg = z + c_.batch * n_;
    const float* hr = hr_.data() + b * gh_ + 2 * n_;
    float* h = h_.data() + b * n_;
    for (int64_t j = 0; j < n_; ++j) {
      const float rec = reset_bias_apart() ? rg[j] * (hr[j] + rbh_[j]) : hr[j];
      const float cand = f(1, xw[2 * n_ + j] + bias_[2 * n_ + j] + rec);
      h[j] = (1.0f - z[j]) * cand + z[j] * h[j];
    }
  }

  void lstm_row(int64_t b, const float* xw) {
    const float* p = c_.p ? c_.p->data<float>() + d_ * 3 * n_ : nullptr;
    float* h = h_.data() + b * n_;
    float* c = cell_.data() + b * n_;
    const RnnActivation& act_h = spec_.act(d_, 2);
    for (int64_t j = 0; j < n_; ++j) {
      const float pi = p ? p[j] * c[j] : 0.0f, pf = p ? p[2 * n_ + j] * c[j] : 0.0f;
      const float i = f(0, gate(xw, b, 0, j) + pi);
      const float fg = f(0, gate(xw, b, 2, j) + pf);
      const float cand = f(1, gate(xw, b, 3, j));
      c[j] = fg * c[j] + i * cand;
      const float o = f(0, gate(xw, b, 1, j) + (p ? p[n_ + j] * c[j] : 0.0f));
      h[j] = o * act_h(c[j]);
    }
  }

  const RecurrentSpec& spec_;
  const RecurrentCall& c_;
  int64_t d_;
  int threads_;
  int64_t n_, gh_;
  std::vector<float> xw_, bias_, rbh_, h_, cell_, hr_, gru_scratch_;
};

void recurrent_fast(const RecurrentSpec& spec, const RecurrentCall& call,
                    RecurrentOutputs<float> out, int threads) {
  zero_padding(call, out.y);
  for (int64_t d = 0; d < call.dirs; ++d) Direction(spec, call, d, threads).run(out);
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_lstm(const KernelContext& ctx) {
  return make_recurrent(ctx, Cell::kLstm, &recurrent_fast);
}
Expected<std::unique_ptr<Kernel>> make_gru(const KernelContext& ctx) {
  return make_recurrent(ctx, Cell::kGru, &recurrent_fast);
}
Expected<std::unique_ptr<Kernel>> make_rnn(const KernelContext& ctx) {
  return make_recurrent(ctx, Cell::kRnn, &recurrent_fast);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
