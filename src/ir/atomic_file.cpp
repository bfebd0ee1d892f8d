#include "ptq/util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <sstream>

namespace ptq::util {

namespace fs = std::filesystem;

namespace {

fs::path temp_name(const fs::path& path) {
  std::random_device rd;
  return path.parent_path() /
         fmt::format(".{}.tmp{}-{:08x}", path.filename().string(), getpid(), rd());
}

Status sync_file(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return runtime_error("cannot reopen '{}': {}", p.string(), std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return runtime_error("cannot sync '{}': {}", p.string(), std::strerror(errno));
  return {};
}

}  // namespace

AtomicFile::AtomicFile(fs::path path) : path_(std::move(path)), tmp_(temp_name(path_)) {}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

Status AtomicFile::open() {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    return runtime_error("cannot write '{}': {}", path_.string(), std::strerror(errno));
  }
  return {};
}

Status AtomicFile::commit() {
  out_.flush();
  if (!out_) return runtime_error("writing '{}' failed: {}", path_.string(), std::strerror(errno));
  out_.close();
  PTQ_RETURN_IF_ERROR(sync_file(tmp_));
  std::error_code ec;
  fs::rename(tmp_, path_, ec);
  if (ec) return runtime_error("cannot rename onto '{}': {}", path_.string(), ec.message());
  committed_ = true;
  return {};
}

Status write_file_atomic(const fs::path& path, std::string_view bytes) {
  AtomicFile f(path);
  PTQ_RETURN_IF_ERROR(f.open());
  f.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return f.commit();
}

Expected<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return invalid_input("'{}': no such file", path.string());
  if (fs::is_directory(path, ec))
    return invalid_input("'{}' is a folder, not a file", path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_input("cannot read '{}': {}", path.string(), std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return invalid_input("error reading '{}'", path.string());
  return ss.str();
}

}  // namespace ptq::util
