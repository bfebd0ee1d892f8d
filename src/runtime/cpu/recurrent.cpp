// LSTM, GRU and RNN (opsets 1–22): attributes read and checked once, operands checked per call,
// then the reference or the fast kernel (recurrent_ref.cpp; recurrent_fast.cpp, compiled per
// instruction-set level, whose factories pass their level's fast kernel to make_recurrent).
#include "recurrent.h"

#include <cctype>
#include <string>

namespace ptq::runtime::cpu {

namespace {

using Kind = RnnActivation::Kind;

struct NamedActivation {
  const char* name;
  Kind kind;
  std::optional<double> alpha, beta;  // the defaults of those that take them
};

// ONNX's list for recurrent ops; alpha and beta defaults as ONNX Runtime's.
const NamedActivation kActivations[] = {
    {"relu", Kind::kRelu, {}, {}},
    {"tanh", Kind::kTanh, {}, {}},
    {"sigmoid", Kind::kSigmoid, {}, {}},
    {"affine", Kind::kAffine, 1.0, 0.0},
    {"leakyrelu", Kind::kLeakyRelu, 0.01, {}},
    {"thresholdedrelu", Kind::kThresholdedRelu, 1.0, {}},
    {"scaledtanh", Kind::kScaledTanh, 1.0, 1.0},
    {"hardsigmoid", Kind::kHardSigmoid, 0.2, 0.5},
    {"elu", Kind::kElu, 1.0, {}},
    {"softsign", Kind::kSoftsign, {}, {}},
    {"softplus", Kind::kSoftplus, {}, {}},
};

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::vector<std::string> default_activations(Cell cell) {
  switch (cell) {
    case Cell::kLstm: return {"Sigmoid", "Tanh", "Tanh"};
    case Cell::kGru: return {"Sigmoid", "Tanh"};
    case Cell::kRnn: return {"Tanh"};
  }
  return {};
}

// The activations attribute resolved per direction. activation_alpha and activation_beta are
// taken in order by the functions that use them (ONNX Runtime's reading).
Status read_activations(const ir::Node& node, RecurrentSpec& spec) {
  const ir::Attribute* attr = node.attr("activations");
  std::vector<std::string> names = attr ? attr->strings : default_activations(spec.cell);
  const size_t per = static_cast<size_t>(spec.functions());
  const size_t want = per * static_cast<size_t>(spec.directions);
  if (names.size() == 2 * per && spec.directions == 1) names.resize(per);  // both directions'
  if (names.size() == per && want == 2 * per) {
    const std::vector<std::string> one = names;  // inserting a range of itself is undefined
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != want) {
    return node_error(node, "activations has {} names; this cell takes {} per direction",
                      names.size(), per);
  }
  const std::vector<float> alphas = node.attr_floats("activation_alpha", {});
  const std::vector<float> betas = node.attr_floats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    const auto* it = std::find_if(std::begin(kActivations), std::end(kActivations),
                                  [&](const NamedActivation& a) { return a.name == lower(name); });
    if (it == std::end(kActivations)) {
      return node_error(node, "activation '{}' is not supported", name);
    }
    RnnActivation act{it->kind, it->alpha.value_or(0.0), it->beta.value_or(0.0)};
    if (it->alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (it->beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    spec.activations.push_back(act);
  }
  return Status::ok();
}

Status read_direction(const ir::Node& node, RecurrentSpec& spec) {
  const std::string direction = node.attr_string("direction", "forward");
  if (direction == "bidirectional") {
    spec.directions = 2;
  } else if (direction == "reverse") {
    spec.reverse = true;
  } else if (direction != "forward") {
    return node_error(node, "direction '{}' is not forward, reverse or bidirectional", direction);
  }
  return Status::ok();
}

}  // namespace

Expected<RecurrentSpec> read_recurrent_spec(const ir::Node& node, Cell cell) {
  RecurrentSpec spec;
  spec.cell = cell;
  spec.hidden = node.attr_int("hidden_size", -1);
  PTQ_RETURN_IF_ERROR(read_direction(node, spec));
  PTQ_RETURN_IF_ERROR(read_activations(node, spec));
  const int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) return node_error(node, "layout {} is not 0 or 1", layout);
  spec.batch_first = layout == 1;
  if (node.has_attr("clip")) {
    const float clip = node.attr_float("clip", 0.0f);
    if (!(clip > 0.0f)) return node_error(node, "clip {} is not positive", clip);
    spec.clip = clip;
  }
  spec.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  if (node.attr_int("input_forget", 0) != 0) {
    return node_error(node, "input_forget=1 (coupled input and forget gates) is not supported");
  }
  return spec;
}

namespace {

// Fails unless `t` has dtype `dtype` and shape `want`; `what` names the operand.
Status check_operand(const ir::Node& node, const char* what, const ir::Tensor* t,
                     ir::DType dtype, const ir::Shape& want) {
  if (t == nullptr) return Status::ok();
  if (t->dtype() != dtype) {
    return node_error(node, "{} is {}, X is {}", what, ir::dtype_name(t->dtype()),
                      ir::dtype_name(dtype));
  }
  if (t->shape() != want) {
    return node_error(node, "{} has shape {}, expected {}", what, ir::shape_str(t->shape()),
                      ir::shape_str(want));
  }
  return Status::ok();
}

Status read_lengths(const ir::Node& node, const ir::Tensor* lens, RecurrentCall& call) {
  call.lengths.assign(static_cast<size_t>(call.batch), call.seq);
  if (lens == nullptr) return Status::ok();
  if (lens->shape() != ir::Shape{call.batch}) {
    return node_error(node, "sequence_lens has shape {}, expected [{}]",
                      ir::shape_str(lens->shape()), call.batch);
  }
  for (int64_t b = 0; b < call.batch; ++b) {
    const int64_t n = lens->as_int64(b);
    if (n < 0 || n > call.seq) {
      return node_error(node, "sequence_lens[{}] = {} is outside [0, {}]", b, n, call.seq);
    }
    call.lengths[static_cast<size_t>(b)] = n;
  }
  return Status::ok();
}

}  // namespace

Expected<RecurrentCall> check_recurrent_call(const ir::Node& node, const RecurrentSpec& spec,
                                             Inputs in) {
  PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
  RecurrentCall c;
  c.x = in[0];
  c.w = in[1];
  c.r = in[2];
  c.b = input_or_null(in, 3);
  c.h0 = input_or_null(in, 5);
  c.c0 = spec.cell == Cell::kLstm ? input_or_null(in, 6) : nullptr;
  c.p = spec.cell == Cell::kLstm ? input_or_null(in, 7) : nullptr;
  if (c.x->rank() != 3) {
    return node_error(node, "X has shape {}, expected rank 3", ir::shape_str(c.x->shape()));
  }
  if (c.r->rank() != 3) {
    return node_error(node, "R has shape {}, expected rank 3", ir::shape_str(c.r->shape()));
  }
  c.batch_first = spec.batch_first;
  c.seq = c.x->dim(spec.batch_first ? 1 : 0);
  c.batch = c.x->dim(spec.batch_first ? 0 : 1);
  c.input = c.x->dim(2);
  c.hidden = spec.hidden >= 0 ? spec.hidden : c.r->dim(2);
  c.dirs = spec.directions;
  const int64_t gh = spec.gates() * c.hidden;
  const ir::DType dt = c.x->dtype();
  PTQ_RETURN_IF_ERROR(check_operand(node, "W", c.w, dt, {c.dirs, gh, c.input}));
  PTQ_RETURN_IF_ERROR(check_operand(node, "R", c.r, dt, {c.dirs, gh, c.hidden}));
  PTQ_RETURN_IF_ERROR(check_operand(node, "B", c.b, dt, {c.dirs, 2 * gh}));
  PTQ_RETURN_IF_ERROR(check_operand(node, "initial_h", c.h0, dt, c.state_shape()));
  PTQ_RETURN_IF_ERROR(check_operand(node, "initial_c", c.c0, dt, c.state_shape()));
  PTQ_RETURN_IF_ERROR(check_operand(node, "P", c.p, dt, {c.dirs, 3 * c.hidden}));
  PTQ_RETURN_IF_ERROR(read_lengths(node, input_or_null(in, 4), c));
  return c;
}

namespace {

class RecurrentKernel final : public Kernel {
 public:
  RecurrentKernel(const KernelContext& ctx, RecurrentSpec spec, RecurrentFast fast)
      : node_(ctx.node), spec_(std::move(spec)), fast_(fast), threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_ASSIGN_OR_RETURN(const RecurrentCall call, check_recurrent_call(node_, spec_, in));
    const ir::DType dt = call.x->dtype();
    const bool done = dispatch_float(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      RecurrentOutputs<T> o;
      o.y = allocate<T>(out, 0, call.y_shape(), alloc);
      o.y_h = allocate<T>(out, 1, call.state_shape(), alloc);
      if (spec_.cell == Cell::kLstm) o.y_c = allocate<T>(out, 2, call.state_shape(), alloc);
      if constexpr (std::is_same_v<T, float>) {
        if (!reference_) return fast_(spec_, call, o, threads_);
      }
      reference::recurrent<T>(spec_, call, o, threads_);
    });
    return done ? Status::ok() : unsupported_dtype(node_, dt);
  }

 private:
  // Output i when the node produces it, else null.
  template <typename T>
  T* allocate(Outputs out, size_t i, const ir::Shape& shape, Allocator& alloc) const {
    if (i >= out.size() || i >= node_.outputs.size() || node_.outputs[i].empty()) return nullptr;
    out[i] = alloc.allocate(ir::dtype_of<T>(), shape);
    return out[i].data<T>();
  }

  const ir::Node& node_;
  RecurrentSpec spec_;
  RecurrentFast fast_;
  int threads_;
  bool reference_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_recurrent(const KernelContext& ctx, Cell cell,
                                                 RecurrentFast fast) {
  PTQ_ASSIGN_OR_RETURN(RecurrentSpec spec, read_recurrent_spec(ctx.node, cell));
  return std::unique_ptr<Kernel>(
      std::make_unique<RecurrentKernel>(ctx, std::move(spec), fast));
}

}  // namespace ptq::runtime::cpu
