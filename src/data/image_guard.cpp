#include "image_guard.h"

#include <algorithm>
#include <vector>

namespace ptq::data {

namespace {

constexpr int kDht = 0xc4;
constexpr int kSos = 0xda;
constexpr int kEoi = 0xd9;
constexpr int kProgressive = 0xc2;

// The Huffman tables defined so far (stb_image keeps up to 4 of each class, never cleared: a
// scan naming one no DHT defined decodes with uninitialised tables), and the frame's kind.
struct Tables {
  bool dc[4] = {};
  bool ac[4] = {};
  bool progressive = false;
};

// The frame headers stb_image decodes (baseline, extended, progressive); it stops reading the
// header there, and refuses the others as unknown markers.
bool is_frame(int marker) { return marker >= 0xc0 && marker <= 0xc2; }
bool is_standalone(int marker) { return marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7); }

// ByteAt: int(int64_t pos), byte `pos` of the bytes being walked, or -1 past their end (or on
// a read error). A template parameter, so that the walk over a whole image stays inlined.

// The tables of one DHT segment [at, end): a class/id byte, 16 counts, then that many values.
template <typename ByteAt>
Status check_dht(const ByteAt& byte, int64_t at, int64_t end, Tables& tables,
                 const std::string& what) {
  while (at < end) {
    const int q = byte(at);
    if (q >= 0 && (q >> 4) <= 1 && (q & 15) <= 3) ((q >> 4) ? tables.ac : tables.dc)[q & 15] = true;
    int64_t n = 0;
    for (int64_t i = 1; i <= 16; ++i) n += std::max(byte(at + i), 0);
    if (n > 256) {
      return invalid_input(
          "{}: corrupt JPEG (a Huffman table at offset {} holds {} codes, "
          "more than 256)",
          what, at, n);
    }
    at += 17 + n;
  }
  return {};
}

// The tables one SOS segment [at, ..) decodes with: a component count, (id, DC/AC table ids)
// per component, then the spectral start Ss and the successive approximation Ah/Al. A
// baseline scan uses both tables; a progressive DC scan (Ss 0) its DC table on the first pass
// only (Ah 0), an AC scan (Ss > 0) its AC table. Ids above 3 are left to stb_image (it refuses
// them).
template <typename ByteAt>
Status check_sos(const ByteAt& byte, int64_t at, const Tables& tables, const std::string& what) {
  const int n = std::max(byte(at), 0);
  const int ss = byte(at + 1 + 2 * n), ah = byte(at + 3 + 2 * n) >> 4;
  const bool uses_dc = !tables.progressive || (ss == 0 && ah == 0);
  const bool uses_ac = !tables.progressive || ss > 0;
  for (int c = 0; c < n; ++c) {
    const int ids = byte(at + 2 + 2 * c);
    if (ids < 0) return {};
    const int dc = ids >> 4, ac = ids & 15;
    const bool missing =
        (uses_dc && dc <= 3 && !tables.dc[dc]) || (uses_ac && ac <= 3 && !tables.ac[ac]);
    if (missing) {
      return invalid_input(
          "{}: corrupt JPEG (the scan at offset {} uses a Huffman table no DHT defines)", what, at);
    }
  }
  return {};
}

// The marker at `pos` as stb_image's get_marker reads it: the byte after a 0xff and its fill
// bytes; kNone (one byte consumed) where there is no 0xff, -1 at the end.
constexpr int kNone = 0x100;
template <typename ByteAt>
int next_marker(const ByteAt& byte, int64_t& pos) {
  const int b = byte(pos++);
  if (b != 0xff) return b < 0 ? -1 : kNone;
  while (byte(pos) == 0xff) ++pos;
  return byte(pos++);
}

// Walks the marker segments as stb_image does (skipping stray bytes between segments, and
// the entropy-coded data after a SOS up to the next marker) and checks each DHT. Stops at EOI,
// at the end, or (headers_only) at the frame header; not a JPEG (no SOI): nothing to check.
template <typename ByteAt>
Status walk(const ByteAt& byte, bool headers_only, const std::string& what) {
  int64_t pos = 0;
  if (next_marker(byte, pos) != 0xd8) return {};
  Tables tables;
  while (true) {
    int marker = next_marker(byte, pos);
    while (marker == kNone) marker = next_marker(byte, pos);
    if (marker < 0 || marker == kEoi || (headers_only && is_frame(marker))) return {};
    if (is_standalone(marker)) continue;
    const int hi = byte(pos), lo = byte(pos + 1);
    if (hi < 0 || lo < 0) return {};
    const int64_t end = pos + (hi << 8 | lo);
    if (marker == kDht) PTQ_RETURN_IF_ERROR(check_dht(byte, pos + 2, end, tables, what));
    if (is_frame(marker)) tables.progressive = marker == kProgressive;
    if (marker == kSos) PTQ_RETURN_IF_ERROR(check_sos(byte, pos + 2, tables, what));
    pos = std::max(end, pos + 2);
    if (marker != kSos) continue;
    // Entropy-coded data: 0xff is followed by 0 (a stuffed byte), a restart marker or a fill.
    while (true) {
      const int b = byte(pos);
      if (b < 0) return {};
      const int next = byte(pos + 1);
      if (b == 0xff && next != 0 && !(next >= 0xd0 && next <= 0xd7) && next != 0xff) break;
      ++pos;
    }
  }
}

}  // namespace

Status check_jpeg_tables(std::string_view bytes, const std::string& what) {
  auto byte = [&](int64_t pos) {
    return pos >= 0 && pos < static_cast<int64_t>(bytes.size())
               ? static_cast<unsigned char>(bytes[static_cast<size_t>(pos)])
               : -1;
  };
  return walk(byte, false, what);
}

Status check_jpeg_header_tables(const File& file) {
  // Reads through a small window: segment headers are a few bytes apart from their payloads.
  constexpr int64_t kWindow = 4096;
  std::vector<unsigned char> window(kWindow);
  int64_t window_at = -1, window_len = 0;
  auto byte = [&](int64_t pos) -> int {
    if (pos < 0 || pos >= file.size()) return -1;
    if (pos < window_at || pos >= window_at + window_len) {
      window_at = pos;
      window_len = std::min(kWindow, file.size() - pos);
      if (!file.read_at(pos, window_len, window.data()).is_ok()) {
        window_len = 0;
        return -1;
      }
    }
    return window[static_cast<size_t>(pos - window_at)];
  };
  return walk(byte, true, file.name());
}

Status check_png_chunks(std::string_view bytes, const std::string& what) {
  constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (!bytes.starts_with(kSignature)) return {};
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  size_t pos = kSignature.size();
  while (pos + 8 <= bytes.size()) {
    const uint64_t length = be32(pos);
    if (length > bytes.size() - pos - 8) {
      return invalid_input(
          "{}: corrupt PNG (the chunk at offset {} claims {} bytes, the file "
          "has {} after it)",
          what, pos, length, bytes.size() - pos - 8);
    }
    if (bytes.substr(pos + 4, 4) == "IEND") return {};
    pos += 8 + length + 4;  // length, type, data, CRC
  }
  return {};
}

}  // namespace ptq::data
