// ir::Model -> ModelProto and save_model (inline or external data, chosen by option or by
// size).
#include <limits>

#include <fmt/format.h>

#include "proto.h"
#include "ptq/onnx.h"
#include "ptq/util/atomic_file.h"

namespace ptq::onnx {

namespace fs = std::filesystem;

namespace {

using AP = ::onnx::AttributeProto;

void attribute_to_proto(const ir::Attribute& a, AP* p) {
  if (!a.opaque.empty()) {
    p->ParseFromString(a.opaque);
    return;
  }
  p->set_name(a.name);
  p->set_type(static_cast<AP::AttributeType>(a.type));
  if (!a.ref_attr_name.empty()) p->set_ref_attr_name(a.ref_attr_name);
  if (!a.doc_string.empty()) p->set_doc_string(a.doc_string);
  switch (a.type) {
    case ir::AttrType::kFloat: p->set_f(a.f); break;
    case ir::AttrType::kInt: p->set_i(a.i); break;
    case ir::AttrType::kString: p->set_s(a.s); break;
    case ir::AttrType::kTensor: tensor_to_proto(a.t, p->mutable_t()); break;
    case ir::AttrType::kFloats: p->mutable_floats()->Add(a.floats.begin(), a.floats.end()); break;
    case ir::AttrType::kInts: p->mutable_ints()->Add(a.ints.begin(), a.ints.end()); break;
    case ir::AttrType::kStrings:
      for (const std::string& s : a.strings) p->add_strings(s);
      break;
    case ir::AttrType::kTensors:
      for (const ir::Tensor& t : a.tensors) tensor_to_proto(t, p->add_tensors());
      break;
    // Graphs read from a file keep their bytes (above); these were built in code.
    case ir::AttrType::kGraph:
      if (a.g) graph_to_proto(*a.g, p->mutable_g(), true);
      break;
    case ir::AttrType::kGraphs:
      for (const auto& g : a.graphs) graph_to_proto(*g, p->add_graphs(), true);
      break;
    default: break;
  }
}

void node_to_proto(const ir::Node& n, ::onnx::NodeProto* p) {
  for (const std::string& s : n.inputs) p->add_input(s);
  for (const std::string& s : n.outputs) p->add_output(s);
  if (!n.name.empty()) p->set_name(n.name);
  p->set_op_type(n.op_type);
  if (!n.domain.empty()) p->set_domain(n.domain);
  for (const ir::Attribute& a : n.attributes) attribute_to_proto(a, p->add_attribute());
  if (!n.doc_string.empty()) p->set_doc_string(n.doc_string);
}

void value_info_to_proto(const ir::ValueInfo& v, ::onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  type_to_proto(v.type, p);
  if (!v.doc_string.empty()) p->set_doc_string(v.doc_string);
}

// Bytes an initializer adds to the serialized model when stored inline (data + field overhead).
int64_t inline_cost(const ir::Tensor& t) {
  int64_t n = static_cast<int64_t>(t.nbytes()) + 16;
  for (const std::string& s : t.strings()) n += static_cast<int64_t>(s.size()) + 8;
  return n;
}

struct ExternalPlan {
  fs::path data_path;      // <model>.data
  std::string location;    // its name relative to the model
  std::vector<size_t> tensors;  // initializer indices stored there
};

// Writes the chosen initializers into the data file (atomically) and points their protos at it.
Status write_external(const ir::Graph& g, const ExternalPlan& plan, ::onnx::GraphProto* gp) {
  util::AtomicFile file(plan.data_path);
  PTQ_RETURN_IF_ERROR(file.open());
  int64_t offset = 0;
  for (size_t i : plan.tensors) {
    const ir::Tensor& t = g.initializers()[i].tensor;
    // 64-byte aligned offsets let a reader map tensors straight into SIMD-aligned memory.
    const int64_t pad = (64 - offset % 64) % 64;
    for (int64_t k = 0; k < pad; ++k) file.stream().put('\0');
    offset += pad;
    const auto length = static_cast<int64_t>(t.nbytes());
    file.stream().write(static_cast<const char*>(t.raw()), length);
    auto* tp = gp->mutable_initializer(static_cast<int>(i));
    tp->clear_raw_data();
    tp->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, std::string value) {
      auto* kv = tp->add_external_data();
      kv->set_key(key);
      kv->set_value(std::move(value));
    };
    add("location", plan.location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(length));
    offset += length;
  }
  return file.commit();
}

// A ZeroCopyOutputStream feeding SHA-256, so hashing a large graph needs no serialized copy.
}  // namespace

void graph_to_proto(const ir::Graph& g, ::onnx::GraphProto* p, bool initializer_data) {
  for (const ir::Node& n : g.nodes) node_to_proto(n, p->add_node());
  // The checker requires a graph name; a graph built in code may have none.
  p->set_name(g.name.empty() ? "main_graph" : g.name);
  for (const ir::Initializer& i : g.initializers()) {
    auto* tp = p->add_initializer();
    tensor_to_proto(i.tensor, tp, initializer_data);
    tp->set_name(i.name);
    if (!i.doc_string.empty()) tp->set_doc_string(i.doc_string);
  }
  for (const std::string& s : g.opaque_sparse_initializers) {
    p->add_sparse_initializer()->ParseFromString(s);
  }
  if (!g.doc_string.empty()) p->set_doc_string(g.doc_string);
  for (const ir::ValueInfo& v : g.inputs) value_info_to_proto(v, p->add_input());
  for (const ir::ValueInfo& v : g.outputs) value_info_to_proto(v, p->add_output());
  for (const ir::ValueInfo& v : g.value_info) value_info_to_proto(v, p->add_value_info());
  for (const std::string& s : g.opaque_quantization_annotations) {
    p->add_quantization_annotation()->ParseFromString(s);
  }
}

void model_to_proto(const ir::Model& m, ::onnx::ModelProto* p, bool initializer_data) {
  p->set_ir_version(m.ir_version);
  for (const ir::OpsetImport& o : m.opset_imports) {
    auto* op = p->add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  if (!m.producer_name.empty()) p->set_producer_name(m.producer_name);
  if (!m.producer_version.empty()) p->set_producer_version(m.producer_version);
  if (!m.domain.empty()) p->set_domain(m.domain);
  if (m.model_version != 0) p->set_model_version(m.model_version);
  if (!m.doc_string.empty()) p->set_doc_string(m.doc_string);
  graph_to_proto(m.graph, p->mutable_graph(), initializer_data);
  for (const auto& [k, v] : m.metadata_props) {
    auto* kv = p->add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  for (const std::string& s : m.opaque_training_info) p->add_training_info()->ParseFromString(s);
  for (const std::string& s : m.opaque_functions) p->add_functions()->ParseFromString(s);
}

Status save_model(const ir::Model& model, const fs::path& path, const SaveOptions& options) {
  ::onnx::ModelProto proto;
  model_to_proto(model, &proto, /*initializer_data=*/false);
  const ir::Graph& g = model.graph;
  int64_t inline_size = static_cast<int64_t>(proto.ByteSizeLong());
  for (const ir::Initializer& i : g.initializers()) inline_size += inline_cost(i.tensor);
  const bool external = options.external_data || inline_size > options.protobuf_limit_bytes;

  ExternalPlan plan;
  plan.location = path.filename().string() + ".data";
  plan.data_path = path.parent_path() / plan.location;
  auto* gp = proto.mutable_graph();
  for (size_t i = 0; i < g.initializers().size(); ++i) {
    const ir::Tensor& t = g.initializers()[i].tensor;
    if (external && t.dtype() != ir::DType::kString &&
        static_cast<int64_t>(t.nbytes()) >= options.external_min_bytes) {
      plan.tensors.push_back(i);
    } else {
      set_tensor_data(t, gp->mutable_initializer(static_cast<int>(i)));
    }
  }
  if (!plan.tensors.empty()) PTQ_RETURN_IF_ERROR(write_external(g, plan, gp));
  const size_t size = proto.ByteSizeLong();
  if (static_cast<int64_t>(size) > options.protobuf_limit_bytes ||
      size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return runtime_error("cannot write '{}': the model is {} bytes without its external data, over "
                         "the protobuf limit of {} bytes", path.string(), size,
                         options.protobuf_limit_bytes);
  }
  util::AtomicFile file(path);
  PTQ_RETURN_IF_ERROR(file.open());
  if (!proto.SerializeToOstream(&file.stream())) {
    return runtime_error("cannot serialize the model to '{}'", path.string());
  }
  return file.commit();
}

}  // namespace ptq::onnx
