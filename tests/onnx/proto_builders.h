// Building ModelProtos by hand for tests, with the storage forms and fields ptqkit itself never
// writes (typed data fields, external data, opaque types and attributes).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "onnx/onnx_pb.h"

namespace ptq::testing {

using DimSpec = std::variant<int64_t, std::string>;  // number, or symbol ("" = unknown)

inline void set_tensor_type(::onnx::ValueInfoProto* v, int elem, const std::vector<DimSpec>& dims,
                            bool with_shape = true) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  if (!with_shape) return;
  auto* shape = tt->mutable_shape();
  for (const DimSpec& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* n = std::get_if<int64_t>(&d)) {
      dim->set_dim_value(*n);
    } else if (!std::get<std::string>(d).empty()) {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
}

inline ::onnx::ValueInfoProto* add_value(
    google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* list, const std::string& name,
    int elem, const std::vector<DimSpec>& dims) {
  auto* v = list->Add();
  v->set_name(name);
  set_tensor_type(v, elem, dims);
  return v;
}

inline ::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op,
                                   const std::vector<std::string>& in,
                                   const std::vector<std::string>& out,
                                   const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  if (!name.empty()) n->set_name(name);
  return n;
}

inline ::onnx::TensorProto* add_raw_initializer(::onnx::GraphProto* g, const std::string& name,
                                                int dtype, const std::vector<int64_t>& dims,
                                                const std::string& raw) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(dtype);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
  return t;
}

// x[N,4] float -> Relu -> y; a valid minimal model at opset 13.
inline ::onnx::ModelProto relu_model() {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("relu");
  add_value(g->mutable_input(), "x", ::onnx::TensorProto::FLOAT, {std::string("N"), int64_t{4}});
  add_value(g->mutable_output(), "y", ::onnx::TensorProto::FLOAT, {std::string("N"), int64_t{4}});
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  return m;
}

}  // namespace ptq::testing
