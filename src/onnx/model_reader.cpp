// ModelProto -> ir::Model, and the entry points load_model / parse_model. Everything the ir
// has a field for is converted; what it does not model (sparse tensors, functions) is kept as
// serialized bytes so the writer can put it back untouched. Graph attributes are both: kept as
// bytes for the writer, and parsed into ir::Graphs the executor runs.
#include <climits>
#include <memory>
#include <unordered_set>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "mapped_file.h"
#include "proto.h"
#include "ptq/onnx.h"
#include "ptq/util/atomic_file.h"

namespace ptq::onnx {

namespace {

using AP = ::onnx::AttributeProto;

// Attribute types the ir keeps only as serialized AttributeProto.
bool is_opaque_attr(int type) {
  return type == AP::GRAPH || type == AP::GRAPHS || type == AP::SPARSE_TENSOR ||
         type == AP::SPARSE_TENSORS || type == AP::TYPE_PROTO || type == AP::TYPE_PROTOS ||
         type == AP::UNDEFINED;
}

Expected<ir::Graph> graph_from_proto(const ::onnx::GraphProto& p,
                                     const ExternalDataSource& external);

Expected<std::shared_ptr<const ir::Graph>> subgraph_from_proto(const ::onnx::GraphProto& p,
                                                               const ExternalDataSource& external) {
  PTQ_ASSIGN_OR_RETURN(ir::Graph g, graph_from_proto(p, external));
  return std::make_shared<const ir::Graph>(std::move(g));
}

// A graph attribute's graph(s) parsed into the ir, beside its bytes.
Status subgraphs_from_proto(const AP& p, const ir::Node& node, const ExternalDataSource& external,
                            ir::Attribute& a) {
  auto fail = [&](const Status& s) {
    return Status(s.code(), fmt::format("graph attribute '{}' of {}: {}", p.name(), node.label(),
                                        s.message()));
  };
  if (p.type() == AP::GRAPH) {
    auto g = subgraph_from_proto(p.g(), external);
    if (!g) return fail(g.status());
    a.g = std::move(*g);
  }
  for (const auto& gp : p.graphs()) {
    auto g = subgraph_from_proto(gp, external);
    if (!g) return fail(g.status());
    a.graphs.push_back(std::move(*g));
  }
  return {};
}

Expected<ir::Attribute> attribute_from_proto(const AP& p, const ir::Node& node,
                                             const ExternalDataSource& external) {
  ir::Attribute a;
  a.name = p.name();
  a.ref_attr_name = p.ref_attr_name();
  a.doc_string = p.doc_string();
  if (!AP::AttributeType_IsValid(p.type())) {
    return invalid_input("attribute '{}' of {} has unknown type code {}", p.name(), node.label(),
                         static_cast<int>(p.type()));
  }
  a.type = static_cast<ir::AttrType>(p.type());
  if (is_opaque_attr(p.type())) {
    a.opaque = p.SerializeAsString();
    if (p.type() == AP::GRAPH || p.type() == AP::GRAPHS) {
      PTQ_RETURN_IF_ERROR(subgraphs_from_proto(p, node, external, a));
    }
    return a;
  }
  const std::string what = fmt::format("tensor of attribute '{}' of {}", p.name(), node.label());
  switch (p.type()) {
    case AP::FLOAT: a.f = p.f(); break;
    case AP::INT: a.i = p.i(); break;
    case AP::STRING: a.s = p.s(); break;
    case AP::TENSOR: {
      PTQ_ASSIGN_OR_RETURN(a.t, tensor_from_proto(p.t(), external, what));
      break;
    }
    case AP::FLOATS: a.floats.assign(p.floats().begin(), p.floats().end()); break;
    case AP::INTS: a.ints.assign(p.ints().begin(), p.ints().end()); break;
    case AP::STRINGS: a.strings.assign(p.strings().begin(), p.strings().end()); break;
    case AP::TENSORS:
      for (const auto& t : p.tensors()) {
        PTQ_ASSIGN_OR_RETURN(ir::Tensor tensor, tensor_from_proto(t, external, what));
        a.tensors.push_back(std::move(tensor));
      }
      break;
    default: break;
  }
  return a;
}

Expected<ir::Node> node_from_proto(const ::onnx::NodeProto& p, size_t index,
                                   const ExternalDataSource& external) {
  ir::Node n;
  n.name = p.name();
  n.op_type = p.op_type();
  n.domain = p.domain();
  n.inputs.assign(p.input().begin(), p.input().end());
  n.outputs.assign(p.output().begin(), p.output().end());
  n.doc_string = p.doc_string();
  if (n.op_type.empty()) return invalid_input("node #{} ('{}') has no op_type", index, n.name);
  for (const AP& ap : p.attribute()) {
    PTQ_ASSIGN_OR_RETURN(ir::Attribute a, attribute_from_proto(ap, n, external));
    n.attributes.push_back(std::move(a));
  }
  return n;
}

Expected<ir::ValueInfo> value_info_from_proto(const ::onnx::ValueInfoProto& p,
                                              std::string_view kind) {
  ir::ValueInfo v;
  v.name = p.name();
  v.doc_string = p.doc_string();
  if (p.has_type()) {
    PTQ_ASSIGN_OR_RETURN(v.type, type_from_proto(p.type(), fmt::format("{} '{}'", kind, p.name())));
  }
  return v;
}

Status value_infos_from_proto(const google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>& in,
                              std::string_view kind, std::vector<ir::ValueInfo>& out) {
  out.reserve(static_cast<size_t>(in.size()));
  for (const auto& p : in) {
    PTQ_ASSIGN_OR_RETURN(ir::ValueInfo v, value_info_from_proto(p, kind));
    out.push_back(std::move(v));
  }
  return {};
}

Status initializers_from_proto(const ::onnx::GraphProto& p, const ExternalDataSource& external,
                               ir::Graph& g) {
  std::unordered_set<std::string> seen;
  auto& inits = g.mutable_initializers();
  inits.reserve(static_cast<size_t>(p.initializer_size()));
  for (const auto& t : p.initializer()) {
    if (!seen.insert(t.name()).second) {
      return invalid_input("initializer '{}' is defined twice", t.name());
    }
    PTQ_ASSIGN_OR_RETURN(ir::Tensor tensor,
                         tensor_from_proto(t, external, fmt::format("initializer '{}'", t.name())));
    inits.push_back({t.name(), std::move(tensor), t.doc_string()});
  }
  return {};
}

Expected<ir::Graph> graph_from_proto(const ::onnx::GraphProto& p,
                                     const ExternalDataSource& external) {
  ir::Graph g;
  g.name = p.name();
  g.doc_string = p.doc_string();
  g.nodes.reserve(static_cast<size_t>(p.node_size()));
  for (int i = 0; i < p.node_size(); ++i) {
    PTQ_ASSIGN_OR_RETURN(ir::Node n, node_from_proto(p.node(i), static_cast<size_t>(i), external));
    g.nodes.push_back(std::move(n));
  }
  PTQ_RETURN_IF_ERROR(initializers_from_proto(p, external, g));
  PTQ_RETURN_IF_ERROR(value_infos_from_proto(p.input(), "graph input", g.inputs));
  PTQ_RETURN_IF_ERROR(value_infos_from_proto(p.output(), "graph output", g.outputs));
  PTQ_RETURN_IF_ERROR(value_infos_from_proto(p.value_info(), "value", g.value_info));
  for (const auto& s : p.sparse_initializer())
    g.opaque_sparse_initializers.push_back(s.SerializeAsString());
  for (const auto& q : p.quantization_annotation()) {
    g.opaque_quantization_annotations.push_back(q.SerializeAsString());
  }
  return g;
}

// Structure checks beyond what the ir's topological order finds.
Status check_graph(const ir::Graph& g) {
  PTQ_RETURN_IF_ERROR(ir::topological_order(g).status());
  std::unordered_set<std::string_view> known;
  for (const ir::ValueInfo& v : g.inputs) known.insert(v.name);
  for (const ir::Initializer& i : g.initializers()) known.insert(i.name);
  for (const ir::Node& n : g.nodes) known.insert(n.outputs.begin(), n.outputs.end());
  for (const ir::ValueInfo& v : g.outputs) {
    if (v.name.empty()) return invalid_input("a graph output has no name");
    if (!known.count(v.name)) {
      return invalid_input("graph output '{}' is produced by no node and is not a graph input or "
                           "initializer", v.name);
    }
  }
  return {};
}

// Each domain once: libonnx would take the last version listed, the ir the first.
Status check_opset_imports(const ::onnx::ModelProto& p) {
  std::unordered_set<std::string> seen;
  for (const auto& o : p.opset_import()) {
    const std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
    if (!seen.insert(domain).second) {
      return invalid_input("opset_import lists domain '{}' twice", o.domain());
    }
  }
  return {};
}

}  // namespace

Expected<ir::Model> model_from_proto(const ::onnx::ModelProto& p,
                                     const ExternalDataSource& external) {
  if (!p.has_ir_version() && !p.has_graph()) {
    return invalid_input("not an ONNX model (no ir_version and no graph)");
  }
  if (p.ir_version() < kMinIrVersion || p.ir_version() > kMaxIrVersion) {
    return invalid_input("unsupported IR version {} (supported: {}..{})", p.ir_version(),
                         kMinIrVersion, kMaxIrVersion);
  }
  if (!p.has_graph()) return invalid_input("model has no graph");
  if (p.opset_import_size() == 0)
    return invalid_input("model imports no opset (opset_import is empty)");
  ir::Model m;
  m.ir_version = p.ir_version();
  PTQ_RETURN_IF_ERROR(check_opset_imports(p));
  for (const auto& o : p.opset_import()) m.opset_imports.push_back({o.domain(), o.version()});
  m.producer_name = p.producer_name();
  m.producer_version = p.producer_version();
  m.domain = p.domain();
  m.model_version = p.model_version();
  m.doc_string = p.doc_string();
  for (const auto& kv : p.metadata_props()) m.metadata_props.emplace_back(kv.key(), kv.value());
  PTQ_ASSIGN_OR_RETURN(m.graph, graph_from_proto(p.graph(), external));
  for (const auto& f : p.functions()) m.opaque_functions.push_back(f.SerializeAsString());
  for (const auto& t : p.training_info()) m.opaque_training_info.push_back(t.SerializeAsString());
  PTQ_RETURN_IF_ERROR(check_graph(m.graph));
  return m;
}

namespace {

Status parse_proto(std::string_view bytes, ::onnx::ModelProto& proto) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return invalid_input("model is {} bytes, over protobuf's 2 GB limit (store weights as "
                         "external data)", bytes.size());
  }
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  in.SetTotalBytesLimit(INT_MAX);
  if (!proto.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
    return invalid_input("not an ONNX model: protobuf parsing failed (truncated or not a model "
                         "file, {} bytes)", bytes.size());
  }
  return {};
}

// Regular files are mapped (mapped_file.h); anything else (a pipe, a missing path) goes
// through util::read_file. Read errors name the file already; parse errors do not.
Status parse_file(const std::filesystem::path& path, ::onnx::ModelProto& proto) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    PTQ_ASSIGN_OR_RETURN(std::string bytes, util::read_file(path));
    return parse_proto(bytes, proto);
  }
  PTQ_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  return parse_proto(file.bytes(), proto);
}

bool names_file(const Status& s, const std::filesystem::path& path) {
  return s.message().starts_with(fmt::format("'{}'", path.string())) ||
         s.message().starts_with(fmt::format("cannot read '{}'", path.string()));
}

Expected<ir::Model> convert(::onnx::ModelProto& proto, const std::filesystem::path& base_dir,
                            const LoadOptions& options) {
  PTQ_ASSIGN_OR_RETURN(ir::Model model, model_from_proto(proto, ExternalDataSource{base_dir}));
  // Shape inference checks the nodes against their schemas first; without it, check them here.
  if (options.infer_shapes) {
    PTQ_RETURN_IF_ERROR(infer_shapes(proto, model.graph));
  } else {
    PTQ_RETURN_IF_ERROR(check_node_schemas(proto));
  }
  return model;
}

}  // namespace

Expected<ir::Model> parse_model(std::string_view bytes, const std::filesystem::path& base_dir,
                                const LoadOptions& options) {
  ::onnx::ModelProto proto;
  PTQ_RETURN_IF_ERROR(parse_proto(bytes, proto));
  return convert(proto, base_dir, options);
}

Expected<ir::Model> load_model(const std::filesystem::path& path, const LoadOptions& options) {
  ::onnx::ModelProto proto;
  // The file is unmapped once parsed: a large model is held twice, not three times.
  Status parsed = parse_file(path, proto);
  auto model = parsed.is_ok() ? convert(proto, path.parent_path(), options)
                              : Expected<ir::Model>(std::move(parsed));
  if (!model) {
    const Status& s = model.status();
    if (names_file(s, path)) return s;
    return Status(s.code(), fmt::format("'{}': {}", path.string(), s.message()));
  }
  return model;
}

}  // namespace ptq::onnx
