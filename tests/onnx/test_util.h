// Helpers for the ptq_onnx tests: ir model comparison and a canonical form of ModelProto for
// comparing a file with its round trip.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/message_differencer.h>

#include "common/files.h"
#include "common/random.h"
#include "common/temp_dir.h"
#include "onnx/onnx_pb.h"
#include "ptq/ir.h"
#include "ptq/onnx.h"
#include "proto.h"

namespace ptq::testing {

namespace fs = std::filesystem;

// graph_hash as first written: the whole GraphProto, weights copied in, serialized
// deterministically and hashed (graph_hash.cpp now streams the same bytes without the copy).
inline std::string reference_graph_hash(const ir::Model& m) {
  ::onnx::GraphProto gp;
  onnx::graph_to_proto(m.graph, &gp, /*initializer_data=*/true);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    gp.SerializeToCodedStream(&out);
  }
  return onnx::sha256_hex(bytes);
}

inline ::onnx::ModelProto read_proto(const fs::path& p) {
  ::onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(read_file(p))) << p;
  return m;
}

inline bool same_tensor(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == ir::DType::kString) return a.strings() == b.strings();
  return a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

inline void expect_type_eq(const ir::TypeInfo& a, const ir::TypeInfo& b, const std::string& what) {
  EXPECT_EQ(a.dtype, b.dtype) << what;
  EXPECT_EQ(a.dims.has_value(), b.dims.has_value()) << what;
  if (a.dims && b.dims) {
    EXPECT_EQ(*a.dims, *b.dims) << what;
  }
  EXPECT_EQ(a.opaque, b.opaque) << what;
}

inline void expect_values_eq(const std::vector<ir::ValueInfo>& a,
                             const std::vector<ir::ValueInfo>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name) << what;
    EXPECT_EQ(a[i].doc_string, b[i].doc_string) << what;
    expect_type_eq(a[i].type, b[i].type, what + " " + a[i].name);
  }
}

inline void expect_attr_eq(const ir::Attribute& a, const ir::Attribute& b,
                           const std::string& what) {
  EXPECT_EQ(a.name, b.name) << what;
  EXPECT_EQ(a.type, b.type) << what;
  EXPECT_EQ(a.opaque, b.opaque) << what;
  EXPECT_EQ(a.doc_string, b.doc_string) << what;
  EXPECT_EQ(a.ref_attr_name, b.ref_attr_name) << what;
  EXPECT_EQ(std::memcmp(&a.f, &b.f, sizeof(float)), 0) << what;
  EXPECT_EQ(a.i, b.i) << what;
  EXPECT_EQ(a.s, b.s) << what;
  EXPECT_EQ(a.ints, b.ints) << what;
  EXPECT_EQ(a.strings, b.strings) << what;
  ASSERT_EQ(a.floats.size(), b.floats.size()) << what;
  if (!a.floats.empty()) {
    EXPECT_EQ(std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * sizeof(float)), 0)
        << what;
  }
  EXPECT_TRUE(a.t.empty() == b.t.empty() && (a.t.empty() || same_tensor(a.t, b.t))) << what;
  ASSERT_EQ(a.tensors.size(), b.tensors.size()) << what;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    EXPECT_TRUE(same_tensor(a.tensors[i], b.tensors[i])) << what;
}

// Every field of two ir models, tensors bit for bit (Graph::inferred excluded: never written).
inline void expect_models_eq(const ir::Model& a, const ir::Model& b) {
  EXPECT_EQ(a.ir_version, b.ir_version);
  ASSERT_EQ(a.opset_imports.size(), b.opset_imports.size());
  for (size_t i = 0; i < a.opset_imports.size(); ++i) {
    EXPECT_EQ(a.opset_imports[i].domain, b.opset_imports[i].domain);
    EXPECT_EQ(a.opset_imports[i].version, b.opset_imports[i].version);
  }
  EXPECT_EQ(a.producer_name, b.producer_name);
  EXPECT_EQ(a.producer_version, b.producer_version);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.model_version, b.model_version);
  EXPECT_EQ(a.doc_string, b.doc_string);
  EXPECT_EQ(a.metadata_props, b.metadata_props);
  EXPECT_EQ(a.opaque_functions, b.opaque_functions);
  EXPECT_EQ(a.opaque_training_info, b.opaque_training_info);
  const ir::Graph& ga = a.graph;
  const ir::Graph& gb = b.graph;
  EXPECT_EQ(ga.name, gb.name);
  EXPECT_EQ(ga.doc_string, gb.doc_string);
  expect_values_eq(ga.inputs, gb.inputs, "inputs");
  expect_values_eq(ga.outputs, gb.outputs, "outputs");
  expect_values_eq(ga.value_info, gb.value_info, "value_info");
  EXPECT_EQ(ga.opaque_sparse_initializers, gb.opaque_sparse_initializers);
  EXPECT_EQ(ga.opaque_quantization_annotations, gb.opaque_quantization_annotations);
  ASSERT_EQ(ga.nodes.size(), gb.nodes.size());
  for (size_t i = 0; i < ga.nodes.size(); ++i) {
    const ir::Node& na = ga.nodes[i];
    const ir::Node& nb = gb.nodes[i];
    const std::string what = "node #" + std::to_string(i) + " " + na.label();
    EXPECT_EQ(na.name, nb.name) << what;
    EXPECT_EQ(na.op_type, nb.op_type) << what;
    EXPECT_EQ(na.domain, nb.domain) << what;
    EXPECT_EQ(na.inputs, nb.inputs) << what;
    EXPECT_EQ(na.outputs, nb.outputs) << what;
    EXPECT_EQ(na.doc_string, nb.doc_string) << what;
    ASSERT_EQ(na.attributes.size(), nb.attributes.size()) << what;
    for (size_t k = 0; k < na.attributes.size(); ++k)
      expect_attr_eq(na.attributes[k], nb.attributes[k], what);
  }
  ASSERT_EQ(ga.initializers().size(), gb.initializers().size());
  for (size_t i = 0; i < ga.initializers().size(); ++i) {
    const auto& ia = ga.initializers()[i];
    const auto& ib = gb.initializers()[i];
    EXPECT_EQ(ia.name, ib.name);
    EXPECT_EQ(ia.doc_string, ib.doc_string);
    EXPECT_TRUE(same_tensor(ia.tensor, ib.tensor)) << "initializer " << ia.name;
  }
}

// ---- Canonical ModelProto ----------------------------------------------------------------------
// ptqkit writes every tensor as raw_data and keeps an attribute tensor's values, not its name.
// To compare an original file with its round trip, both are brought to that form here, with a
// conversion written apart from the library's reader.

template <typename To, typename Field>
std::string pack(const Field& field) {
  std::string out(static_cast<size_t>(field.size()) * sizeof(To), '\0');
  for (int i = 0; i < field.size(); ++i) {
    const To v = static_cast<To>(field.Get(i));
    std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(To), &v, sizeof(To));
  }
  return out;
}

inline void canonical_tensor(::onnx::TensorProto& t) {
  using TP = ::onnx::TensorProto;
  if (t.data_location() == TP::DEFAULT) t.clear_data_location();
  if (t.has_raw_data() || t.data_type() == TP::STRING) return;
  std::string raw;
  switch (t.data_type()) {
    case TP::FLOAT: raw = pack<float>(t.float_data()); break;
    case TP::DOUBLE: raw = pack<double>(t.double_data()); break;
    case TP::INT64: raw = pack<int64_t>(t.int64_data()); break;
    case TP::UINT64: raw = pack<uint64_t>(t.uint64_data()); break;
    case TP::UINT32: raw = pack<uint32_t>(t.uint64_data()); break;
    case TP::INT32: raw = pack<int32_t>(t.int32_data()); break;
    case TP::INT16: raw = pack<int16_t>(t.int32_data()); break;
    case TP::INT8: raw = pack<int8_t>(t.int32_data()); break;
    case TP::UINT8: raw = pack<uint8_t>(t.int32_data()); break;
    case TP::BOOL: raw = pack<bool>(t.int32_data()); break;
    case TP::UINT16:
    case TP::FLOAT16:
    case TP::BFLOAT16: raw = pack<uint16_t>(t.int32_data()); break;
    default: return;
  }
  t.clear_float_data();
  t.clear_double_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_uint64_data();
  t.set_raw_data(raw);
}

inline void canonical_model(::onnx::ModelProto& m) {
  auto* g = m.mutable_graph();
  for (auto& t : *g->mutable_initializer()) canonical_tensor(t);
  for (auto& n : *g->mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.type() == ::onnx::AttributeProto::TENSOR) {
        canonical_tensor(*a.mutable_t());
        a.mutable_t()->clear_name();
        a.mutable_t()->clear_doc_string();
      }
      for (auto& t : *a.mutable_tensors()) {
        canonical_tensor(t);
        t.clear_name();
        t.clear_doc_string();
      }
    }
  }
}

// Equal field by field, a field set to its default counting as unset (ptqkit omits those).
inline bool protos_equivalent(const google::protobuf::Message& a,
                              const google::protobuf::Message& b, std::string* report) {
  google::protobuf::util::MessageDifferencer d;
  d.set_message_field_comparison(google::protobuf::util::MessageDifferencer::EQUIVALENT);
  d.ReportDifferencesToString(report);
  return d.Compare(a, b);
}

}  // namespace ptq::testing
