// SampleReader: one input's samples from one source, read lazily one sample at a time; and
// Source: the readers one --data argument opened. Internal to ptq_data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "file.h"
#include "image.h"
#include "npy.h"
#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/status.h"
#include "shape_table.h"
#include "zip.h"

namespace ptq::data {

class SampleReader {
 public:
  virtual ~SampleReader() = default;
  // The file or folder (or zip member) the samples come from, for messages.
  virtual const std::string& where() const = 0;
  virtual ir::DType dtype() const = 0;
  // One record's shape; where records differ (shape_count() > 1), the first record's with -1
  // on every dim that varies.
  virtual ir::Shape sample_shape() const = 0;
  // Records of several shapes (a folder of .npy files, images of their own sizes): the
  // distinct shapes, in order of first appearance, and the index among them of record i.
  virtual int64_t shape_count() const { return 1; }
  virtual ir::Shape shape_at(int64_t /*k*/) const { return sample_shape(); }
  virtual int64_t shape_of(int64_t /*i*/) const { return 0; }
  // Shape of one stored item (an array, a file's tensor, a decoded image) before adapt().
  virtual ir::Shape item_shape() const = 0;
  // True for data ptqkit makes itself (images): it feeds any float input without --cast.
  virtual bool preprocessed() const { return false; }
  virtual int64_t count() const = 0;
  // Settles how stored items map to records for the model input `input`: a record has rank
  // `record_rank` (-1: unknown, keep the default), so an item is one record or, one rank
  // higher, records stacked on its first axis. Images take their geometry here.
  virtual Status adapt(const ir::ValueInfo& input, int64_t record_rank) = 0;
  // Reads sample i (0 <= i < count()) into dst: num_elements(shape_at(shape_of(i))) elements
  // of dtype(), native byte order. Thread-safe.
  virtual Status read(int64_t i, void* dst) const = 0;
};

// Items of one dtype and shape. An item is one sample, or, "stacked", item_shape[0] samples
// along its first axis. Arrays and raw files default to stacked, .pb folders to one sample a file.
class ItemsReader : public SampleReader {
 public:
  const std::string& where() const override { return where_; }
  ir::DType dtype() const override { return dtype_; }
  ir::Shape sample_shape() const override;
  ir::Shape item_shape() const override { return item_shape_; }
  int64_t count() const override;
  Status adapt(const ir::ValueInfo& input, int64_t record_rank) override;
  Status read(int64_t i, void* dst) const override;

 protected:
  ItemsReader(std::string where, ir::DType dtype, ir::Shape item_shape, int64_t items,
              bool stacked);
  int64_t sample_bytes() const;
  // Reads sample j of item `item` of an array of items stored one after another at `offset`.
  Status read_stored(const File& file, int64_t offset, bool swap, int64_t item, int64_t j,
                     void* dst) const;
  // Reads sample j of item `item` (j < samples per item) into dst.
  virtual Status read_from_item(int64_t item, int64_t j, void* dst) const = 0;

  std::string where_;
  ir::DType dtype_;
  ir::Shape item_shape_;
  int64_t items_;
  bool stacked_;
};

// A contiguous run of samples in one file at `offset` (a .npy, a stored npz member, a raw
// .bin); `where` names it in messages.
std::unique_ptr<SampleReader> make_contiguous_reader(File file, std::string where, int64_t offset,
                                                     ir::DType dtype, bool swap,
                                                     ir::Shape item_shape, int64_t items);
// A deflated npz member's array, whose header was read (inflate_prefix) without its data: the
// member is inflated at the first read, so a dataset that bind() refuses never inflates it.
std::unique_ptr<SampleReader> make_deflated_member_reader(File zip, ZipMember member,
                                                          int64_t data_offset,
                                                          const NpyHeader& header,
                                                          std::string where);
// One item per .npy file (headers are read now; data when asked). The files may differ in
// shape (not in dtype or rank): each is then a record of its own shape, or stacked records.
Expected<std::unique_ptr<SampleReader>> make_npy_files_reader(
    std::string where, std::vector<std::filesystem::path> files);
// One item per member of an .npz written by np.savez(f, *records) (members arr_0 .. arr_N-1):
// the members' headers are read now (deflated ones by inflating their first bytes), a
// member's data when asked. Shapes may differ as in make_npy_files_reader.
Expected<std::unique_ptr<SampleReader>> make_npz_records_reader(File zip,
                                                                std::vector<ZipMember> members);
// One item per TensorProto .pb file (the first is parsed now, the rest when asked).
Expected<std::unique_ptr<SampleReader>> make_pb_files_reader(
    std::string where, std::vector<std::filesystem::path> files, std::string* first_name);
// Decoded and preprocessed images, one sample per file.
Expected<std::unique_ptr<SampleReader>> make_image_reader(
    std::string where, std::vector<std::filesystem::path> files, const ImageOptions& options);

// A program's SampleSource as a reader (`source` borrowed). Invalid input when its dtype or
// shape cannot hold samples or its count is negative.
Expected<std::unique_ptr<SampleReader>> make_program_reader(const SampleSource& source);

// The readers one --data argument opened.
struct Source {
  enum class Kind {
    kSingle,   // one unnamed input: a .npy/.bin/.pb file, a folder of files, images
    kNpz,      // one input per member, named by the member
    kRecords,  // one unnamed input, a record per member: an npz of arr_0 .. arr_N-1 (N > 1)
    kBackend,  // ONNX backend test_data_set_*: input_k.pb, named or positional
  };
  struct Entry {
    std::string hint;  // name given by the source (npz member, TensorProto name), or ""
    std::unique_ptr<SampleReader> reader;
  };
  std::string input;  // NAME from NAME=SRC, or ""
  std::string path;
  Kind kind = Kind::kSingle;
  std::vector<Entry> entries;
};

Expected<Source> open_source(const SourceSpec& spec, const DatasetSpec& dataset);

}  // namespace ptq::data
