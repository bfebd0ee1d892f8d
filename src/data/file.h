// A read-only file read by offset (pread), so several threads may read one File at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "ptq/status.h"

namespace ptq::data {

class File {
 public:
  // Opens `path` for reading; errors name it.
  static Expected<File> open(const std::filesystem::path& path);
  // Takes ownership of an open descriptor; `name` is what messages call it.
  static File adopt(int fd, std::string name, int64_t size);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  const std::string& name() const { return name_; }
  int64_t size() const { return size_; }
  // Reads exactly `n` bytes at `offset`; reading past the end is a "truncated" error.
  Status read_at(int64_t offset, int64_t n, void* dst) const;
  // Reads [offset, offset + n) into a string.
  Expected<std::string> read_string(int64_t offset, int64_t n) const;

 private:
  File(int fd, std::string name, int64_t size) : fd_(fd), name_(std::move(name)), size_(size) {}
  int fd_ = -1;
  std::string name_;
  int64_t size_ = 0;
};

}  // namespace ptq::data
