// The data module (ptq_data): calibration and evaluation samples from .npy, .npz, ONNX
// TensorProto .pb files, raw float32 .bin files and image folders; binding them to a model's
// inputs; shuffling and batching. Sources are read lazily (by offset, file by file), so memory
// does not grow with the sample count. The conventions (image pipeline, shuffle, binding rules)
// are stated here, beside the declarations they govern.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::data {

// Same type as runtime::NamedTensors: batches feed Executor::run directly.
using NamedTensors = std::vector<std::pair<std::string, ir::Tensor>>;

enum class Layout { kNCHW, kNHWC };

// How an image becomes a tensor. Steps, in order:
//   decode (stb_image, 8 bits per channel; one channel through stb's luma
//           y = (77 R + 150 G + 29 B) >> 8 when the model has one channel)
//   resize (bilinear, half-pixel centres: src = (dst + 0.5) * in / out - 0.5, clamped at the
//           borders; as PyTorch interpolate(align_corners=False) and torchvision
//           Resize(antialias=False) on tensors; no rounding to 8 bits afterwards)
//   centre crop (top = round((h - crop_h) / 2), as torchvision CenterCrop)
//   x * scale / 255, then (x - mean[c]) / std[c]
//   channel order RGB (or BGR), layout NCHW (or NHWC).
struct ImageOptions {
  // {}: no resize; {S}: shorter side to S keeping the aspect ratio (longer side =
  // floor(S * long / short)); {H, W}: exactly H x W.
  std::vector<int64_t> resize;
  // {}: centre crop to the model's H x W when it has fixed ones (none otherwise); {H, W}.
  std::vector<int64_t> crop;
  double scale = 1.0;         // 1: values in [0, 1]; 255: values in [0, 255]
  std::vector<double> mean;   // per output channel (BGR order with bgr); one value: all; {}: 0
  std::vector<double> stddev; // per output channel; one value: all; {}: 1
  bool bgr = false;
  // nullopt: NHWC when the model's last dim is 1 or 3 and its dim 1 is not; NCHW otherwise.
  std::optional<Layout> layout;
};

// Samples a program supplies itself (arrays in memory, a generator, its own file format): one
// model input's samples, read one at a time. A Dataset binds, converts, shuffles and batches
// them as it does a file's, so calibration and evaluation need no files.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::string name() const = 0;  // names the source in messages
  virtual ir::DType dtype() const = 0;
  virtual ir::Shape sample_shape() const = 0;  // one sample, without the batch axis (one shape)
  virtual int64_t count() const = 0;
  // Writes sample i (0 <= i < count()) to dst: num_elements(sample_shape()) elements of
  // dtype(), native byte order. Called from several threads at once.
  virtual Status read(int64_t i, void* dst) const = 0;
};

// One --data argument, or a program's own samples.
struct SourceSpec {
  std::string input;  // model input name; "" = named by the source, or the model's only input
  std::filesystem::path path;
  // Read instead of `path` when set (borrowed: it must outlive the Dataset).
  const SampleSource* samples = nullptr;
};

// Splits "NAME=SRC". An argument that names an existing path is never split (paths may
// contain '='); nor is one whose part before '=' contains '/'.
SourceSpec parse_source(std::string_view arg);

struct DatasetSpec {
  std::vector<SourceSpec> sources;
  // Shape of one record of a raw float32 .bin file, batch axis first (e.g. {1, 3, 224, 224});
  // keyed by input name, "" for every .bin source without an entry of its own.
  std::map<std::string, ir::Shape> raw_shapes;
  ImageOptions image;
  int64_t batch = 0;          // 0: not asked for: the model's fixed batch dim, else default_batch
  int64_t default_batch = 1;
  int64_t samples = 0;  // 0: all; N: the first N (after shuffling)
  // --batch-axis NAME=K: input NAME's batch axis is K (kNoBatchAxis: fed whole, unbatched);
  // inputs not named here take theirs from the model and the data (see Dataset::bind).
  std::map<std::string, int64_t> batch_axes;
  // --cast: data of another element type than the input's is converted (see Dataset::bind).
  bool cast = false;
  bool shuffle = false;
  uint64_t seed = 0;
  // A NaN or ±Inf in float data is an error naming the input, the sample and the source (the
  // commands whose results such a sample would silently poison: run, eval, compare, the sweep's
  // eval set); calibration checks every activation itself (specs/calibrators.md).
  bool finite_only = false;
};

// An input without a batch axis: each batch gets one whole value.
inline constexpr int64_t kNoBatchAxis = -1;

// One input of the dataset as batches deliver it.
struct InputInfo {
  std::string name;          // model input name ("" before bind() for an unnamed source)
  ir::DType dtype;           // element type of the batches (the model's once bound)
  ir::DType stored_dtype;    // element type in the files
  ir::Shape sample_shape;    // one record: a sample without the batch axis, or a whole value;
                             // -1 on each dim where records differ (see Dataset::same_shapes)
  std::string source;        // file or folder, for messages
  int64_t batch_axis = 0;    // where batches stack samples, or kNoBatchAxis
};

// The axis of a graph output that carries the batch of the bound inputs, given its shape `got`
// in a batch of n samples: the first dim named by the same symbol as a batched input's batch
// dim; else the first batched input's batch axis when `got` has n there; kNoBatchAxis when no
// input is batched or no axis follows the batch.
int64_t output_batch_axis(const ir::Graph& graph, const std::vector<InputInfo>& inputs,
                          const std::string& output, const ir::Shape& got, int64_t n);

// The shape of a batch of `count` samples of `input` (sample_shape itself when unbatched).
ir::Shape batch_shape(const InputInfo& input, int64_t count);

class Dataset {
 public:
  // Opens every source and reads what it needs to know sizes (headers, file lists); no sample
  // data is loaded. Errors name the file (and zip member or offset).
  static Expected<Dataset> open(const DatasetSpec& spec);

  Dataset(Dataset&& other) noexcept;
  Dataset& operator=(Dataset&& other) noexcept;
  ~Dataset();

  // Matches the sources to the graph's real inputs and checks names, ranks, fixed dims and
  // dtypes; afterwards batches come in the graph's input order and dtypes. Rules:
  //  - names: NAME=SRC feeds NAME; an npz member feeds the input of its name (a lone member
  //    feeds a single-input model whatever its name); backend folders feed by TensorProto name
  //    when every name is a model input, else input_k.pb feeds the k-th input; any other
  //    source feeds the model's only input. Unknown, missing and doubly fed inputs are errors.
  //  - batch axis: each input has its own. --batch-axis NAME=K sets it (K < the input's rank;
  //    "none": no batch axis). Otherwise, for an input of rank R and stored arrays (a .npy, an
  //    npz member, a .pb file, a .bin record, a folder's file) of rank D: R = 0 has none;
  //    D = R - 1 is one sample batched on axis 0; D = R holds dim-0 samples batched on axis 0,
  //    except a whole value, fed unbatched: an ONNX test_data_set_* input (one record run
  //    exactly as stored) or a rank-1 array of exactly the shape the model fixes (a `scales`,
  //    `pads` or shape input); D = R + 1 holds dim-0 whole values. Batches stack samples on
  //    the batch axis. Before bind(), .npy/.npz/.bin arrays are stacked, folder files one
  //    sample each.
  //  - records: an unbatched input given one value feeds it to every batch; given several,
  //    one per record, each batch is one record. Inputs with several records must agree on
  //    the count.
  //  - batch: a fixed batch dim (the batch axis's) sets the batch size; --batch must then
  //    agree, and a remainder that does not fill a batch is dropped (see dropped()).
  //  - shapes: records may differ in shape (a folder of .npy files, an npz of arr_0 ..
  //    arr_N-1, images at their own size or shorter side resized) but not in dtype or rank.
  //    A batch holds records of one shape: the delivery order is sorted stably by shape
  //    (shapes in order of first appearance; with several inputs, by the tuple of theirs), so
  //    each shape's records come in full batches but for a short last one (with a fixed batch
  //    size, each shape's remainder is dropped). Only sample indices are sorted, so memory
  //    stays independent of the data's size, and since calibration statistics do not depend
  //    on order or grouping (specs/calibrators.md), neither does a calibration cache.
  //  - dtypes: the data's element type must be the input's, as ONNX Runtime requires, but for
  //    floats that widen exactly (float16 or bfloat16 to float32, any float to float64) and
  //    images (float32, feeding any float input). With --cast (DatasetSpec::cast) any number or
  //    bool feeds a float input and integers or bool feed an integer input (each value
  //    range-checked); float data never feeds an integer input. Images settle their geometry
  //    here (see ImageOptions).
  // A failed bind() leaves the dataset unusable until a bind() succeeds.
  Status bind(const ir::Graph& graph);

  // Samples the batches deliver (after --samples, less any dropped remainder).
  int64_t size() const;
  // Samples the sources hold.
  int64_t source_size() const;
  // Samples left out because the model's fixed batch dim does not divide the count.
  int64_t dropped() const;
  int64_t batch_size() const;
  int64_t num_batches() const;
  // Samples in batch b (the last may be short; with records of several shapes, each shape's).
  int64_t batch_samples(int64_t b) const;
  // Delivery position of batch b's first sample.
  int64_t batch_first(int64_t b) const;
  // True when every record of every input has one shape (no -1 in any InputInfo::sample_shape
  // from records that differ).
  bool same_shapes() const;
  const std::vector<InputInfo>& inputs() const;
  // Source index of each delivered sample, in delivery order (e.g. to reorder labels).
  const std::vector<int64_t>& order() const;

  // Batch b (0-based): samples [batch_first(b), batch_first(b) + batch_samples(b)); with one
  // shape, [b * B, min((b + 1) * B, size())), so the last may be short. Safe to call from
  // several threads at once.
  Expected<NamedTensors> batch(int64_t b) const;
  // `count` delivered samples from position `first`, as one batch (an error naming two of them
  // where their shapes differ).
  Expected<NamedTensors> read(int64_t first, int64_t count) const;

 private:
  struct Impl;
  explicit Dataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The delivery order for n samples: Fisher-Yates on std::mt19937_64(seed), for i = n-1 down to
// 1 swapping [i] with [j], j drawn uniformly in [0, i] by rejection: draw r = gen(); reject
// while r >= 2^64 - (2^64 mod (i + 1)); j = r mod (i + 1). Identical on every platform.
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed);

// Reads a whole .npy file (C order; big-endian data is converted).
Expected<ir::Tensor> load_npy(const std::filesystem::path& path);
// Writes a tensor as a .npy file (format 1.0, little-endian), atomically.
Status save_npy(const std::filesystem::path& path, const ir::Tensor& tensor);

// Writes a .npy file batch by batch: rows of `row_shape` stacked on a first axis of `rows`.
// Nothing appears at `path` until commit(); destroying an uncommitted writer leaves no file.
class NpyWriter {
 public:
  static Expected<std::unique_ptr<NpyWriter>> create(const std::filesystem::path& path,
                                                     ir::DType dtype, const ir::Shape& row_shape,
                                                     int64_t rows);
  virtual ~NpyWriter() = default;
  // Appends a tensor of shape [k, row_shape...] and the writer's dtype.
  virtual Status append(const ir::Tensor& rows) = 0;
  // Fails unless exactly `rows` rows were appended.
  virtual Status commit() = 0;
};

}  // namespace ptq::data
