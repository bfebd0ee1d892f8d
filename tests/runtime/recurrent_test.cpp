// LSTM, GRU and RNN: the reference against a hand-computed step and against identities that
// relate the directions, layouts and sequence lengths to one another; the fast kernel against
// the reference on seeded random cases; bit-identity for 1, 2 and 3 threads; errors.
// (ONNX's own backend cases run in tests/conformance.)
#include <cmath>
#include <random>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

ir::Attribute strings_attr(std::string name, std::vector<std::string> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kStrings;
  a.strings = std::move(v);
  return a;
}
ir::Attribute floats_attr(std::string name, std::vector<float> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kFloats;
  a.floats = std::move(v);
  return a;
}

int gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

// A random node and its inputs: X, W, R, B, sequence_lens, initial_h, initial_c, P.
struct Case {
  ir::Node node;
  std::vector<ir::Tensor> tensors;  // kept alive for `inputs`
  std::vector<const ir::Tensor*> inputs;
};

struct CaseShape {
  explicit CaseShape(std::string op_type, int64_t s = 5, int64_t b = 3, int64_t i = 4,
                     int64_t h = 6, std::string dir = "forward")
      : op(std::move(op_type)), seq(s), batch(b), input(i), hidden(h), direction(std::move(dir)) {}
  std::string op;
  int64_t seq, batch, input, hidden;
  std::string direction;
  int64_t layout = 0;
  bool lengths = false, initial = false, peepholes = false;
  std::vector<ir::Attribute> extra;
};

Case make_case(std::mt19937& rng, const CaseShape& s) {
  const int64_t dirs = s.direction == "bidirectional" ? 2 : 1;
  const int64_t gh = gates_of(s.op) * s.hidden;
  std::vector<ir::Attribute> attrs = s.extra;
  attrs.push_back(attr_int("hidden_size", s.hidden));
  attrs.push_back(attr_string("direction", s.direction));
  attrs.push_back(attr_int("layout", s.layout));
  Case c;
  c.node = make_node(s.op, s.op == "LSTM" ? 8 : 6, s.op == "LSTM" ? 3 : 2, attrs);
  const ir::Shape state = s.layout ? ir::Shape{s.batch, dirs, s.hidden}
                                   : ir::Shape{dirs, s.batch, s.hidden};
  c.tensors.push_back(random_tensor(rng, s.layout ? ir::Shape{s.batch, s.seq, s.input}
                                                  : ir::Shape{s.seq, s.batch, s.input}));
  c.tensors.push_back(random_tensor(rng, {dirs, gh, s.input}, -0.6f, 0.6f));
  c.tensors.push_back(random_tensor(rng, {dirs, gh, s.hidden}, -0.6f, 0.6f));
  c.tensors.push_back(random_tensor(rng, {dirs, 2 * gh}, -0.3f, 0.3f));
  ir::Tensor lens(ir::DType::kInt32, {s.batch});
  std::uniform_int_distribution<int32_t> len(0, static_cast<int32_t>(s.seq));
  for (int32_t& v : lens.span<int32_t>()) v = len(rng);
  c.tensors.push_back(std::move(lens));
  c.tensors.push_back(random_tensor(rng, state));
  c.tensors.push_back(random_tensor(rng, state));
  c.tensors.push_back(random_tensor(rng, {dirs, 3 * s.hidden}, -0.5f, 0.5f));
  for (const ir::Tensor& t : c.tensors) c.inputs.push_back(&t);
  if (!s.lengths) c.inputs[4] = nullptr;
  if (!s.initial) c.inputs[5] = c.inputs[6] = nullptr;
  if (!s.peepholes) c.inputs[7] = nullptr;
  if (s.op != "LSTM") c.inputs.resize(6);
  return c;
}

// Every cell with every option the kernels branch on.
std::vector<CaseShape> all_shapes() {
  std::vector<CaseShape> shapes;
  for (std::string op : {"LSTM", "GRU", "RNN"}) {
    for (std::string dir : {"forward", "reverse", "bidirectional"}) {
      for (int64_t layout : {0, 1}) {
        CaseShape s{op};
        s.direction = dir;
        s.layout = layout;
        s.lengths = s.initial = layout == 1 || dir == "bidirectional";
        s.peepholes = op == "LSTM" && layout == 1;
        shapes.push_back(s);
      }
    }
  }
  CaseShape gru{"GRU", 7, 4, 5, 9};
  gru.extra = {attr_int("linear_before_reset", 1)};
  gru.lengths = gru.initial = true;
  CaseShape lstm{"LSTM", 6, 1, 3, 8, "bidirectional"};
  lstm.extra = {attr_float("clip", 0.7f),
                strings_attr("activations", {"HardSigmoid", "Softsign", "Elu", "Sigmoid",
                                                 "ScaledTanh", "LeakyRelu"}),
                floats_attr("activation_alpha", {0.3f, 1.5f, 0.7f, 0.2f})};
  CaseShape rnn{"RNN", 4, 2, 3, 5};
  rnn.extra = {strings_attr("activations", {"Relu"})};
  shapes.insert(shapes.end(), {gru, lstm, rnn});
  return shapes;
}

TEST(Recurrent, FastMatchesReferenceAndThreadsAgree) {
  std::mt19937 rng(90);
  for (const CaseShape& s : all_shapes()) {
    const Case c = make_case(rng, s);
    const std::string what = fmt::format("{} {} layout {}", s.op, s.direction, s.layout);
    const auto ref = run_kernel(c.node, 14, c.inputs, true);
    const auto one = run_kernel(c.node, 14, c.inputs, false, 1);
    ASSERT_EQ(ref.size(), one.size()) << what;
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_LE(rel_l2(one[i], ref[i]), 1e-5) << what << " output " << i;
    }
    for (int threads : {2, 3}) {
      const auto more = run_kernel(c.node, 14, c.inputs, false, threads);
      for (size_t i = 0; i < one.size(); ++i) {
        EXPECT_TRUE(bit_identical(one[i], more[i])) << what << " threads " << threads;
      }
    }
  }
}

// One LSTM step, hidden 1, input 1, with peepholes, against the equations written out.
TEST(Recurrent, LstmStepMatchesTheEquations) {
  const float x = 0.5f, wi = 0.3f, wo = -0.2f, wf = 0.8f, wc = 0.6f, ri = 0.1f, ro = 0.4f,
              rf = -0.3f, rc = 0.2f, h0 = -0.4f, c0 = 0.9f, pi = 0.25f, po = -0.5f, pf = 0.35f;
  auto t = [](ir::Shape shape, std::vector<float> v) {
    ir::Tensor out(ir::DType::kFloat32, std::move(shape));
    std::copy(v.begin(), v.end(), out.data<float>());
    return out;
  };
  const ir::Tensor X = t({1, 1, 1}, {x}), W = t({1, 4, 1}, {wi, wo, wf, wc}),
                   R = t({1, 4, 1}, {ri, ro, rf, rc}), H = t({1, 1, 1}, {h0}),
                   C = t({1, 1, 1}, {c0}), P = t({1, 3}, {pi, po, pf});
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const double i = sig(x * wi + h0 * ri + pi * c0), f = sig(x * wf + h0 * rf + pf * c0);
  const double c = f * c0 + i * std::tanh(x * wc + h0 * rc);
  const double h = sig(x * wo + h0 * ro + po * c) * std::tanh(c);
  const ir::Node node = make_node("LSTM", 8, 3, {attr_int("hidden_size", 1)});
  for (bool reference : {true, false}) {
    const auto out = run_kernel(node, 14, {&X, &W, &R, nullptr, nullptr, &H, &C, &P}, reference);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_NEAR(out[0].data<float>()[0], h, 1e-6);
    EXPECT_NEAR(out[1].data<float>()[0], h, 1e-6);
    EXPECT_NEAR(out[2].data<float>()[0], c, 1e-6);
  }
}

// `t` (float32) with its axes permuted: out dim k is in dim perm[k].
ir::Tensor permuted(const ir::Tensor& t, std::vector<size_t> perm) {
  const ir::Shape& in = t.shape();
  ir::Shape shape(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) shape[k] = in[perm[k]];
  std::vector<int64_t> stride(in.size(), 1);
  for (size_t k = in.size(); k-- > 1;) stride[k - 1] = stride[k] * in[k];
  ir::Tensor out(ir::DType::kFloat32, shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < out.size(); ++e) {
    int64_t at = 0;
    for (size_t k = 0; k < shape.size(); ++k) at += idx[k] * stride[perm[k]];
    out.data<float>()[e] = t.data<float>()[at];
    for (size_t k = shape.size(); k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

// Direction 1 of a per-direction tensor whose direction axis is `axis` (of size 2).
ir::Tensor second_direction(const ir::Tensor& t, size_t axis) {
  ir::Shape shape = t.shape();
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; ++k) outer *= shape[k];
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  shape[axis] = 1;
  ir::Tensor out(t.dtype(), shape);
  for (int64_t o = 0; o < outer; ++o) {
    std::copy_n(t.data<float>() + (o * 2 + 1) * inner, inner, out.data<float>() + o * inner);
  }
  return out;
}

// A bidirectional node's second direction is a reverse node with its weights and states, and
// its Y is zero past each batch's sequence length.
TEST(Recurrent, BidirectionalIsForwardAndReverse) {
  std::mt19937 rng(91);
  for (std::string op : {"LSTM", "GRU", "RNN"}) {
    CaseShape s{op, 5, 2, 3, 4, "bidirectional"};
    s.lengths = s.initial = true;
    s.peepholes = op == "LSTM";
    Case bi = make_case(rng, s);
    bi.tensors[4].data<int32_t>()[0] = 5;
    bi.tensors[4].data<int32_t>()[1] = 3;
    const auto both = run_kernel(bi.node, 14, bi.inputs, true);
    CaseShape rs = s;
    rs.direction = "reverse";
    Case rev = make_case(rng, rs);
    rev.tensors[0] = bi.tensors[0];
    rev.tensors[4] = bi.tensors[4];
    for (size_t k : {1, 2, 3, 5, 6, 7}) rev.tensors[k] = second_direction(bi.tensors[k], 0);
    const auto one = run_kernel(rev.node, 14, rev.inputs, true);
    ASSERT_FALSE(both.empty() || one.empty()) << op;
    EXPECT_TRUE(bit_identical(one[0], second_direction(both[0], 1))) << op << " Y";
    for (size_t k = 1; k < one.size(); ++k) {
      EXPECT_TRUE(bit_identical(one[k], second_direction(both[k], 0))) << op << " output " << k;
    }
    for (int64_t t = 3; t < 5; ++t) {  // batch 1 ends after 3 of 5 steps
      for (int64_t d = 0; d < 2; ++d) {
        for (int64_t j = 0; j < 4; ++j) {
          EXPECT_EQ(both[0].data<float>()[((t * 2 + d) * 2 + 1) * 4 + j], 0.0f) << op;
        }
      }
    }
  }
}

// Layout 1 ([batch, seq, …]) is layout 0 with X, the states and Y transposed.
TEST(Recurrent, BatchFirstLayoutIsTheTransposedLayout) {
  std::mt19937 rng(93);
  for (std::string op : {"LSTM", "GRU", "RNN"}) {
    for (bool reference : {true, false}) {
      CaseShape s{op, 4, 3, 2, 5, "bidirectional"};
      s.layout = 1;
      s.lengths = s.initial = true;
      s.peepholes = op == "LSTM";
      Case first = make_case(rng, s);
      CaseShape s0 = s;
      s0.layout = 0;
      Case zero = make_case(rng, s0);
      zero.tensors = first.tensors;
      zero.tensors[0] = permuted(first.tensors[0], {1, 0, 2});
      for (size_t k : {5, 6}) zero.tensors[k] = permuted(first.tensors[k], {1, 0, 2});
      const auto a = run_kernel(first.node, 14, first.inputs, reference);
      const auto b = run_kernel(zero.node, 14, zero.inputs, reference);
      ASSERT_FALSE(a.empty() || b.empty()) << op;
      EXPECT_TRUE(bit_identical(a[0], permuted(b[0], {2, 0, 1, 3}))) << op << " Y";
      for (size_t k = 1; k < a.size(); ++k) {
        EXPECT_TRUE(bit_identical(a[k], permuted(b[k], {1, 0, 2}))) << op << " output " << k;
      }
    }
  }
}

TEST(Recurrent, UnsupportedAttributesAreRefusedNamingTheNode) {
  std::mt19937 rng(92);
  CaseShape s{"GRU"};
  s.extra = {strings_attr("activations", {"Sigmoid", "Gelu"})};
  const Case c = make_case(rng, s);
  EXPECT_EQ(kernel_error(c.node, 14, c.inputs),
            "GRU node 'n': activation 'Gelu' is not supported");
  CaseShape f{"LSTM"};
  f.extra = {attr_int("input_forget", 1)};
  const Case l = make_case(rng, f);
  EXPECT_EQ(kernel_error(l.node, 14, l.inputs),
            "LSTM node 'n': input_forget=1 (coupled input and forget gates) is not supported");
  CaseShape r{"RNN"};
  Case bad = make_case(rng, r);
  bad.tensors[1] = random_tensor(rng, {1, 6, 5});
  EXPECT_EQ(kernel_error(bad.node, 14, bad.inputs),
            "RNN node 'n': W has shape [1, 6, 5], expected [1, 6, 4]");
}

}  // namespace
}  // namespace ptq::runtime::testing
