// Dataset: the sources of one run, bound to a model's inputs, delivered in batches.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "batch_axis.h"
#include "convert.h"
#include "ptq/ir/dtype.h"
#include "reader.h"

namespace ptq::data {

struct Dataset::Impl {
  struct Binding {
    std::string name;
    SampleReader* reader;
    ir::DType dtype;  // what batches hold
    int64_t axis = 0;  // batch axis, or kNoBatchAxis
    // One record per batch of several (an unbatched input with a value per record).
    bool per_record() const { return axis == kNoBatchAxis && reader->count() != 1; }
    // Takes part in the record count (all but an unbatched input's single value).
    bool counted() const { return axis != kNoBatchAxis || reader->count() != 1; }
  };
  struct Fed {
    SampleReader* reader;
    bool as_stored;  // an ONNX test_data_set_* folder
  };

  DatasetSpec spec;
  std::vector<Source> sources;
  std::vector<Binding> bindings;
  std::vector<InputInfo> infos;
  int64_t batch = 1;
  bool fixed_batch = false;
  int64_t source_count = 0;
  int64_t dropped = 0;
  bool bound = false;  // bind() has settled each input's batch axis
  std::vector<int64_t> order;

  Status settle();
  Status resolve(const ir::Graph& graph, std::map<std::string, Fed>& fed);
  Status bind(const ir::Graph& graph);
  Expected<Binding> bind_input(const ir::ValueInfo& v, Fed fed);
  Status settle_batch(const std::vector<const ir::ValueInfo*>& inputs);
  Status read_sample(const Binding& b, int64_t index, std::byte* dst) const;
  Status read_stacked(const Binding& b, int64_t first, int64_t count, ir::Tensor& t) const;
};

namespace {

std::string names_of(const std::vector<const ir::ValueInfo*>& inputs) {
  std::vector<std::string> n;
  for (const ir::ValueInfo* v : inputs) n.push_back("'" + v->name + "'");
  return fmt::format("{}", fmt::join(n, ", "));
}

const ir::ValueInfo* find_input(const std::vector<const ir::ValueInfo*>& inputs,
                                std::string_view name) {
  for (const ir::ValueInfo* v : inputs) {
    if (v->name == name) return v;
  }
  return nullptr;
}

// Picks the entry of a NAME=SRC source: its only entry, or the npz member called NAME.
Status select_named_entry(Source& src) {
  if (src.input.empty() || src.entries.size() == 1) return {};
  for (auto& e : src.entries) {
    if (e.hint == src.input) {
      Source::Entry keep = std::move(e);
      src.entries.clear();
      src.entries.push_back(std::move(keep));
      return {};
    }
  }
  return invalid_input("'{}' holds {} arrays and none is named '{}'", src.path,
                       src.entries.size(), src.input);
}

// The one-line shape check: fixed dims must match, symbolic ones accept anything.
Status check_shape(const ir::ValueInfo& input, const SampleReader& r, int64_t axis) {
  if (!input.type.dims) return {};
  const auto& dims = *input.type.dims;
  ir::Shape s = r.sample_shape();
  if (axis != kNoBatchAxis) s.insert(s.begin() + axis, -1);
  bool ok = dims.size() == s.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    if (s[i] >= 0 && dims[i].known() && dims[i].value != s[i]) ok = false;
  }
  if (ok) return {};
  if (axis == kNoBatchAxis) {
    return invalid_input("input '{}' is {} but {} gives values of {} (fed whole, unbatched)",
                         input.name, ir::dims_str(input.type.dims), r.where(),
                         ir::shape_str(r.sample_shape()));
  }
  return invalid_input("input '{}' is {} but {} gives samples of {} (batch axis {} excluded)",
                       input.name, ir::dims_str(input.type.dims), r.where(),
                       ir::shape_str(r.sample_shape()), axis);
}

// A float type into a wider one (float16 or bfloat16 to float32, anything to float64): every
// value survives, so no --cast is asked (examples/data/calib.npy is float16 to halve its size).
bool widens_exactly(ir::DType from, ir::DType to) {
  using ir::DType;
  const bool half = from == DType::kFloat16 || from == DType::kBFloat16;
  if (to == DType::kFloat32) return half;
  return to == DType::kFloat64 && (half || from == DType::kFloat32);
}

// How to feed data of `from` to an input of `to`, for the dtype mismatch error.
std::string cast_hint(ir::DType from, ir::DType to) {
  if (!can_convert(from, to)) return "";
  if (from == ir::DType::kUInt8 && ir::is_float(to)) {
    return " (pixels? give the image files, with --scale 255 for a 0-255 model; --cast "
           "converts the values as they are)";
  }
  return " (--cast converts it)";
}

}  // namespace

Status Dataset::Impl::settle() {
  infos.clear();
  for (const Binding& b : bindings) {
    infos.push_back({b.name, b.dtype, b.reader->dtype(), b.reader->sample_shape(),
                     b.reader->where(), b.axis});
  }
  for (const Binding& b : bindings) {
    // Such samples take no bytes, so nothing bounds how many a header may claim; one record
    // (an empty `axes` input of a test_data_set folder) bounds itself and may be empty.
    if (b.reader->count() > 1 && ir::num_elements(b.reader->sample_shape()) == 0) {
      return invalid_input("{} gives samples of shape {}, which hold no values",
                           b.reader->where(), ir::shape_str(b.reader->sample_shape()));
    }
  }
  const Binding* first = nullptr;
  for (const Binding& b : bindings) {
    if (!b.counted()) continue;
    if (first == nullptr) first = &b;
    // Counts are compared once bound: before, any array may yet be a whole value.
    if (bound && b.reader->count() != first->reader->count()) {
      return invalid_input("input '{}' has {} samples ({}) but input '{}' has {} ({})",
                           first->name, first->reader->count(), first->reader->where(), b.name,
                           b.reader->count(), b.reader->where());
    }
  }
  source_count = first != nullptr ? first->reader->count() : 1;
  if (source_count == 0) {
    return invalid_input("empty source: '{}' holds no samples", first->reader->where());
  }
  order = spec.shuffle ? shuffled_order(source_count, spec.seed) : std::vector<int64_t>();
  if (!spec.shuffle) {
    order.resize(static_cast<size_t>(source_count));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (spec.samples > 0) {
    if (spec.samples > source_count) {
      return invalid_input("--samples {} but the data holds {} samples", spec.samples,
                           source_count);
    }
    order.resize(static_cast<size_t>(spec.samples));
  }
  dropped = fixed_batch ? static_cast<int64_t>(order.size()) % batch : 0;
  order.resize(order.size() - static_cast<size_t>(dropped));
  if (order.empty()) {
    return invalid_input("the model's fixed batch size {} needs at least {} samples; the data "
                         "gives {}",
                         batch, batch, dropped);
  }
  return {};
}

Expected<Dataset> Dataset::open(const DatasetSpec& spec) {
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  if (spec.sources.empty()) return usage_error("no data source given (--data SRC)");
  if (spec.batch < 0 || spec.default_batch <= 0) return usage_error("--batch must be positive");
  if (spec.samples < 0) return usage_error("--samples must be positive");
  impl->batch = spec.batch > 0 ? spec.batch : spec.default_batch;
  for (const SourceSpec& s : spec.sources) {
    PTQ_ASSIGN_OR_RETURN(Source src, open_source(s, spec));
    PTQ_RETURN_IF_ERROR(select_named_entry(src));
    impl->sources.push_back(std::move(src));
  }
  for (Source& src : impl->sources) {
    for (Source::Entry& e : src.entries) {
      const std::string& name = src.input.empty() ? e.hint : src.input;
      impl->bindings.push_back({name, e.reader.get(), e.reader->dtype(), 0});
    }
  }
  PTQ_RETURN_IF_ERROR(impl->settle());
  return Dataset(std::move(impl));
}

Status Dataset::Impl::resolve(const ir::Graph& graph, std::map<std::string, Fed>& fed) {
  const std::vector<const ir::ValueInfo*> inputs = graph.real_inputs();
  if (inputs.empty()) return invalid_input("the model has no inputs to feed");
  std::map<std::string, std::string> fed_by;
  auto feed = [&](const std::string& name, const Source& src, SampleReader* r) -> Status {
    const bool as_stored = src.kind == Source::Kind::kBackend;
    if (!find_input(inputs, name)) {
      return invalid_input("'{}' feeds input '{}' but the model's inputs are {}", src.path, name,
                           names_of(inputs));
    }
    if (fed.count(name)) {
      return invalid_input("input '{}' is fed twice: by '{}' and '{}'", name, fed_by[name],
                           src.path);
    }
    fed[name] = {r, as_stored};
    fed_by[name] = src.path;
    return {};
  };
  for (Source& src : sources) {
    const bool single_pair = inputs.size() == 1 && src.entries.size() == 1;
    bool by_hint = src.kind == Source::Kind::kNpz;
    if (src.kind == Source::Kind::kBackend) {
      by_hint = std::all_of(src.entries.begin(), src.entries.end(),
                            [&](const Source::Entry& e) { return find_input(inputs, e.hint); });
    }
    for (size_t k = 0; k < src.entries.size(); ++k) {
      SampleReader* r = src.entries[k].reader.get();
      if (!src.input.empty()) {
        PTQ_RETURN_IF_ERROR(feed(src.input, src, r));
      } else if (single_pair) {
        PTQ_RETURN_IF_ERROR(feed(inputs[0]->name, src, r));
      } else if (by_hint) {
        PTQ_RETURN_IF_ERROR(feed(src.entries[k].hint, src, r));
      } else if (src.kind == Source::Kind::kBackend) {
        if (k >= inputs.size()) {
          return invalid_input("'{}' has input_{}.pb but the model has {} inputs ({})", src.path,
                               k, inputs.size(), names_of(inputs));
        }
        PTQ_RETURN_IF_ERROR(feed(inputs[k]->name, src, r));
      } else {
        return invalid_input("the model has {} inputs ({}); name the input '{}' feeds with "
                             "--data NAME={}",
                             inputs.size(), names_of(inputs), src.path, src.path);
      }
    }
  }
  for (const ir::ValueInfo* v : inputs) {
    if (!fed.count(v->name)) {
      return invalid_input("no data for model input '{}' (give --data {}=SRC)", v->name, v->name);
    }
  }
  return {};
}

Status Dataset::bind(const ir::Graph& graph) {
  Status s = impl_->bind(graph);
  if (!s.is_ok()) {
    // Readers may be half-adapted: deliver nothing rather than batches of the wrong shape.
    impl_->bindings.clear();
    impl_->infos.clear();
    impl_->order.clear();
  }
  return s;
}

Status Dataset::Impl::bind(const ir::Graph& graph) {
  std::map<std::string, Fed> fed;
  PTQ_RETURN_IF_ERROR(resolve(graph, fed));
  const std::vector<const ir::ValueInfo*> inputs = graph.real_inputs();
  for (const auto& [name, axis] : spec.batch_axes) {
    if (!find_input(inputs, name)) {
      return usage_error("--batch-axis names '{}' but the model's inputs are {}", name,
                         names_of(inputs));
    }
  }
  std::vector<Binding> fresh;
  for (const ir::ValueInfo* v : inputs) {
    PTQ_ASSIGN_OR_RETURN(Binding b, bind_input(*v, fed.at(v->name)));
    fresh.push_back(std::move(b));
  }
  bindings = std::move(fresh);
  PTQ_RETURN_IF_ERROR(settle_batch(inputs));
  bound = true;
  return settle();
}

Expected<Dataset::Impl::Binding> Dataset::Impl::bind_input(const ir::ValueInfo& v, Fed fed) {
  SampleReader* r = fed.reader;
  const auto asked = spec.batch_axes.find(v.name);
  PTQ_ASSIGN_OR_RETURN(
      BatchAxis axis,
      choose_batch_axis(v, r->item_shape(), r->where(), fed.as_stored,
                        asked == spec.batch_axes.end() ? std::nullopt
                                                       : std::optional<int64_t>(asked->second)));
  PTQ_RETURN_IF_ERROR(r->adapt(v, axis.record_rank));
  PTQ_RETURN_IF_ERROR(check_shape(v, *r, axis.axis));
  const ir::DType want = v.type.dtype == ir::DType::kUndefined ? r->dtype() : v.type.dtype;
  const bool same = r->dtype() == want || (r->preprocessed() && ir::is_float(want)) ||
                    widens_exactly(r->dtype(), want);
  if (!same && !(spec.cast && can_convert(r->dtype(), want))) {
    return invalid_input("input '{}' is {} but {} holds {} data{}", v.name, ir::dtype_name(want),
                         r->where(), ir::dtype_name(r->dtype()), cast_hint(r->dtype(), want));
  }
  return Binding{v.name, r, want, axis.axis};
}

// The batch size: the model's fixed batch dim, --batch, or one record per batch where an
// input cannot stack records.
Status Dataset::Impl::settle_batch(const std::vector<const ir::ValueInfo*>& inputs) {
  int64_t size = spec.batch > 0 ? spec.batch : spec.default_batch;
  const ir::ValueInfo* fixed_by = nullptr;
  const Binding* single = nullptr;  // an input that takes one record per batch
  bool any_batched = false;
  for (size_t i = 0; i < bindings.size(); ++i) {
    const Binding& b = bindings[i];
    const ir::ValueInfo* v = inputs[i];
    if (b.per_record()) single = &b;
    if (b.axis == kNoBatchAxis) continue;
    any_batched = true;
    const auto& dims = v->type.dims;
    if (!dims || !(*dims)[static_cast<size_t>(b.axis)].known()) continue;
    const int64_t d = (*dims)[static_cast<size_t>(b.axis)].value;
    if (fixed_by && d != size) {
      return invalid_input("inputs '{}' and '{}' fix different batch sizes ({} and {}); feed a "
                           "whole value unbatched with --batch-axis {}=none",
                           fixed_by->name, v->name, size, d, v->name);
    }
    if (d <= 0) return invalid_input("input '{}' has a batch dim of {}", v->name, d);
    if (spec.batch > 0 && spec.batch != d) {
      return invalid_input("--batch {} does not fit input '{}' ({}), whose batch dim is fixed",
                           spec.batch, v->name, ir::dims_str(dims));
    }
    size = d;
    fixed_by = v;
  }
  if (single != nullptr || !any_batched) {
    // Each batch is one record as stored.
    if (spec.batch > 1 || size != 1) {
      const std::string why =
          single != nullptr
              ? fmt::format("input '{}' has no batch axis and a value per record ({})",
                            single->name, single->reader->where())
              : std::string("no input has a batch axis (--batch-axis NAME=K names one)");
      if (spec.batch > 1 || fixed_by != nullptr) {
        return invalid_input("batches of {} samples cannot be made: {}", size, why);
      }
    }
    size = 1;
  }
  batch = size;
  fixed_batch = fixed_by != nullptr;
  return {};
}

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::Dataset(Dataset&& other) noexcept = default;
Dataset& Dataset::operator=(Dataset&& other) noexcept = default;
Dataset::~Dataset() = default;

int64_t Dataset::size() const { return static_cast<int64_t>(impl_->order.size()); }
int64_t Dataset::source_size() const { return impl_->source_count; }
int64_t Dataset::dropped() const { return impl_->dropped; }
int64_t Dataset::batch_size() const { return impl_->batch; }
int64_t Dataset::num_batches() const { return (size() + impl_->batch - 1) / impl_->batch; }
const std::vector<InputInfo>& Dataset::inputs() const { return impl_->infos; }
const std::vector<int64_t>& Dataset::order() const { return impl_->order; }

Expected<NamedTensors> Dataset::batch(int64_t b) const {
  if (b < 0 || b >= num_batches()) {
    return runtime_error("batch {} out of range (the dataset has {})", b, num_batches());
  }
  const int64_t first = b * impl_->batch;
  return read(first, std::min(impl_->batch, size() - first));
}

namespace {

// The index of the first NaN or ±Inf among n elements of a float dtype, or -1 (also for other
// dtypes).
int64_t first_nonfinite(ir::DType dtype, const std::byte* data, int64_t n) {
  auto find = [&](auto tag, auto to_float) -> int64_t {
    using T = decltype(tag);
    const T* x = reinterpret_cast<const T*>(data);
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(to_float(x[i]))) return i;
    }
    return -1;
  };
  switch (dtype) {
    case ir::DType::kFloat32:
      return find(float{}, [](float v) { return v; });
    case ir::DType::kFloat64:
      return find(double{}, [](double v) { return v; });
    case ir::DType::kFloat16:
      return find(uint16_t{}, ir::half_to_float);
    case ir::DType::kBFloat16:
      return find(uint16_t{}, ir::bfloat16_to_float);
    default:
      return -1;
  }
}

}  // namespace

Expected<NamedTensors> Dataset::read(int64_t first, int64_t count) const {
  if (first < 0 || count <= 0 || first > size() - count) {
    return runtime_error("samples {}..{} out of range (the dataset has {})", first, first + count,
                         size());
  }
  NamedTensors out;
  for (const Impl::Binding& b : impl_->bindings) {
    if (b.per_record() && count != 1) {
      return runtime_error("input '{}' has no batch axis: a batch holds one record, not {}",
                           b.name, count);
    }
    ir::Tensor t(b.dtype, batch_shape(impl_->infos[out.size()], count));
    if (b.axis == kNoBatchAxis) {
      const int64_t index = b.per_record() ? impl_->order[static_cast<size_t>(first)] : 0;
      PTQ_RETURN_IF_ERROR(impl_->read_sample(b, index, t.data<std::byte>()));
    } else {
      PTQ_RETURN_IF_ERROR(impl_->read_stacked(b, first, count, t));
    }
    out.emplace_back(b.name, std::move(t));
  }
  return out;
}

// Sample `index` of binding b into dst, converted to the batch dtype and checked for NaN/Inf.
Status Dataset::Impl::read_sample(const Binding& b, int64_t index, std::byte* dst) const {
  const int64_t n = ir::num_elements(b.reader->sample_shape());
  const ir::DType stored = b.reader->dtype();
  if (stored == b.dtype) {
    PTQ_RETURN_IF_ERROR(b.reader->read(index, dst));
  } else {
    std::vector<std::byte> scratch(static_cast<size_t>(n) * ir::dtype_size(stored));
    PTQ_RETURN_IF_ERROR(b.reader->read(index, scratch.data()));
    PTQ_RETURN_IF_ERROR(convert(stored, scratch.data(), b.dtype, dst, n,
                                fmt::format("{} (sample {})", b.reader->where(), index)));
  }
  if (spec.finite_only) {
    if (const int64_t at = first_nonfinite(b.dtype, dst, n); at >= 0) {
      return invalid_input(
          "input '{}': non-finite value (NaN or Inf) at element {} of sample {} of {} "
          "(--allow-nonfinite runs it anyway)",
          b.name, at, index, b.reader->where());
    }
  }
  return {};
}

// `count` samples from delivery position `first`, stacked on b's batch axis into t: a sample
// of shape [outer dims, inner dims] lands as `outer` blocks of `inner` elements, one per
// position of the axis.
Status Dataset::Impl::read_stacked(const Binding& b, int64_t first, int64_t count,
                                   ir::Tensor& t) const {
  const ir::Shape sample = b.reader->sample_shape();
  const auto axis = static_cast<size_t>(b.axis);
  const int64_t outer = ir::num_elements(ir::Shape(sample.begin(), sample.begin() + axis));
  const size_t inner_bytes = static_cast<size_t>(ir::num_elements(sample) / std::max<int64_t>(
                                 outer, 1)) * ir::dtype_size(b.dtype);
  std::byte* base = t.data<std::byte>();
  std::vector<std::byte> one(outer == 1 ? 0 : inner_bytes * static_cast<size_t>(outer));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t index = order[static_cast<size_t>(first + k)];
    std::byte* slot = base + static_cast<size_t>(k) * inner_bytes;
    if (outer == 1) {
      PTQ_RETURN_IF_ERROR(read_sample(b, index, slot));
      continue;
    }
    PTQ_RETURN_IF_ERROR(read_sample(b, index, one.data()));
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(slot + static_cast<size_t>(o * count) * inner_bytes,
                  one.data() + static_cast<size_t>(o) * inner_bytes, inner_bytes);
    }
  }
  return {};
}

ir::Shape batch_shape(const InputInfo& input, int64_t count) {
  ir::Shape shape = input.sample_shape;
  if (input.batch_axis != kNoBatchAxis) shape.insert(shape.begin() + input.batch_axis, count);
  return shape;
}

int64_t Dataset::batch_samples(int64_t b) const {
  return std::min(impl_->batch, size() - b * impl_->batch);
}

}  // namespace ptq::data
