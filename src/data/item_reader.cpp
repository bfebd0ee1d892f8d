// ItemsReader and its two kinds: a contiguous array in one file, one TensorProto .pb per file.
#include <cstring>

#include "npy.h"
#include "reader.h"
#include "tensor_proto.h"

namespace ptq::data {

ItemsReader::ItemsReader(std::string where, ir::DType dtype, ir::Shape item_shape, int64_t items,
                         bool stacked)
    : where_(std::move(where)),
      dtype_(dtype),
      item_shape_(std::move(item_shape)),
      items_(items),
      stacked_(stacked && !item_shape_.empty()) {}

ir::Shape ItemsReader::sample_shape() const {
  if (!stacked_) return item_shape_;
  return ir::Shape(item_shape_.begin() + 1, item_shape_.end());
}

int64_t ItemsReader::count() const { return stacked_ ? items_ * item_shape_[0] : items_; }

int64_t ItemsReader::sample_bytes() const {
  return ir::num_elements(sample_shape()) * static_cast<int64_t>(ir::dtype_size(dtype_));
}

Status ItemsReader::adapt(const ir::ValueInfo& input, int64_t record_rank) {
  if (record_rank < 0) return {};
  const auto item_rank = static_cast<int64_t>(item_shape_.size());
  if (record_rank == item_rank - 1) {
    stacked_ = true;
  } else if (record_rank == item_rank) {
    stacked_ = false;
  } else {
    return invalid_input(
        "input '{}' is {} but {} holds arrays of shape {}: records must have rank {}",
        input.name, ir::dims_str(input.type.dims), where_, ir::shape_str(item_shape_),
        record_rank);
  }
  return {};
}

Status ItemsReader::read(int64_t i, void* dst) const {
  const int64_t per = stacked_ ? item_shape_[0] : 1;
  return read_from_item(i / per, i % per, dst);
}

Status ItemsReader::read_stored(const File& file, int64_t offset, bool swap, int64_t item,
                                int64_t j, void* dst) const {
  const int64_t per = stacked_ ? item_shape_[0] : 1;
  const int64_t bytes = sample_bytes();
  PTQ_RETURN_IF_ERROR(file.read_at(offset + (item * per + j) * bytes, bytes, dst));
  const auto size = ir::dtype_size(dtype_);
  if (swap) byteswap(dst, bytes / static_cast<int64_t>(size), size);
  return {};
}

namespace {

class ContiguousReader final : public ItemsReader {
 public:
  ContiguousReader(File file, std::string where, int64_t offset, ir::DType dtype, bool swap,
                   ir::Shape item_shape, int64_t items)
      : ItemsReader(std::move(where), dtype, std::move(item_shape), items, true),
        file_(std::move(file)),
        offset_(offset),
        swap_(swap) {}

 protected:
  Status read_from_item(int64_t item, int64_t j, void* dst) const override {
    return read_stored(file_, offset_, swap_, item, j, dst);
  }

 private:
  File file_;
  int64_t offset_;
  bool swap_;
};

class PbFilesReader final : public ItemsReader {
 public:
  PbFilesReader(std::string where, ir::DType dtype, ir::Shape item_shape,
                std::vector<std::filesystem::path> files)
      : ItemsReader(std::move(where), dtype, std::move(item_shape),
                    static_cast<int64_t>(files.size()), false),
        files_(std::move(files)) {}

 protected:
  Status read_from_item(int64_t item, int64_t j, void* dst) const override {
    const auto& path = files_[static_cast<size_t>(item)];
    PTQ_ASSIGN_OR_RETURN(File f, File::open(path));
    PTQ_ASSIGN_OR_RETURN(std::string bytes, f.read_string(0, f.size()));
    PTQ_ASSIGN_OR_RETURN(NamedTensor t, parse_tensor_proto(bytes, f.name()));
    if (t.tensor.dtype() != dtype_ || t.tensor.shape() != item_shape_) {
      return invalid_input("'{}' holds {} {} but the first file holds {} {}", path.string(),
                           ir::dtype_name(t.tensor.dtype()), ir::shape_str(t.tensor.shape()),
                           ir::dtype_name(dtype_), ir::shape_str(item_shape_));
    }
    const int64_t n = sample_bytes();
    if (n > 0) {  // an empty tensor may hold no storage at all
      std::memcpy(dst, static_cast<const char*>(t.tensor.raw()) + j * n, static_cast<size_t>(n));
    }
    return {};
  }

 private:
  std::vector<std::filesystem::path> files_;
};

}  // namespace

std::unique_ptr<SampleReader> make_contiguous_reader(File file, std::string where, int64_t offset,
                                                     ir::DType dtype, bool swap,
                                                     ir::Shape item_shape, int64_t items) {
  return std::make_unique<ContiguousReader>(std::move(file), std::move(where), offset, dtype, swap,
                                            std::move(item_shape), items);
}

Expected<std::unique_ptr<SampleReader>> make_pb_files_reader(
    std::string where, std::vector<std::filesystem::path> files, std::string* first_name) {
  PTQ_ASSIGN_OR_RETURN(File f, File::open(files.at(0)));
  PTQ_ASSIGN_OR_RETURN(std::string bytes, f.read_string(0, f.size()));
  PTQ_ASSIGN_OR_RETURN(NamedTensor t, parse_tensor_proto(bytes, f.name()));
  if (first_name != nullptr) *first_name = t.name;
  return std::unique_ptr<SampleReader>(std::make_unique<PbFilesReader>(
      std::move(where), t.tensor.dtype(), t.tensor.shape(), std::move(files)));
}

}  // namespace ptq::data
