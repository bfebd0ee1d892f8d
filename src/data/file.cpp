#include "file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ptq::data {

Expected<File> File::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return invalid_input("cannot read '{}': {}", name, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_input("'{}' is not a regular file", name);
  }
  return File(fd, name, static_cast<int64_t>(st.st_size));
}

File File::adopt(int fd, std::string name, int64_t size) { return File(fd, std::move(name), size); }

File::File(File&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), name_(std::move(other.name_)), size_(other.size_) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    name_ = std::move(other.name_);
    size_ = other.size_;
  }
  return *this;
}

File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

Status File::read_at(int64_t offset, int64_t n, void* dst) const {
  if (offset < 0 || n < 0 || offset > size_ || n > size_ - offset) {
    return invalid_input("'{}' is truncated: needs bytes {}..{} but has {}", name_, offset,
                         offset + n, size_);
  }
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd_, out, static_cast<size_t>(n), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return invalid_input("error reading '{}' at offset {}: {}", name_, offset,
                                      std::strerror(errno));
    if (got == 0) return invalid_input("'{}' is truncated at offset {}", name_, offset);
    out += got;
    offset += got;
    n -= got;
  }
  return {};
}

Expected<std::string> File::read_string(int64_t offset, int64_t n) const {
  std::string s(static_cast<size_t>(n), '\0');
  PTQ_RETURN_IF_ERROR(read_at(offset, n, s.data()));
  return s;
}

}  // namespace ptq::data
