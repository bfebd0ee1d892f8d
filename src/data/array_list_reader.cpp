// Arrays stored one per file (a folder of .npy) or one per npz member (np.savez(f, *records)),
// whose shapes may differ: each array is one record, or records stacked on its first axis.
#include <algorithm>
#include <cstring>
#include <optional>

#include "npy.h"
#include "reader.h"

namespace ptq::data {

namespace {

class ArrayListReader : public SampleReader {
 public:
  const std::string& where() const override { return where_; }
  ir::DType dtype() const override { return dtype_; }
  ir::Shape sample_shape() const override { return records_.common(); }
  int64_t shape_count() const override { return records_.size(); }
  ir::Shape shape_at(int64_t k) const override { return records_.shape(k); }
  int64_t shape_of(int64_t i) const override { return records_.id(array_of(i)); }
  ir::Shape item_shape() const override { return items_.common(); }
  int64_t count() const override { return starts_.back(); }

  Status adapt(const ir::ValueInfo& input, int64_t record_rank) override {
    if (record_rank < 0) return {};
    const auto rank = static_cast<int64_t>(headers_.front().shape.size());
    if (record_rank != rank && record_rank != rank - 1) {
      return invalid_input(
          "input '{}' is {} but {} holds arrays of shape {}: records must have rank {}",
          input.name, ir::dims_str(input.type.dims), where_, ir::shape_str(item_shape()),
          record_rank);
    }
    settle(record_rank == rank - 1);
    return {};
  }

  Status read(int64_t i, void* dst) const override {
    const int64_t k = array_of(i);
    const NpyHeader& h = headers_[static_cast<size_t>(k)];
    const int64_t bytes = ir::num_elements(records_.shape(records_.id(k))) *
                          static_cast<int64_t>(ir::dtype_size(dtype_));
    const int64_t at = (i - starts_[static_cast<size_t>(k)]) * bytes;
    PTQ_RETURN_IF_ERROR(read_array(k, h, at, bytes, dst));
    if (h.swap) byteswap(dst, bytes / static_cast<int64_t>(ir::dtype_size(dtype_)),
                         ir::dtype_size(dtype_));
    return {};
  }

 protected:
  // `names[k]` names array k in messages; every header must share dtype and rank.
  Status init(std::string where, std::vector<NpyHeader> headers,
              const std::vector<std::string>& names) {
    where_ = std::move(where);
    headers_ = std::move(headers);
    dtype_ = headers_.front().dtype;
    for (size_t k = 1; k < headers_.size(); ++k) {
      const NpyHeader& a = headers_.front();
      const NpyHeader& b = headers_[k];
      if (b.dtype != a.dtype || b.shape.size() != a.shape.size()) {
        return invalid_input("'{}' holds {} {} but '{}' holds {} {}: records of one source need "
                             "the same dtype and rank",
                             names[k], ir::dtype_name(b.dtype), ir::shape_str(b.shape), names[0],
                             ir::dtype_name(a.dtype), ir::shape_str(a.shape));
      }
    }
    for (const NpyHeader& h : headers_) items_.add(h.shape);
    settle(false);
    return {};
  }

  // Reads n bytes at `at` of array k's data (after its header `h`).
  virtual Status read_array(int64_t k, const NpyHeader& h, int64_t at, int64_t n,
                            void* dst) const = 0;

 private:
  // Records per array: one, or (stacked) its first dim.
  void settle(bool stacked) {
    records_.clear();
    starts_.assign(1, 0);
    for (const NpyHeader& h : headers_) {
      const bool stack = stacked && !h.shape.empty();
      records_.add(stack ? ir::Shape(h.shape.begin() + 1, h.shape.end()) : h.shape);
      starts_.push_back(starts_.back() + (stack ? h.shape[0] : 1));
    }
  }

  int64_t array_of(int64_t i) const {
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), i);
    return static_cast<int64_t>(it - starts_.begin()) - 1;
  }

  std::string where_;
  ir::DType dtype_ = ir::DType::kUndefined;
  std::vector<NpyHeader> headers_;
  ShapeTable items_;    // per array
  ShapeTable records_;  // per array: the shape of its records
  std::vector<int64_t> starts_;  // first record of each array, then the count
};

class NpyFilesReader final : public ArrayListReader {
 public:
  Status open(std::string where, std::vector<std::filesystem::path> files) {
    // Every header now (a few hundred bytes each), so a bad file fails before any work starts.
    std::vector<NpyHeader> headers;
    std::vector<std::string> names;
    for (const auto& path : files) {
      PTQ_ASSIGN_OR_RETURN(File f, File::open(path));
      PTQ_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(f, 0, f.size(), f.name()));
      headers.push_back(std::move(h));
      names.push_back(path.string());
    }
    files_ = std::move(files);
    return init(std::move(where), std::move(headers), names);
  }

 protected:
  Status read_array(int64_t k, const NpyHeader& h, int64_t at, int64_t n,
                    void* dst) const override {
    const auto& path = files_[static_cast<size_t>(k)];
    PTQ_ASSIGN_OR_RETURN(File f, File::open(path));
    PTQ_ASSIGN_OR_RETURN(NpyHeader now, read_npy_header(f, 0, f.size(), f.name()));
    if (now.dtype != h.dtype || now.shape != h.shape) {
      return invalid_input("'{}' holds {} {} but held {} {} when the folder was opened",
                           path.string(), ir::dtype_name(now.dtype), ir::shape_str(now.shape),
                           ir::dtype_name(h.dtype), ir::shape_str(h.shape));
    }
    return f.read_at(now.data_offset + at, n, dst);
  }

 private:
  std::vector<std::filesystem::path> files_;
};

// Stored members are read in place; a deflated member is inflated as far as the record asked
// for (one record in memory at a time: no temporary copy per member).
class NpzRecordsReader final : public ArrayListReader {
 public:
  Status open(File zip, std::vector<ZipMember> members) {
    std::vector<NpyHeader> headers;
    std::vector<std::string> names;
    for (const ZipMember& m : members) {
      const std::string what = zip.name() + ":" + m.name;
      PTQ_ASSIGN_OR_RETURN(int64_t at, member_data_offset(zip, m));
      Expected<NpyHeader> h = [&]() -> Expected<NpyHeader> {
        if (m.method == 0) return read_npy_header(zip, at, at + m.size, what);
        auto prefix = [&](int64_t from, int64_t n) -> Expected<std::string> {
          PTQ_ASSIGN_OR_RETURN(std::string bytes, inflate_prefix(zip, m, at, from + n));
          return bytes.substr(static_cast<size_t>(from));
        };
        return read_npy_header(prefix, m.size, what);
      }();
      if (!h) return std::move(h).take_status();
      if (m.method == 0) h->data_offset -= at;  // relative to the member's data, as deflated
      headers.push_back(std::move(*h));
      names.push_back(what);
      data_at_.push_back(at);
    }
    zip_.emplace(std::move(zip));
    members_ = std::move(members);
    return init(zip_->name(), std::move(headers), names);
  }

 protected:
  Status read_array(int64_t k, const NpyHeader& h, int64_t at, int64_t n,
                    void* dst) const override {
    const ZipMember& m = members_[static_cast<size_t>(k)];
    const int64_t data = data_at_[static_cast<size_t>(k)];
    if (m.method == 0) return zip_->read_at(data + h.data_offset + at, n, dst);
    PTQ_ASSIGN_OR_RETURN(std::string bytes, inflate_prefix(*zip_, m, data, h.data_offset + at + n));
    if (n > 0) std::memcpy(dst, bytes.data() + h.data_offset + at, static_cast<size_t>(n));
    return {};
  }

 private:
  std::optional<File> zip_;
  std::vector<ZipMember> members_;
  std::vector<int64_t> data_at_;  // each member's first data byte in the zip
};

}  // namespace

Expected<std::unique_ptr<SampleReader>> make_npy_files_reader(
    std::string where, std::vector<std::filesystem::path> files) {
  auto reader = std::make_unique<NpyFilesReader>();
  PTQ_RETURN_IF_ERROR(reader->open(std::move(where), std::move(files)));
  return std::unique_ptr<SampleReader>(std::move(reader));
}

Expected<std::unique_ptr<SampleReader>> make_npz_records_reader(File zip,
                                                                std::vector<ZipMember> members) {
  auto reader = std::make_unique<NpzRecordsReader>();
  PTQ_RETURN_IF_ERROR(reader->open(std::move(zip), std::move(members)));
  return std::unique_ptr<SampleReader>(std::move(reader));
}

}  // namespace ptq::data
