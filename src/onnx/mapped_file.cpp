#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ptq::onnx {

Expected<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return invalid_input("cannot read '{}': {}", path.string(), std::strerror(errno));
  struct stat st {};
  MappedFile file;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return invalid_input("cannot read '{}': {}", path.string(), std::strerror(err));
  }
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    // MAP_POPULATE maps the cached pages at once instead of one fault per 4 KiB page.
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return invalid_input("cannot read '{}': {}", path.string(), std::strerror(err));
    }
    file.data_ = p;
  }
  ::close(fd);  // the mapping keeps the file open
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace ptq::onnx
