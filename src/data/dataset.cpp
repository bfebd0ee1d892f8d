// Dataset: the sources of one run, bound to a model's inputs, delivered in batches.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convert.h"
#include "ptq/ir/dtype.h"
#include "reader.h"

namespace ptq::data {

struct Dataset::Impl {
  struct Binding {
    std::string name;
    SampleReader* reader;
    ir::DType dtype;  // what batches hold
  };

  DatasetSpec spec;
  std::vector<Source> sources;
  std::vector<Binding> bindings;
  std::vector<InputInfo> infos;
  int64_t batch = 1;
  bool fixed_batch = false;
  int64_t source_count = 0;
  int64_t dropped = 0;
  std::vector<int64_t> order;

  Status settle();
  Status resolve(const ir::Graph& graph, std::map<std::string, SampleReader*>& fed);
  Status bind(const ir::Graph& graph);
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
Status check_shape(const ir::ValueInfo& input, const SampleReader& r) {
  if (!input.type.dims) return {};
  const auto& dims = *input.type.dims;
  const ir::Shape s = r.sample_shape();
  bool ok = dims.size() == s.size() + 1;
  for (size_t i = 0; ok && i < s.size(); ++i) {
    if (dims[i + 1].known() && dims[i + 1].value != s[i]) ok = false;
  }
  if (!ok) {
    return invalid_input("input '{}' is {} but {} gives samples of {} (batch axis excluded)",
                         input.name, ir::dims_str(input.type.dims), r.where(), ir::shape_str(s));
  }
  return {};
}

}  // namespace

Status Dataset::Impl::settle() {
  infos.clear();
  for (const Binding& b : bindings) {
    infos.push_back({b.name, b.dtype, b.reader->dtype(), b.reader->sample_shape(),
                     b.reader->where()});
  }
  for (const Binding& b : bindings) {
    // Such samples take no bytes, so nothing bounds how many a header may claim.
    if (ir::num_elements(b.reader->sample_shape()) == 0) {
      return invalid_input("{} gives samples of shape {}, which hold no values",
                           b.reader->where(), ir::shape_str(b.reader->sample_shape()));
    }
  }
  const Binding& first = bindings.front();
  source_count = first.reader->count();
  for (const Binding& b : bindings) {
    if (b.reader->count() != source_count) {
      return invalid_input("input '{}' has {} samples ({}) but input '{}' has {} ({})",
                           first.name, source_count, first.reader->where(), b.name,
                           b.reader->count(), b.reader->where());
    }
  }
  if (source_count == 0) return invalid_input("empty source: '{}' holds no samples", first.reader->where());
  order = spec.shuffle ? shuffled_order(source_count, spec.seed) : std::vector<int64_t>();
  if (!spec.shuffle) {
    order.resize(static_cast<size_t>(source_count));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (spec.samples > 0) {
    if (spec.samples > source_count) {
      return invalid_input("--samples {} but the data holds {} samples", spec.samples, source_count);
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
      impl->bindings.push_back({name, e.reader.get(), e.reader->dtype()});
    }
  }
  PTQ_RETURN_IF_ERROR(impl->settle());
  return Dataset(std::move(impl));
}

Status Dataset::Impl::resolve(const ir::Graph& graph, std::map<std::string, SampleReader*>& fed) {
  const std::vector<const ir::ValueInfo*> inputs = graph.real_inputs();
  if (inputs.empty()) return invalid_input("the model has no inputs to feed");
  std::map<std::string, std::string> fed_by;
  auto feed = [&](const std::string& name, const Source& src, SampleReader* r) -> Status {
    if (!find_input(inputs, name)) {
      return invalid_input("'{}' feeds input '{}' but the model's inputs are {}", src.path, name,
                           names_of(inputs));
    }
    if (fed.count(name)) {
      return invalid_input("input '{}' is fed twice: by '{}' and '{}'", name, fed_by[name], src.path);
    }
    fed[name] = r;
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
  std::map<std::string, SampleReader*> fed;
  PTQ_RETURN_IF_ERROR(resolve(graph, fed));
  std::vector<Binding> bound;
  int64_t size = spec.batch > 0 ? spec.batch : spec.default_batch;
  const ir::ValueInfo* fixed_by = nullptr;
  for (const ir::ValueInfo* v : graph.real_inputs()) {
    SampleReader* r = fed.at(v->name);
    const auto& dims = v->type.dims;
    if (dims && dims->empty()) {
      return invalid_input("input '{}' is a scalar: batches need a batch axis", v->name);
    }
    PTQ_RETURN_IF_ERROR(r->adapt(*v));
    PTQ_RETURN_IF_ERROR(check_shape(*v, *r));
    ir::DType want = v->type.dtype == ir::DType::kUndefined ? r->dtype() : v->type.dtype;
    if (!can_convert(r->dtype(), want)) {
      return invalid_input("input '{}' is {} but {} holds {} data", v->name,
                           ir::dtype_name(want), r->where(), ir::dtype_name(r->dtype()));
    }
    if (dims && (*dims)[0].known()) {
      const int64_t d0 = (*dims)[0].value;
      if (fixed_by && d0 != size) {
        return invalid_input("inputs '{}' and '{}' fix different batch sizes ({} and {})",
                             fixed_by->name, v->name, size, d0);
      }
      if (d0 <= 0) return invalid_input("input '{}' has a batch dim of {}", v->name, d0);
      if (spec.batch > 0 && spec.batch != d0) {
        return invalid_input("--batch {} does not fit input '{}' ({}), whose batch dim is fixed",
                             spec.batch, v->name, ir::dims_str(dims));
      }
      size = d0;
      fixed_by = v;
    }
    bound.push_back({v->name, r, want});
  }
  bindings = std::move(bound);
  batch = size;
  fixed_batch = fixed_by != nullptr;
  return settle();
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
  std::vector<std::byte> scratch;  // one sample, reused: memory is per batch, not per dataset
  for (const Impl::Binding& b : impl_->bindings) {
    ir::Shape shape = b.reader->sample_shape();
    const int64_t n = ir::num_elements(shape);
    shape.insert(shape.begin(), count);
    ir::Tensor t(b.dtype, std::move(shape));
    const ir::DType stored = b.reader->dtype();
    const size_t out_bytes = static_cast<size_t>(n) * ir::dtype_size(b.dtype);
    scratch.resize(static_cast<size_t>(n) * ir::dtype_size(stored));
    for (int64_t k = 0; k < count; ++k) {
      const int64_t index = impl_->order[static_cast<size_t>(first + k)];
      std::byte* dst = t.data<std::byte>() + static_cast<size_t>(k) * out_bytes;
      if (stored == b.dtype) {
        PTQ_RETURN_IF_ERROR(b.reader->read(index, dst));
      } else {
        PTQ_RETURN_IF_ERROR(b.reader->read(index, scratch.data()));
        PTQ_RETURN_IF_ERROR(convert(stored, scratch.data(), b.dtype, dst, n,
                                    fmt::format("{} (sample {})", b.reader->where(), index)));
      }
      if (impl_->spec.finite_only) {
        if (const int64_t at = first_nonfinite(b.dtype, dst, n); at >= 0) {
          return invalid_input(
              "input '{}': non-finite value (NaN or Inf) at element {} of sample {} of {} "
              "(--allow-nonfinite runs it anyway)",
              b.name, at, index, b.reader->where());
        }
      }
    }
    out.emplace_back(b.name, std::move(t));
  }
  return out;
}

}  // namespace ptq::data
