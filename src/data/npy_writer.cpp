// Whole-array .npy reading and writing (labels, `ptq run` outputs) and --data argument parsing.
#include <cstring>

#include "npy.h"
#include "ptq/data.h"
#include "ptq/util/atomic_file.h"

namespace ptq::data {

namespace fs = std::filesystem;

SourceSpec parse_source(std::string_view arg) {
  const std::string whole(arg);
  std::error_code ec;
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos || eq == 0 || fs::exists(whole, ec) ||
      arg.substr(0, eq).find('/') != std::string_view::npos) {
    return {"", whole};
  }
  return {std::string(arg.substr(0, eq)), std::string(arg.substr(eq + 1))};
}

Expected<ir::Tensor> load_npy(const fs::path& path) {
  PTQ_ASSIGN_OR_RETURN(File f, File::open(path));
  PTQ_ASSIGN_OR_RETURN(NpyHeader h, read_npy_header(f, 0, f.size(), f.name()));
  ir::Tensor t(h.dtype, h.shape);
  PTQ_RETURN_IF_ERROR(f.read_at(h.data_offset, h.data_bytes(), t.raw()));
  if (h.swap) byteswap(t.raw(), t.size(), ir::dtype_size(h.dtype));
  return t;
}

Status save_npy(const fs::path& path, const ir::Tensor& tensor) {
  PTQ_ASSIGN_OR_RETURN(std::string bytes, npy_header_bytes(tensor.dtype(), tensor.shape()));
  bytes.append(static_cast<const char*>(tensor.raw()), tensor.nbytes());
  return util::write_file_atomic(path, bytes);
}

namespace {

class StreamingNpyWriter final : public NpyWriter {
 public:
  StreamingNpyWriter(const fs::path& path, ir::DType dtype, ir::Shape row_shape, int64_t rows)
      : file_(path), path_(path.string()), dtype_(dtype), row_shape_(std::move(row_shape)),
        rows_(rows) {}

  Status start() {
    ir::Shape shape = row_shape_;
    shape.insert(shape.begin(), rows_);
    PTQ_ASSIGN_OR_RETURN(std::string header, npy_header_bytes(dtype_, shape));
    PTQ_RETURN_IF_ERROR(file_.open());
    file_.stream().write(header.data(), static_cast<std::streamsize>(header.size()));
    return {};
  }

  Status append(const ir::Tensor& rows) override {
    const ir::Shape& s = rows.shape();
    if (rows.dtype() != dtype_ || s.empty() ||
        !std::equal(s.begin() + 1, s.end(), row_shape_.begin(), row_shape_.end())) {
      return runtime_error("'{}': appending {} {} to rows of {} {}", path_,
                           ir::dtype_name(rows.dtype()), ir::shape_str(s), ir::dtype_name(dtype_),
                           ir::shape_str(row_shape_));
    }
    if (written_ + s[0] > rows_) {
      return runtime_error("'{}': more than the {} rows announced", path_, rows_);
    }
    file_.stream().write(static_cast<const char*>(rows.raw()),
                         static_cast<std::streamsize>(rows.nbytes()));
    written_ += s[0];
    return {};
  }

  Status commit() override {
    if (written_ != rows_) {
      return runtime_error("'{}': {} rows written of the {} announced", path_, written_, rows_);
    }
    return file_.commit();
  }

 private:
  util::AtomicFile file_;
  std::string path_;
  ir::DType dtype_;
  ir::Shape row_shape_;
  int64_t rows_;
  int64_t written_ = 0;
};

}  // namespace

Expected<std::unique_ptr<NpyWriter>> NpyWriter::create(const fs::path& path, ir::DType dtype,
                                                       const ir::Shape& row_shape, int64_t rows) {
  auto w = std::make_unique<StreamingNpyWriter>(path, dtype, row_shape, rows);
  PTQ_RETURN_IF_ERROR(w->start());
  return std::unique_ptr<NpyWriter>(std::move(w));
}

}  // namespace ptq::data
