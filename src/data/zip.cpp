#include "zip.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ptq::data {

namespace {

constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t k32Max = 0xffffffffu;

uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t le(const std::string& s, size_t at, int bytes) {
  return le(reinterpret_cast<const unsigned char*>(s.data()) + at, bytes);
}

struct Directory {
  int64_t entries = 0;
  int64_t offset = 0;
  int64_t size = 0;
};

Expected<Directory> find_directory(const File& zip) {
  const std::string& name = zip.name();
  const int64_t tail_len = std::min<int64_t>(zip.size(), 22 + 65535);
  if (tail_len < 22) return invalid_input("'{}' is not a zip/npz file (too short)", name);
  PTQ_ASSIGN_OR_RETURN(std::string tail, zip.read_string(zip.size() - tail_len, tail_len));
  int64_t at = -1;
  for (int64_t i = tail_len - 22; i >= 0; --i) {
    if (le(tail, static_cast<size_t>(i), 4) == kEocdSig) {
      at = i;
      break;
    }
  }
  if (at < 0)
    return invalid_input("'{}' is not a zip/npz file (no end of central directory)", name);
  const auto a = static_cast<size_t>(at);
  Directory d{static_cast<int64_t>(le(tail, a + 10, 2)), static_cast<int64_t>(le(tail, a + 16, 4)),
              static_cast<int64_t>(le(tail, a + 12, 4))};
  const bool zip64 = d.entries == 0xffff || d.offset == k32Max || d.size == k32Max;
  const int64_t eocd_pos = zip.size() - tail_len + at;
  if (zip64 && eocd_pos >= 20) {
    PTQ_ASSIGN_OR_RETURN(std::string loc, zip.read_string(eocd_pos - 20, 20));
    if (le(loc, 0, 4) == kZip64LocatorSig) {
      const auto rec_at = static_cast<int64_t>(le(loc, 8, 8));
      PTQ_ASSIGN_OR_RETURN(std::string rec, zip.read_string(rec_at, 56));
      if (le(rec, 0, 4) != kZip64EocdSig) {
        return invalid_input("'{}': bad ZIP64 end of central directory at offset {}", name, rec_at);
      }
      d.entries = static_cast<int64_t>(le(rec, 32, 8));
      d.size = static_cast<int64_t>(le(rec, 40, 8));
      d.offset = static_cast<int64_t>(le(rec, 48, 8));
    }
  }
  if (d.offset < 0 || d.size < 0 || d.offset > zip.size() || d.size > zip.size() - d.offset) {
    return invalid_input("'{}': corrupt zip (central directory outside the file)", name);
  }
  return d;
}

// Applies the ZIP64 extra field (id 1) to the fields that hold 0xffffffff.
Status apply_zip64(const std::string& extra, ZipMember& m, bool size_max, bool csize_max,
                   bool offset_max, const std::string& what) {
  size_t p = 0;
  while (p + 4 <= extra.size()) {
    const auto id = le(extra, p, 2);
    const auto len = static_cast<size_t>(le(extra, p + 2, 2));
    if (p + 4 + len > extra.size()) break;
    if (id == 1) {
      size_t q = p + 4;
      auto take = [&](int64_t& field) -> bool {
        if (q + 8 > p + 4 + len) return false;
        field = static_cast<int64_t>(le(extra, q, 8));
        q += 8;
        return true;
      };
      if ((size_max && !take(m.size)) || (csize_max && !take(m.compressed_size)) ||
          (offset_max && !take(m.local_header_offset))) {
        return invalid_input("{}: corrupt ZIP64 extra field", what);
      }
      return {};
    }
    p += 4 + len;
  }
  if (size_max || csize_max || offset_max) {
    return invalid_input("{}: ZIP64 sizes without a ZIP64 extra field", what);
  }
  return {};
}

}  // namespace

Expected<std::vector<ZipMember>> list_zip(const File& zip) {
  PTQ_ASSIGN_OR_RETURN(Directory d, find_directory(zip));
  PTQ_ASSIGN_OR_RETURN(std::string cd, zip.read_string(d.offset, d.size));
  std::vector<ZipMember> out;
  size_t p = 0;
  for (int64_t i = 0; i < d.entries; ++i) {
    if (p + 46 > cd.size() || le(cd, p, 4) != kCentralSig) {
      return invalid_input("'{}': corrupt zip (central directory entry {} at offset {})",
                           zip.name(), i, d.offset + static_cast<int64_t>(p));
    }
    const auto flags = le(cd, p + 8, 2);
    ZipMember m;
    m.method = static_cast<int>(le(cd, p + 10, 2));
    m.crc = static_cast<uint32_t>(le(cd, p + 16, 4));
    m.compressed_size = static_cast<int64_t>(le(cd, p + 20, 4));
    m.size = static_cast<int64_t>(le(cd, p + 24, 4));
    const auto name_len = static_cast<size_t>(le(cd, p + 28, 2));
    const auto extra_len = static_cast<size_t>(le(cd, p + 30, 2));
    const auto comment_len = static_cast<size_t>(le(cd, p + 32, 2));
    m.local_header_offset = static_cast<int64_t>(le(cd, p + 42, 4));
    if (p + 46 + name_len + extra_len + comment_len > cd.size()) {
      return invalid_input("'{}': corrupt zip (central directory entry {})", zip.name(), i);
    }
    m.name = cd.substr(p + 46, name_len);
    const std::string what = zip.name() + ":" + m.name;
    PTQ_RETURN_IF_ERROR(apply_zip64(cd.substr(p + 46 + name_len, extra_len), m,
                                    m.size == k32Max, m.compressed_size == k32Max,
                                    m.local_header_offset == k32Max, what));
    if (m.size < 0 || m.compressed_size < 0 || m.local_header_offset < 0) {
      return invalid_input("{}: corrupt zip (a ZIP64 size or offset above 2^63)", what);
    }
    if (flags & 1) return invalid_input("{}: encrypted zip members are not supported", what);
    if (m.method != 0 && m.method != 8) {
      return invalid_input("{}: unsupported zip compression method {}", what, m.method);
    }
    out.push_back(std::move(m));
    p += 46 + name_len + extra_len + comment_len;
  }
  return out;
}

Expected<int64_t> member_data_offset(const File& zip, const ZipMember& m) {
  const std::string what = zip.name() + ":" + m.name;
  PTQ_ASSIGN_OR_RETURN(std::string h, zip.read_string(m.local_header_offset, 30));
  if (le(h, 0, 4) != kLocalSig) {
    return invalid_input("{}: corrupt zip (no local header at offset {})", what,
                         m.local_header_offset);
  }
  const int64_t at = m.local_header_offset + 30 + static_cast<int64_t>(le(h, 26, 2)) +
                     static_cast<int64_t>(le(h, 28, 2));
  if (at > zip.size() || m.compressed_size > zip.size() - at) {
    return invalid_input("{}: truncated zip member (needs {} bytes at offset {}, file has {})",
                         what, m.compressed_size, at, zip.size());
  }
  if (m.method == 0 && m.compressed_size != m.size) {
    return invalid_input("{}: corrupt zip (stored member with two sizes)", what);
  }
  // Deflate cannot do better than 1032:1 (a 258-byte match in under 2 bits): a larger recorded
  // size is a lie that headers, sample counts and allocations must not trust.
  constexpr int64_t kMaxDeflateRatio = 1032;
  if (m.method == 8 && m.size / kMaxDeflateRatio > m.compressed_size) {
    return invalid_input("{}: corrupt zip (records {} bytes, more than its {} deflated bytes hold)",
                         what, m.size, m.compressed_size);
  }
  return at;
}

namespace {

Status write_all(int fd, const unsigned char* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return runtime_error("{}: cannot write the inflated copy: {}", what, std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

int make_temp_fd() {
  std::error_code ec;
  std::string dir = std::filesystem::temp_directory_path(ec).string();
  if (ec) dir = "/tmp";
  std::string tmpl = dir + "/ptq-npz-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd >= 0) ::unlink(tmpl.c_str());  // anonymous: gone when closed
  return fd;
}

struct Inflater {
  z_stream z{};
  bool live = false;
  ~Inflater() {
    if (live) inflateEnd(&z);
  }
};

}  // namespace

Expected<std::string> inflate_prefix(const File& zip, const ZipMember& m, int64_t data_offset,
                                     int64_t n) {
  const std::string what = zip.name() + ":" + m.name;
  if (n > m.size) return invalid_input("{}: needs {} bytes, the member has {}", what, n, m.size);
  Inflater inf;
  if (inflateInit2(&inf.z, -MAX_WBITS) != Z_OK) return runtime_error("{}: zlib init failed", what);
  inf.live = true;
  // Small reads: a header is a few hundred bytes, however large the member.
  constexpr int64_t kChunk = 4096;
  std::vector<unsigned char> in(kChunk);
  std::string out(static_cast<size_t>(n), '\0');
  int64_t read = 0;
  inf.z.next_out = reinterpret_cast<unsigned char*>(out.data());
  inf.z.avail_out = static_cast<uInt>(n);
  while (inf.z.avail_out > 0) {
    if (inf.z.avail_in == 0) {
      if (read == m.compressed_size) {
        return invalid_input("{}: corrupt deflate data (ends early)", what);
      }
      const int64_t k = std::min(kChunk, m.compressed_size - read);
      PTQ_RETURN_IF_ERROR(zip.read_at(data_offset + read, k, in.data()));
      read += k;
      inf.z.next_in = in.data();
      inf.z.avail_in = static_cast<uInt>(k);
    }
    const int rc = inflate(&inf.z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END && inf.z.avail_out > 0) {
      return invalid_input("{}: inflates to fewer bytes than its recorded {}", what, m.size);
    }
    if (rc != Z_OK && rc != Z_STREAM_END) {
      return invalid_input("{}: corrupt deflate data near offset {}", what, data_offset + read);
    }
  }
  return out;
}

Expected<File> inflate_member(const File& zip, const ZipMember& m, int64_t data_offset) {
  const std::string what = zip.name() + ":" + m.name;
  int fd = make_temp_fd();
  if (fd < 0)
    return runtime_error("{}: cannot create a temporary file: {}", what, std::strerror(errno));
  File out = File::adopt(fd, what, m.size);
  Inflater inf;
  if (inflateInit2(&inf.z, -MAX_WBITS) != Z_OK) return runtime_error("{}: zlib init failed", what);
  inf.live = true;
  constexpr int64_t kChunk = 1 << 18;
  std::vector<unsigned char> in(kChunk), buf(kChunk);
  int64_t read = 0, written = 0;
  uLong crc = crc32(0L, Z_NULL, 0);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (inf.z.avail_in == 0 && read < m.compressed_size) {
      const int64_t n = std::min(kChunk, m.compressed_size - read);
      PTQ_RETURN_IF_ERROR(zip.read_at(data_offset + read, n, in.data()));
      read += n;
      inf.z.next_in = in.data();
      inf.z.avail_in = static_cast<uInt>(n);
    }
    inf.z.next_out = buf.data();
    inf.z.avail_out = static_cast<uInt>(kChunk);
    rc = inflate(&inf.z, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR) return invalid_input("{}: corrupt deflate data (ends early)", what);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      return invalid_input("{}: corrupt deflate data near offset {}", what, data_offset + read);
    }
    const size_t got = static_cast<size_t>(kChunk) - inf.z.avail_out;
    if (written + static_cast<int64_t>(got) > m.size) {
      return invalid_input("{}: inflates to more than its recorded {} bytes", what, m.size);
    }
    crc = crc32(crc, buf.data(), static_cast<uInt>(got));
    PTQ_RETURN_IF_ERROR(write_all(fd, buf.data(), got, what));
    written += static_cast<int64_t>(got);
  }
  if (written != m.size) {
    return invalid_input("{}: inflates to {} bytes, the directory says {}", what, written, m.size);
  }
  if (static_cast<uint32_t>(crc) != m.crc) return invalid_input("{}: CRC mismatch", what);
  return out;
}

}  // namespace ptq::data
