// Keeps malformed nodes away from libonnx's shape inference. libonnx 1.12 infers shapes on
// nodes its checker would reject, and some of its inference functions trust what they read: a
// Conv whose data and weight ranks differ indexes past its per-dim vectors (SEGV), a zero
// stride divides by zero (SIGFPE), a MaxUnpool whose indices have no type dereferences null.
// Two layers keep the reader crash-free (the fuzzer in tests/fuzz found each case):
//  - before inference, every default-domain node, subgraphs included, is checked against its op
//    schema: input and output counts, required inputs and attributes, for the windowed ops
//    (conv, pools) the lengths and values of kernel_shape, strides, dilations and pads, and the
//    range of a few integer attributes inference divides by;
//  - during inference, the ops whose inference reads one input's dims by another's rank run
//    behind a guard that sees the types inferred so far (ranks of intermediate values are not
//    known before).
// A malformed node is invalid input: one line naming it. An op libonnx does not know (custom
// domains, newer opsets) is not checked and passes through untouched.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "proto.h"

namespace ptq::onnx {

namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::InferenceContext;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::OpSchema;

std::string node_label(const NodeProto& n) {
  if (n.name().empty()) {
    return fmt::format("{} node (output '{}')", n.op_type(), n.output_size() ? n.output(0) : "");
  }
  return fmt::format("{} node '{}'", n.op_type(), n.name());
}

bool is_default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// The model's default-domain opset, clamped to what the schema registry takes; 0 if none.
int default_opset(const ModelProto& m) {
  for (const auto& o : m.opset_import()) {
    if (is_default_domain(o.domain()))
      return static_cast<int>(std::clamp<int64_t>(o.version(), 0, INT_MAX));
  }
  return 0;
}

const AttributeProto* find_attribute(const NodeProto& n, std::string_view name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// Node and subgraph access, const or not, for for_each_node.
auto& nodes_of(GraphProto& g) { return *g.mutable_node(); }
const auto& nodes_of(const GraphProto& g) { return g.node(); }
auto& attributes_of(NodeProto& n) { return *n.mutable_attribute(); }
const auto& attributes_of(const NodeProto& n) { return n.attribute(); }
GraphProto& graph_of(AttributeProto& a) { return *a.mutable_g(); }
const GraphProto& graph_of(const AttributeProto& a) { return a.g(); }
auto& graphs_of(AttributeProto& a) { return *a.mutable_graphs(); }
const auto& graphs_of(const AttributeProto& a) { return a.graphs(); }

// Calls `visit` on every node of `g` and of its subgraphs (If/Loop/Scan bodies), in order.
template <typename Graph, typename Visit>
Status for_each_node(Graph& g, const Visit& visit) {
  for (auto& n : nodes_of(g)) {
    PTQ_RETURN_IF_ERROR(visit(n));
    for (auto& a : attributes_of(n)) {
      if (a.has_g()) PTQ_RETURN_IF_ERROR(for_each_node(graph_of(a), visit));
      for (auto& sub : graphs_of(a)) PTQ_RETURN_IF_ERROR(for_each_node(sub, visit));
    }
  }
  return Status::ok();
}

// ---- nodes against their schemas ---------------------------------------------------------

std::string count_range(int lo, int hi) {
  if (lo == hi) return fmt::format("{}", lo);
  if (hi >= INT_MAX / 2) return fmt::format("at least {}", lo);  // variadic
  return fmt::format("{} to {}", lo, hi);
}

Status check_arity(const NodeProto& n, const OpSchema& s, int opset) {
  if (n.input_size() < s.min_input() || n.input_size() > s.max_input()) {
    return invalid_input("{} has {} inputs; {} (opset {}) takes {}", node_label(n), n.input_size(),
                         n.op_type(), opset, count_range(s.min_input(), s.max_input()));
  }
  if (n.output_size() < s.min_output() || n.output_size() > s.max_output()) {
    return invalid_input("{} has {} outputs; {} (opset {}) gives {}", node_label(n),
                         n.output_size(), n.op_type(), opset,
                         count_range(s.min_output(), s.max_output()));
  }
  // An empty name is an absent optional input; for a required one it is a missing input.
  const auto& formal = s.inputs();
  for (int i = 0; i < n.input_size() && i < static_cast<int>(formal.size()); ++i) {
    const auto& f = formal[static_cast<size_t>(i)];
    if (n.input(i).empty() && f.GetOption() == OpSchema::Single) {
      return invalid_input("{} leaves its required input {} ('{}') empty", node_label(n), i,
                           f.GetName());
    }
  }
  return Status::ok();
}

Status check_required_attributes(const NodeProto& n, const OpSchema& s) {
  for (const auto& [name, attr] : s.attributes()) {
    if (attr.required && find_attribute(n, name) == nullptr) {
      return invalid_input("{} lacks the required attribute '{}'", node_label(n), name);
    }
  }
  return Status::ok();
}

// Ops whose inference walks kernel_shape, strides, dilations and pads one spatial dim at a time.
bool is_windowed(std::string_view op) {
  static constexpr std::string_view kOps[] = {"Conv",          "ConvInteger", "QLinearConv",
                                              "ConvTranspose", "AveragePool", "MaxPool",
                                              "LpPool",        "MaxUnpool"};
  return std::find(std::begin(kOps), std::end(kOps), op) != std::end(kOps);
}

// One value per spatial dim in each list, two in pads; sizes and strides positive (inference
// divides by strides).
Status check_window_attributes(const NodeProto& n) {
  const AttributeProto* first = nullptr;
  for (std::string_view name : {"kernel_shape", "strides", "dilations", "output_padding"}) {
    const AttributeProto* a = find_attribute(n, name);
    if (a == nullptr) continue;
    for (int64_t v : a->ints()) {
      if (v <= 0 && name != "output_padding") {
        return invalid_input("{}: attribute '{}' holds {}; its values must be positive",
                             node_label(n), name, v);
      }
    }
    if (first == nullptr) {
      first = a;
    } else if (a->ints_size() != first->ints_size()) {
      return invalid_input("{}: attribute '{}' has {} values but '{}' has {} (one per spatial dim)",
                           node_label(n), name, a->ints_size(), first->name(), first->ints_size());
    }
  }
  const AttributeProto* pads = find_attribute(n, "pads");
  if (pads != nullptr && first != nullptr && pads->ints_size() != 2 * first->ints_size()) {
    return invalid_input("{}: attribute 'pads' has {} values; the {} spatial dims of '{}' need {}",
                         node_label(n), pads->ints_size(), first->ints_size(), first->name(),
                         2 * first->ints_size());
  }
  return Status::ok();
}

// Integer attributes libonnx's inference divides by or indexes with, and the values it
// survives (the spec's ranges, the upper bounds keep products from overflowing to zero).
struct AttributeRange {
  std::string_view op, attribute;
  int64_t min, max;
};
constexpr AttributeRange kAttributeRanges[] = {
    {"DepthToSpace", "blocksize", 1, INT32_MAX},
    {"SpaceToDepth", "blocksize", 1, INT32_MAX},
    {"GatherND", "batch_dims", 0, INT32_MAX},
};

Status check_attribute_ranges(const NodeProto& n) {
  for (const AttributeRange& r : kAttributeRanges) {
    if (r.op != n.op_type()) continue;
    const AttributeProto* a = find_attribute(n, r.attribute);
    if (a != nullptr && (a->i() < r.min || a->i() > r.max)) {
      return invalid_input("{}: attribute '{}' is {}; it must be in [{}, {}]", node_label(n),
                           r.attribute, a->i(), r.min, r.max);
    }
  }
  return Status::ok();
}

Status check_node(const NodeProto& n, int opset) {
  if (!is_default_domain(n.domain()) || opset == 0) return Status::ok();
  const OpSchema* s = ::onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
  if (s == nullptr) return Status::ok();  // unknown here: carried through untouched
  PTQ_RETURN_IF_ERROR(check_arity(n, *s, opset));
  PTQ_RETURN_IF_ERROR(check_required_attributes(n, *s));
  if (is_windowed(n.op_type())) PTQ_RETURN_IF_ERROR(check_window_attributes(n));
  PTQ_RETURN_IF_ERROR(check_attribute_ranges(n));
  return Status::ok();
}

// ---- guards around inference ---------------------------------------------------------------

// The guarded nodes carry this attribute (on the caller's throwaway proto) holding their index
// in GuardedRegistry::nodes_: an InferenceContext does not say which node it infers, and an
// error must name the node.
constexpr const char* kTagAttribute = "ptq.guarded_node";

// The input's tensor shape, or nullptr when its type is unknown, not a tensor or has no shape.
const ::onnx::TensorShapeProto* input_shape(const InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return nullptr;
  const ::onnx::TypeProto* t = ctx.getInputType(i);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return nullptr;
  return &t->tensor_type().shape();
}

// What a guard decides for one node: run libonnx's inference, skip it (nothing is inferred for
// the node, as for an op libonnx does not know), or refuse the node as malformed.
struct Verdict {
  enum Kind { kInfer, kSkip, kRefuse } kind = kInfer;
  std::string why;
};

std::string input_name(const NodeProto* n, size_t i) {
  if (n != nullptr && i < static_cast<size_t>(n->input_size())) {
    return fmt::format("'{}'", n->input(static_cast<int>(i)));
  }
  return fmt::format("#{}", i);
}

// Conv-like inference takes the spatial rank from the data and the kernel size from the
// weight's dims, then indexes one by the other.
Verdict same_rank(const InferenceContext& ctx, const NodeProto* n, size_t data, size_t weight,
                  std::string_view role = "weight") {
  const auto* x = input_shape(ctx, data);
  const auto* w = input_shape(ctx, weight);
  if (x == nullptr || w == nullptr || x->dim_size() == w->dim_size()) return {};
  return {
      Verdict::kRefuse,
      fmt::format("input {} has rank {} but {} {} has rank {}; they must be equal",
                  input_name(n, data), x->dim_size(), role, input_name(n, weight), w->dim_size())};
}

// MaxUnpool's inference reads the indices' channel dim without checking that they have a type.
Verdict unpool(const InferenceContext& ctx, const NodeProto* n) {
  if (input_shape(ctx, 0) == nullptr) return {};  // libonnx stops there by itself
  if (input_shape(ctx, 1) == nullptr) return {Verdict::kSkip, {}};
  return same_rank(ctx, n, 0, 1, "indices");
}

// STFT's inference indexes the signal's dims [batch, length, 1|2] unchecked.
Verdict stft(const InferenceContext& ctx, const NodeProto* n) {
  const auto* x = input_shape(ctx, 0);
  if (x == nullptr || x->dim_size() == 3) return {};
  return {Verdict::kRefuse, fmt::format("signal {} has rank {}; STFT takes [batch, length, 1 or 2]",
                                        input_name(n, 0), x->dim_size())};
}

// Gemm (opset 6) and the RNN family (opsets 1-3) index their inputs' dims by position without
// checking the rank the spec fixes.
Verdict fixed_rank(const InferenceContext& ctx, const NodeProto* n,
                   std::initializer_list<size_t> inputs, int rank) {
  for (size_t i : inputs) {
    const auto* s = input_shape(ctx, i);
    if (s == nullptr || s->dim_size() == rank) continue;
    return {Verdict::kRefuse,
            fmt::format("input {} has rank {}; {} takes rank {} there", input_name(n, i),
                        s->dim_size(), n ? n->op_type() : "the op", rank)};
  }
  return {};
}

using Guard = std::function<Verdict(const InferenceContext&, const NodeProto*)>;

// The guard for a default-domain op, or an empty function for the unguarded ones.
Guard guard_for(std::string_view op) {
  if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") {
    return [](const InferenceContext& c, const NodeProto* n) { return same_rank(c, n, 0, 1); };
  }
  if (op == "QLinearConv") {
    return [](const InferenceContext& c, const NodeProto* n) { return same_rank(c, n, 0, 3); };
  }
  if (op == "Gemm") {
    return [](const InferenceContext& c, const NodeProto* n) {
      return fixed_rank(c, n, {0, 1}, 2);
    };
  }
  if (op == "RNN" || op == "GRU" || op == "LSTM") {
    return [](const InferenceContext& c, const NodeProto* n) {
      return fixed_rank(c, n, {0, 1, 2}, 3);
    };
  }
  if (op == "MaxUnpool") return unpool;
  if (op == "STFT") return stft;
  return {};
}

// The standard registry, except that guarded ops come back as copies of their schema whose
// inference function runs the guard first. Copies live as long as the registry (one inference
// run); the global registry is never modified.
class GuardedRegistry final : public ::onnx::ISchemaRegistry {
 public:
  explicit GuardedRegistry(std::vector<const NodeProto*> nodes) : nodes_(std::move(nodes)) {}

  const OpSchema* GetSchema(const std::string& op, const int version,
                            const std::string& domain) const override {
    const OpSchema* s = ::onnx::OpSchemaRegistry::Instance()->GetSchema(op, version, domain);
    if (s == nullptr || !is_default_domain(domain) || !s->has_type_and_shape_inference_function()) {
      return s;
    }
    Guard guard = guard_for(op);
    if (!guard) return s;
    std::unique_ptr<OpSchema>& copy = guarded_[s];
    if (!copy) {
      copy = std::make_unique<OpSchema>(*s);
      copy->TypeAndShapeInferenceFunction(
          [this, guard, inner = s->GetTypeAndShapeInferenceFunction()](InferenceContext& ctx) {
            run_guarded(ctx, guard, inner);
          });
    }
    return copy.get();
  }

  // The first node a guard refused, as an error naming it; OK if none.
  Status refusal() const { return refusal_ ? invalid_input("{}", *refusal_) : Status::ok(); }

 private:
  const NodeProto* tagged_node(const InferenceContext& ctx) const {
    const AttributeProto* tag = ctx.getAttribute(kTagAttribute);
    if (tag == nullptr || tag->i() < 0 || static_cast<size_t>(tag->i()) >= nodes_.size()) {
      return nullptr;  // a node inside a function body: not tagged
    }
    return nodes_[static_cast<size_t>(tag->i())];
  }

  void run_guarded(InferenceContext& ctx, const Guard& guard,
                   const ::onnx::InferenceFunction& inner) const {
    const NodeProto* node = tagged_node(ctx);
    const Verdict v = guard(ctx, node);
    if (v.kind == Verdict::kSkip) return;
    if (v.kind == Verdict::kRefuse) {
      const std::string label = node ? node_label(*node) : "a node in a function body";
      if (!refusal_) refusal_ = fmt::format("{}: {}", label, v.why);
      // libonnx records this as the node's inference error and goes on with the next node.
      throw ::onnx::InferenceError(v.why);
    }
    inner(ctx);
  }

  std::vector<const NodeProto*> nodes_;
  mutable std::map<const OpSchema*, std::unique_ptr<OpSchema>> guarded_;
  mutable std::optional<std::string> refusal_;
};

// Tags every node a guard may look at and returns them in tag order.
std::vector<const NodeProto*> tag_guarded_nodes(ModelProto& proto) {
  std::vector<const NodeProto*> nodes;
  (void)for_each_node(*proto.mutable_graph(), [&](NodeProto& n) {
    if (is_default_domain(n.domain()) && guard_for(n.op_type())) {
      AttributeProto* tag = n.add_attribute();
      tag->set_name(kTagAttribute);
      tag->set_type(AttributeProto::INT);
      tag->set_i(static_cast<int64_t>(nodes.size()));
      nodes.push_back(&n);
    }
    return Status::ok();
  });
  return nodes;
}

}  // namespace

Status check_node_schemas(const ModelProto& proto) {
  const int opset = default_opset(proto);
  return for_each_node(proto.graph(), [&](const NodeProto& n) { return check_node(n, opset); });
}

Status guarded_shape_inference(ModelProto& proto, const ::onnx::ShapeInferenceOptions& options,
                               std::string* libonnx_error) {
  PTQ_RETURN_IF_ERROR(check_node_schemas(proto));
  GuardedRegistry registry(tag_guarded_nodes(proto));
  try {
    ::onnx::shape_inference::InferShapes(proto, &registry, options);
  } catch (const std::exception& e) {
    PTQ_RETURN_IF_ERROR(registry.refusal());
    if (libonnx_error != nullptr) *libonnx_error = e.what();
    return Status::ok();
  }
  return registry.refusal();
}

}  // namespace ptq::onnx
