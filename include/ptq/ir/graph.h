// The graph IR: an ONNX model held as plain C++ values. Values are named (as in ONNX); the
// index (GraphIndex) answers producer/consumer questions and is rebuilt after edits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ptq/ir/tensor.h"
#include "ptq/status.h"

namespace ptq::ir {

// One dimension of a declared shape: a number, a symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string param;   // symbolic name when value < 0 (may be empty: unknown)
  bool known() const { return value >= 0; }
  static Dim of(int64_t v) { return Dim{v, {}}; }
  static Dim symbol(std::string s) { return Dim{-1, std::move(s)}; }
  bool operator==(const Dim&) const = default;
};

// The declared type of a value. Non-tensor types (sequence, map, optional) keep their
// serialized TypeProto in `opaque` so they survive a round trip untouched.
struct TypeInfo {
  DType dtype = DType::kUndefined;
  std::optional<std::vector<Dim>> dims;  // nullopt: rank unknown
  std::string opaque;                     // serialized onnx.TypeProto when not a tensor
  bool has_shape() const { return dims.has_value(); }
  // Concrete shape if every dim is known.
  std::optional<Shape> concrete() const;
};

struct ValueInfo {
  std::string name;
  TypeInfo type;
  std::string doc_string;
};

// "[batch, 3, 224, 224]" / "[?]" / "unknown rank".
std::string dims_str(const std::optional<std::vector<Dim>>& dims);

enum class AttrType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kInt = 2,
  kString = 3,
  kTensor = 4,
  kGraph = 5,
  kFloats = 6,
  kInts = 7,
  kStrings = 8,
  kTensors = 9,
  kGraphs = 10,
  kSparseTensor = 11,
  kSparseTensors = 12,
  kTypeProto = 13,
  kTypeProtos = 14,
};

class Graph;

struct Attribute {
  std::string name;
  AttrType type = AttrType::kUndefined;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::string ref_attr_name;
  std::string doc_string;
  // Graph, sparse-tensor and type attributes: the serialized AttributeProto, carried as is
  // (what the writer writes back).
  std::string opaque;
  // A graph attribute (If's branches, Loop's and Scan's body) parsed from `opaque`, for the
  // executor; read-only and shared by copies. Names it reads that it does not define come from
  // the enclosing graphs (ptq/ir/subgraph.h).
  std::shared_ptr<const Graph> g;
  std::vector<std::shared_ptr<const Graph>> graphs;  // a graphs attribute's
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" and "ai.onnx" both mean the default domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;
  std::string doc_string;

  const Attribute* attr(std::string_view attr_name) const;
  bool has_attr(std::string_view attr_name) const { return attr(attr_name) != nullptr; }
  int64_t attr_int(std::string_view attr_name, int64_t fallback) const;
  float attr_float(std::string_view attr_name, float fallback) const;
  std::string attr_string(std::string_view attr_name, std::string fallback) const;
  std::vector<int64_t> attr_ints(std::string_view attr_name, std::vector<int64_t> fallback) const;
  std::vector<float> attr_floats(std::string_view attr_name, std::vector<float> fallback) const;
  void set_attr(Attribute a);
  // Input i, or "" when absent.
  const std::string& input(size_t i) const;
  bool in_default_domain() const { return domain.empty() || domain == "ai.onnx"; }
  // "Conv 'conv1'" — how errors name a node.
  std::string label() const;
};

struct Initializer {
  std::string name;
  Tensor tensor;
  std::string doc_string;
};

class Graph {
 public:
  std::string name;
  std::string doc_string;
  std::vector<Node> nodes;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
  // Types found by shape inference at load time: consulted by find_value_info after the
  // model's own declarations, never written back to a file.
  std::vector<ValueInfo> inferred;
  std::vector<std::string> opaque_sparse_initializers;  // serialized SparseTensorProto
  std::vector<std::string> opaque_quantization_annotations;  // serialized TensorAnnotation

  const std::vector<Initializer>& initializers() const { return initializers_; }
  std::vector<Initializer>& mutable_initializers() { return initializers_; }
  const Tensor* initializer(std::string_view value_name) const;
  Tensor* mutable_initializer(std::string_view value_name);
  // Adds or replaces.
  void set_initializer(std::string value_name, Tensor tensor);
  // Adds one under a name no initializer has yet (a fresh one): set_initializer() without the
  // search, for a caller adding many.
  void add_initializer(std::string value_name, Tensor tensor);
  bool remove_initializer(std::string_view value_name);

  // Declared type of a value from inputs, outputs, value_info or initializers; null if none.
  const ValueInfo* find_value_info(std::string_view value_name) const;
  // Declared dtype of a value (kUndefined when not declared anywhere).
  DType value_dtype(std::string_view value_name) const;
  bool is_graph_input(std::string_view value_name) const;
  bool is_graph_output(std::string_view value_name) const;
  // Graph inputs that are not initializers (what the user must feed).
  std::vector<const ValueInfo*> real_inputs() const;

 private:
  std::vector<Initializer> initializers_;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 8;
  std::vector<OpsetImport> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::vector<std::pair<std::string, std::string>> metadata_props;
  Graph graph;
  std::vector<std::string> opaque_functions;     // serialized FunctionProto
  std::vector<std::string> opaque_training_info; // serialized TrainingInfoProto

  // Opset version imported for `domain` ("" = default ONNX domain); 0 when not imported.
  int64_t opset(std::string_view domain = "") const;
  void set_opset(std::string_view domain, int64_t version);
  const std::string* metadata(std::string_view key) const;
  void set_metadata(std::string key, std::string value);
};

// Producer and consumer lookup over a graph; invalidated by edits to the graph's nodes.
// Hashes std::string keys and string_view lookups alike (maps declared with std::equal_to<>
// then find a string_view without making a std::string of it).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class GraphIndex {
 public:
  explicit GraphIndex(const Graph& graph);
  // Index of the node producing `value`, or -1 (graph input, initializer or unknown).
  int64_t producer(std::string_view value) const;
  // Indices of the nodes consuming `value`, in graph order (a node using it twice appears once).
  const std::vector<size_t>& consumers(std::string_view value) const;

 private:
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> producer_;
  std::unordered_map<std::string, std::vector<size_t>, StringHash, std::equal_to<>> consumers_;
};

// Node indices in an order where every node comes after its producers. Errors name the node on
// a cycle, a second producer of a value, or an input nothing produces.
Expected<std::vector<size_t>> topological_order(const Graph& graph);

}  // namespace ptq::ir
