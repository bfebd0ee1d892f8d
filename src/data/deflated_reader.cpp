// A deflated npz member read lazily: its .npy header comes from inflating the member's first
// bytes, and the data is inflated into a temporary file only when a sample is first read. A
// member whose header does not fit the model's input is refused by bind() before that, rather
// than after inflating gigabytes.
#include <mutex>
#include <optional>

#include "reader.h"

namespace ptq::data {

namespace {

class DeflatedMemberReader final : public ItemsReader {
 public:
  DeflatedMemberReader(File zip, ZipMember member, int64_t data_offset, const NpyHeader& header,
                       std::string where)
      : ItemsReader(std::move(where), header.dtype, header.shape, 1, true),
        zip_(std::move(zip)),
        member_(std::move(member)),
        data_offset_(data_offset),
        header_(header) {}

 protected:
  Status read_from_item(int64_t item, int64_t j, void* dst) const override {
    PTQ_ASSIGN_OR_RETURN(const File* data, inflated());
    return read_stored(*data, header_.data_offset, header_.swap, item, j, dst);
  }

 private:
  // The inflated copy, made by the first caller while the others wait; a failure is kept and
  // returned to every later read.
  Expected<const File*> inflated() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!copy_ && failure_.is_ok()) {
      Expected<File> f = inflate_member(zip_, member_, data_offset_);
      if (f.has_value()) {
        copy_.emplace(std::move(*f));
      } else {
        failure_ = std::move(f).take_status();
      }
    }
    if (!failure_.is_ok()) return failure_;
    return &*copy_;
  }

  File zip_;
  ZipMember member_;
  int64_t data_offset_;
  NpyHeader header_;
  mutable std::mutex mutex_;
  mutable std::optional<File> copy_;
  mutable Status failure_;
};

}  // namespace

std::unique_ptr<SampleReader> make_deflated_member_reader(File zip, ZipMember member,
                                                          int64_t data_offset,
                                                          const NpyHeader& header,
                                                          std::string where) {
  return std::make_unique<DeflatedMemberReader>(std::move(zip), std::move(member), data_offset,
                                                header, std::move(where));
}

}  // namespace ptq::data
