// Atomic file output: write to a temporary name in the same folder, then rename over the target,
// so an interrupted run never leaves a truncated file and an earlier file survives.
#pragma once

#include <filesystem>
#include <fstream>
#include <string_view>

#include "ptq/status.h"

namespace ptq::util {

Status write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

// For large outputs written in pieces: stream(), then commit(). Destroying an uncommitted
// AtomicFile removes the temporary file and leaves the target untouched.
class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Fails if the temporary file could not be opened.
  Status open();
  std::ofstream& stream() { return out_; }
  // Flushes, syncs and renames over the target.
  Status commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Reads a whole file, or an error naming it.
Expected<std::string> read_file(const std::filesystem::path& path);

}  // namespace ptq::util
