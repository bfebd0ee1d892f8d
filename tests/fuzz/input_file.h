// The readers under fuzz open files by path: each input is written to one scratch file per
// process, named with the extension that picks the reader. The folder is in /dev/shm when there
// is one (on a disk's filesystem the opens alone cost a millisecond each, most of a run's time),
// is the process's TMPDIR too (an npz member's inflated copy), and is removed at exit.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace ptq::fuzz {

class ScratchDir {
 public:
  ScratchDir() {
    std::error_code ec;
    const bool shm = std::filesystem::is_directory("/dev/shm", ec);
    path_ = (shm ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path()) /
            ("ptq-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
    ::setenv("TMPDIR", path_.c_str(), 1);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::filesystem::path write_input(const uint8_t* data, size_t size,
                                         const std::string& file_name) {
  static const ScratchDir dir;
  const std::filesystem::path path = dir.path() / file_name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Reads a dataset's first samples and its last one: enough to reach every reading path
// without a run's time growing with the sample count.
template <typename Dataset>
void read_some(const Dataset& ds) {
  const int64_t n = ds.size();
  if (n <= 0) return;
  (void)ds.read(0, n < 8 ? n : 8);
  (void)ds.read(n - 1, 1);
}

}  // namespace ptq::fuzz
