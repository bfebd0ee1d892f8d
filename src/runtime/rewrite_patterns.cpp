// The patterns the optimizer rewrites (optimizer.h): ops that exporters spell out in primitive
// nodes (LayerNorm before opset 17, Gelu before 20, HardSwish as Add/Clip/Mul/Div, SiLU, Mish)
// and Pow with exponent 2 or 0.5. Each matcher starts from one step and proposes candidates,
// longest first; rewrites.cpp checks that their inner values stay inside.
#include <algorithm>
#include <cmath>

#include "ptq/ir/builders.h"
#include "rewrite_match.h"

namespace ptq::runtime {

namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCube = 0.044715;

Candidate candidate(std::vector<size_t> steps, int32_t output, std::string op,
                    std::vector<std::string> inputs) {
  Candidate c;
  c.steps = std::move(steps);
  c.output = output;
  c.node.op_type = std::move(op);
  c.node.inputs = std::move(inputs);
  return c;
}

// ---- Pow ------------------------------------------------------------------------------------

//   Pow(x, 2) -> Mul(x, x);  Pow(x, 0.5) -> Sqrt(x)
void pow_square_root(const Matcher& m, size_t s, std::vector<Candidate>& out) {
  if (!m.is(s, "Pow") || m.out(s) < 0 || m.in(s, 0) < 0) return;
  const std::optional<double> e = m.scalar(m.in(s, 1));
  const std::string& x = m.name(m.in(s, 0));
  if (e == 2.0) out.push_back(candidate({s}, m.out(s), "Mul", {x, x}));
  if (e == 0.5) out.push_back(candidate({s}, m.out(s), "Sqrt", {x}));
}

// ---- LayerNorm ------------------------------------------------------------------------------

// The first normalised axis of a ReduceMean over trailing axes with keepdims (axes as an
// attribute, or from opset 18 a constant input), counted from the end; nullopt otherwise.
std::optional<int64_t> trailing_mean_axis(const Matcher& m, size_t s) {
  if (!m.is(s, "ReduceMean") || m.out(s) < 0 || m.node(s).attr_int("keepdims", 1) != 1) {
    return std::nullopt;
  }
  std::vector<int64_t> axes = m.node(s).attr_ints("axes", {});
  if (const ir::Tensor* t = m.constant(m.in(s, 1))) {
    for (int64_t i = 0; i < t->size(); ++i) axes.push_back(t->as_int64(i));
  }
  if (axes.empty()) return std::nullopt;
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != -static_cast<int64_t>(axes.size() - i)) return std::nullopt;
  }
  return axes.front();
}

// A float32 constant of rank at most `axes` (so it does not widen the output): scale or bias.
bool affine_constant(const Matcher& m, int32_t value, int64_t axis) {
  const ir::Tensor* t = m.constant(value);
  return t != nullptr && t->dtype() == ir::DType::kFloat32 && t->rank() <= -axis;
}

//        +-------------------------------+
//   x -> ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div -> [Mul(scale)]
//   |                   ^     (or Mul(d, d))                              ^      -> [Add(bias)]
//   +-------------------+------------------------------------------------+ (Sub's output)
void layer_norm(const Matcher& m, size_t r1, std::vector<Candidate>& out) {
  const std::optional<int64_t> axis = trailing_mean_axis(m, r1);
  if (!axis) return;
  const int32_t x = m.in(r1, 0), mean = m.out(r1);
  if (x < 0) return;
  const std::optional<size_t> sub = m.only_reader(mean, "Sub");
  if (!sub || m.in(*sub, 0) != x || m.in(*sub, 1) != mean) return;
  const int32_t d = m.out(*sub);
  std::optional<size_t> square, div;
  for (size_t s = 0; s < m.plan().steps.size(); ++s) {  // d's readers: the square and the Div
    const bool reads = m.in(s, 0) == d || m.in(s, 1) == d;
    if (!reads) continue;
    if ((m.is(s, "Pow") && m.in(s, 0) == d && m.scalar(m.in(s, 1)) == 2.0) ||
        (m.is(s, "Mul") && m.in(s, 0) == d && m.in(s, 1) == d)) {
      square = s;
    } else if (m.is(s, "Div") && m.in(s, 0) == d) {
      div = s;
    }
  }
  if (!square || !div || m.out(*square) < 0) return;
  const std::optional<size_t> r2 = m.only_reader(m.out(*square), "ReduceMean");
  if (!r2 || trailing_mean_axis(m, *r2) != axis) return;
  const std::optional<size_t> add = m.only_reader(m.out(*r2), "Add");
  if (!add) return;
  const std::optional<double> eps = m.scalar(m.other(*add, m.out(*r2)));
  const std::optional<size_t> root = m.only_reader(m.out(*add), "Sqrt");
  if (!eps || !root || m.in(*div, 1) != m.out(*root)) return;

  Candidate base = candidate({r1, *sub, *square, *r2, *add, *root, *div}, m.out(*div),
                             "LayerNormalization", {m.name(x)});
  base.node.attributes = {ir::int_attr("axis", *axis),
                          ir::float_attr("epsilon", static_cast<float>(*eps))};
  base.reduced = {mean, m.out(*r2), m.out(*add), m.out(*root)};
  base.reduced_axis = *axis;
  if (const std::optional<size_t> mul = m.only_reader(base.output, "Mul");
      mul && affine_constant(m, m.other(*mul, base.output), *axis)) {
    Candidate scaled = base;
    scaled.steps.push_back(*mul);
    scaled.node.inputs.push_back(m.name(m.other(*mul, base.output)));
    scaled.output = m.out(*mul);
    if (const std::optional<size_t> bias = m.only_reader(scaled.output, "Add");
        bias && affine_constant(m, m.other(*bias, scaled.output), *axis)) {
      Candidate full = scaled;
      full.steps.push_back(*bias);
      full.node.inputs.push_back(m.name(m.other(*bias, scaled.output)));
      full.output = m.out(*bias);
      out.push_back(std::move(full));
    }
    out.push_back(std::move(scaled));
  }
  // Without an affine part the kernel still needs a scale: one, broadcast to every column.
  const std::string one = m.name(base.output) + "/ptq.optimizer.scale";
  base.node.inputs.push_back(one);
  base.constants.emplace_back(one, ir::make_tensor<float>({}, {1.0f}));
  out.push_back(std::move(base));
}

// ---- Gelu -----------------------------------------------------------------------------------

// The end of both Gelu spellings, from a = 1 + erf(…) or 1 + tanh(…):
//   Mul(x, a) -> Mul(0.5) (or Div(2))      or      Mul(Mul(x, 0.5), a)
// Adds the steps and returns the output; -1 when neither is there.
int32_t gelu_tail(const Matcher& m, int32_t a, int32_t x, std::vector<size_t>& steps) {
  const std::optional<size_t> mul = m.only_reader(a, "Mul");
  if (!mul) return -1;
  const int32_t other = m.other(*mul, a);
  if (other == x) {
    const std::optional<size_t> half = m.scaled(m.out(*mul), 0.5);
    if (!half) return -1;
    steps.insert(steps.end(), {*mul, *half});
    return m.out(*half);
  }
  const std::optional<size_t> half = m.made_by(other, "Mul");
  if (!half || m.other(*half, x) < 0 || m.scalar(m.other(*half, x)) != 0.5) return -1;
  steps.insert(steps.end(), {*mul, *half});
  return m.out(*mul);
}

//   x -> Div(sqrt 2) (or Mul(1/sqrt 2)) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5)
void gelu_erf(const Matcher& m, size_t erf, std::vector<Candidate>& out) {
  if (!m.is(erf, "Erf") || m.out(erf) < 0) return;
  const int32_t t = m.in(erf, 0);
  std::optional<size_t> scale = m.made_by(t, "Div");
  int32_t x = -1;
  if (scale && m.scalar(m.in(*scale, 1)) && std::abs(*m.scalar(m.in(*scale, 1)) - kSqrt2) < 1e-6) {
    x = m.in(*scale, 0);
  } else if ((scale = m.made_by(t, "Mul"))) {
    for (int32_t v : m.plan().steps[*scale].inputs) {
      const std::optional<double> c = m.scalar(m.other(*scale, v));
      if (c && std::abs(*c - 1.0 / kSqrt2) < 1e-6) x = v;
    }
  }
  if (x < 0) return;
  const std::optional<size_t> one = m.with_constant(m.out(erf), "Add", 1.0);
  if (!one) return;
  std::vector<size_t> steps = {*scale, erf, *one};
  const int32_t y = gelu_tail(m, m.out(*one), x, steps);
  if (y >= 0) out.push_back(candidate(std::move(steps), y, "Gelu", {m.name(x)}));
}

// x^3 spelled Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x): the steps, or empty.
std::vector<size_t> cube_of(const Matcher& m, int32_t cube, int32_t x) {
  if (const std::optional<size_t> p = m.made_by(cube, "Pow")) {
    if (m.in(*p, 0) == x && m.scalar(m.in(*p, 1)) == 3.0) return {*p};
    return {};
  }
  const std::optional<size_t> outer = m.made_by(cube, "Mul");
  if (!outer) return {};
  const std::optional<size_t> square = m.made_by(m.other(*outer, x), "Mul");
  if (!square || m.in(*square, 0) != x || m.in(*square, 1) != x) return {};
  return {*outer, *square};
}

//   x -> x^3 -> Mul(0.044715) -> Add(x, .) -> Mul(sqrt(2/pi)) -> Tanh -> Add(1) -> Mul(x, .)
//     -> Mul(0.5)
void gelu_tanh(const Matcher& m, size_t tanh, std::vector<Candidate>& out) {
  if (!m.is(tanh, "Tanh") || m.out(tanh) < 0) return;
  const std::optional<size_t> beta = m.made_by(m.in(tanh, 0), "Mul");
  if (!beta) return;
  for (int32_t sum : m.plan().steps[*beta].inputs) {
    const std::optional<double> b = m.scalar(m.other(*beta, sum));
    const std::optional<size_t> add = m.made_by(sum, "Add");
    if (!b || std::abs(*b - kSqrt2OverPi) > 1e-6 || !add) continue;
    for (int32_t x : m.plan().steps[*add].inputs) {
      const std::optional<size_t> kappa = m.made_by(m.other(*add, x), "Mul");
      if (!kappa) continue;
      for (int32_t cube : m.plan().steps[*kappa].inputs) {
        const std::optional<double> k = m.scalar(m.other(*kappa, cube));
        std::vector<size_t> steps = cube_of(m, cube, x);
        if (!k || std::abs(*k - kGeluCube) > 1e-7 || steps.empty()) continue;
        const std::optional<size_t> one = m.with_constant(m.out(tanh), "Add", 1.0);
        if (!one) return;
        steps.insert(steps.end(), {*kappa, *add, *beta, tanh, *one});
        const int32_t y = gelu_tail(m, m.out(*one), x, steps);
        if (y < 0) return;
        Candidate c = candidate(std::move(steps), y, "Gelu", {m.name(x)});
        c.node.attributes = {ir::string_attr("approximate", "tanh")};
        out.push_back(std::move(c));
        return;
      }
    }
  }
}

// ---- HardSigmoid, HardSwish -----------------------------------------------------------------

// Clip(v, 0, 6) reading `value` (bounds as inputs from opset 11, as attributes before).
std::optional<size_t> relu6_of(const Matcher& m, int32_t value, int64_t opset) {
  const std::optional<size_t> clip = m.only_reader(value, "Clip");
  if (!clip || m.in(*clip, 0) != value) return std::nullopt;
  if (opset < 11) {
    const ir::Node& n = m.node(*clip);
    const bool relu6 = n.attr_float("min", -1.0f) == 0.0f && n.attr_float("max", -1.0f) == 6.0f;
    return relu6 ? clip : std::nullopt;
  }
  if (m.scalar(m.in(*clip, 1)) != 0.0 || m.scalar(m.in(*clip, 2)) != 6.0) return std::nullopt;
  return clip;
}

Candidate hard_sigmoid(std::vector<size_t> steps, int32_t output, const std::string& x) {
  Candidate c = candidate(std::move(steps), output, "HardSigmoid", {x});
  c.node.attributes = {ir::float_attr("alpha", 1.0f / 6.0f), ir::float_attr("beta", 0.5f)};
  return c;
}

//   x -> Add(3) -> Clip(0, 6) -> Div(6) (or Mul(1/6)) -> [Mul(x, .)]     HardSigmoid [HardSwish]
//   x -> Add(3) -> Clip(0, 6) -> Mul(x, .) -> Div(6) (or Mul(1/6))       HardSwish
void hard_swish_spelled(const Matcher& m, size_t add, int64_t opset, std::vector<Candidate>& out) {
  if (!m.is(add, "Add") || m.out(add) < 0) return;
  int32_t x = -1;
  for (int32_t v : m.plan().steps[add].inputs) {
    if (m.scalar(m.other(add, v)) == 3.0 && m.constant(v) == nullptr) x = v;
  }
  const std::optional<size_t> clip = x < 0 ? std::nullopt : relu6_of(m, m.out(add), opset);
  if (!clip) return;
  const int32_t c = m.out(*clip);
  if (const std::optional<size_t> sixth = m.scaled(c, 1.0 / 6.0)) {
    const int32_t h = m.out(*sixth);
    if (const std::optional<size_t> mul = m.only_reader(h, "Mul"); mul && m.other(*mul, h) == x) {
      out.push_back(candidate({add, *clip, *sixth, *mul}, m.out(*mul), "HardSwish", {m.name(x)}));
    }
    out.push_back(hard_sigmoid({add, *clip, *sixth}, h, m.name(x)));
    return;
  }
  const std::optional<size_t> mul = m.only_reader(c, "Mul");
  if (!mul || m.other(*mul, c) != x) return;
  if (const std::optional<size_t> sixth = m.scaled(m.out(*mul), 1.0 / 6.0)) {
    out.push_back(candidate({add, *clip, *mul, *sixth}, m.out(*sixth), "HardSwish", {m.name(x)}));
  }
}

//   x -> HardSigmoid(1/6, 0.5) -> Mul(x, .)       (PyTorch's export before opset 14)
void hard_swish_of_hard_sigmoid(const Matcher& m, size_t s, std::vector<Candidate>& out) {
  if (!m.is(s, "HardSigmoid") || m.out(s) < 0) return;
  const ir::Node& n = m.node(s);
  if (std::abs(n.attr_float("alpha", 0.2f) - 1.0f / 6.0f) > 1e-6f ||
      n.attr_float("beta", 0.5f) != 0.5f) {
    return;
  }
  const int32_t x = m.in(s, 0);
  const std::optional<size_t> mul = m.only_reader(m.out(s), "Mul");
  if (x >= 0 && mul && m.other(*mul, m.out(s)) == x) {
    out.push_back(candidate({s, *mul}, m.out(*mul), "HardSwish", {m.name(x)}));
  }
}

// ---- SiLU, Mish ------------------------------------------------------------------------------

//   x -> Sigmoid -> Mul(x, .)                      Swish (alpha 1)
void silu(const Matcher& m, size_t s, std::vector<Candidate>& out) {
  if (!m.is(s, "Sigmoid") || m.out(s) < 0) return;
  const int32_t x = m.in(s, 0);
  const std::optional<size_t> mul = m.only_reader(m.out(s), "Mul");
  if (x >= 0 && mul && m.other(*mul, m.out(s)) == x) {
    out.push_back(candidate({s, *mul}, m.out(*mul), "Swish", {m.name(x)}));
    out.back().exact = true;  // the Sigmoid kernel's float operations, then the same product
  }
}

//   x -> Softplus -> Tanh -> Mul(x, .)
void mish(const Matcher& m, size_t s, std::vector<Candidate>& out) {
  if (!m.is(s, "Softplus") || m.out(s) < 0) return;
  const int32_t x = m.in(s, 0);
  const std::optional<size_t> tanh = m.only_reader(m.out(s), "Tanh");
  if (!tanh) return;
  const std::optional<size_t> mul = m.only_reader(m.out(*tanh), "Mul");
  if (x >= 0 && mul && m.other(*mul, m.out(*tanh)) == x) {
    out.push_back(candidate({s, *tanh, *mul}, m.out(*mul), "Mish", {m.name(x)}));
    out.back().exact = true;  // Softplus's and Tanh's float operations, then the same product
  }
}

}  // namespace

void find_candidates(const Matcher& m, int64_t opset, std::vector<Candidate>& out) {
  const size_t n = m.plan().steps.size();
  for (size_t s = 0; s < n; ++s) layer_norm(m, s, out);
  for (size_t s = 0; s < n; ++s) {
    gelu_erf(m, s, out);
    gelu_tanh(m, s, out);
    hard_swish_spelled(m, s, opset, out);
    hard_swish_of_hard_sigmoid(m, s, out);
    mish(m, s, out);
    silu(m, s, out);
  }
  for (size_t s = 0; s < n; ++s) pow_square_root(m, s, out);
}

}  // namespace ptq::runtime
