// graph_hash: SHA-256 of the GraphProto that graph_to_proto writes with initializer data, in
// protobuf's deterministic serialization. The bytes are produced piece by piece so that the
// weights are hashed straight from the IR tensors, never copied into a proto: protobuf writes
// known fields in field-number order, so the message is
//   GraphProto  [node 1, name 2] [initializer 5]* [doc_string 10, input 11, ... 15]
//   initializer (numeric) [dims 1, data_type 2, name 8] raw_data 9 [doc_string 12]
// and each initializer is written as tag 5, its length, then its own pieces. (Copying the
// 45 MB of ResNet-18's weights into a proto took ~200 ms, page faults included, on every
// calibration; the hash itself is ~30 ms with the SHA extensions.)
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <string>
#include <vector>

#include "proto.h"
#include "ptq/onnx.h"
#include "sha256.h"

namespace ptq::onnx {

namespace {

namespace pb = google::protobuf;

constexpr uint32_t kLengthDelimited = 2;
constexpr int kGraphInitializer = 5;
constexpr int kTensorRawData = 9;

// `message` serialized deterministically (no length prefix).
std::string serialized(const pb::Message& message) {
  std::string bytes;
  {
    pb::io::StringOutputStream stream(&bytes);
    pb::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&out);
  }
  return bytes;
}

void update_varint(Sha256& h, uint64_t v) {
  uint8_t bytes[10];
  size_t n = 0;
  for (; v >= 0x80; v >>= 7) bytes[n++] = static_cast<uint8_t>(v | 0x80);
  bytes[n++] = static_cast<uint8_t>(v);
  h.update(bytes, n);
}

void update_field_head(Sha256& h, int number, uint64_t length) {
  update_varint(h, static_cast<uint64_t>(number) << 3 | kLengthDelimited);
  update_varint(h, length);
}

size_t varint_size(uint64_t v) { return pb::io::CodedOutputStream::VarintSize64(v); }

// Moves the set fields of `from` numbered above `number` into `to` (a message of its type).
void move_fields_above(pb::Message& from, pb::Message& to, int number) {
  const pb::Reflection* r = from.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields, above;
  r->ListFields(from, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    if (f->number() > number) above.push_back(f);
  }
  r->SwapFields(&from, &to, above);
}

// One initializer as field 5 of the graph: `meta` is its proto without data.
void update_initializer(Sha256& h, ::onnx::TensorProto& meta, const ir::Tensor& t) {
  if (t.dtype() == ir::DType::kString) {  // string_data (6) sits among the header fields
    set_tensor_data(t, &meta);
    const std::string bytes = serialized(meta);
    update_field_head(h, kGraphInitializer, bytes.size());
    h.update(bytes);
    return;
  }
  ::onnx::TensorProto tail;
  move_fields_above(meta, tail, kTensorRawData);
  const std::string head_bytes = serialized(meta), tail_bytes = serialized(tail);
  const uint64_t n = t.nbytes();
  const uint64_t raw_field = varint_size(kTensorRawData << 3) + varint_size(n) + n;
  update_field_head(h, kGraphInitializer, head_bytes.size() + raw_field + tail_bytes.size());
  h.update(head_bytes);
  update_field_head(h, kTensorRawData, n);
  if (n > 0) h.update(t.raw(), n);
  h.update(tail_bytes);
}

}  // namespace

std::string graph_hash(const ir::Model& model) {
  const ir::Graph& g = model.graph;
  ::onnx::GraphProto head;
  graph_to_proto(g, &head, /*initializer_data=*/false);
  ::onnx::GraphProto tail;
  move_fields_above(head, tail, kGraphInitializer);
  pb::RepeatedPtrField<::onnx::TensorProto> initializers;
  initializers.Swap(head.mutable_initializer());
  Sha256 h;
  h.update(serialized(head));
  for (int i = 0; i < initializers.size(); ++i) {
    update_initializer(h, initializers[i], g.initializers()[static_cast<size_t>(i)].tensor);
  }
  h.update(serialized(tail));
  return h.hex_digest();
}

}  // namespace ptq::onnx
