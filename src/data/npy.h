// The .npy format (NumPy format 1.0, 2.0 and 3.0 headers): reading a header from a File and
// building one. Only C-order arrays of plain numeric and bool dtypes are supported.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "file.h"
#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::data {

struct NpyHeader {
  ir::DType dtype = ir::DType::kUndefined;
  ir::Shape shape;
  bool swap = false;        // big-endian data: bytes must be swapped after reading
  int64_t data_offset = 0;  // offset of the first data byte (absolute in a File)
  int64_t data_bytes() const;
};

// The longest header dictionary read: NumPy writes a few hundred bytes, and a deflated
// member's claimed length must not make the reader inflate gigabytes to find its end.
inline constexpr int64_t kMaxNpyDictBytes = int64_t{1} << 20;

// Reads `n` bytes at offset `at` of an array's bytes (a file, or a member inflated on demand).
using ByteReader = std::function<Expected<std::string>(int64_t at, int64_t n)>;

// Parses the header of an array of `size` bytes read through `read` (only the header's bytes
// are asked for) and checks the data fits in them; data_offset is relative to the array's
// first byte. `what` names the array in errors (the file, or "a.npz:x.npy").
Expected<NpyHeader> read_npy_header(const ByteReader& read, int64_t size, const std::string& what);
// The same for the .npy bytes at [base, limit) of `file`; data_offset is absolute.
Expected<NpyHeader> read_npy_header(const File& file, int64_t base, int64_t limit,
                                    const std::string& what);
// Parses the header dictionary text ("{'descr': '<f4', 'fortran_order': False, ...}").
Expected<NpyHeader> parse_npy_dict(std::string_view dict, const std::string& what);
// The full header (magic, version, length, padded dictionary) for a little-endian C-order
// array; format 1.0 unless the dictionary needs 2.0.
Expected<std::string> npy_header_bytes(ir::DType dtype, const ir::Shape& shape);
// Reverses the byte order of `count` elements of `elem_size` bytes in place.
void byteswap(void* data, int64_t count, size_t elem_size);

}  // namespace ptq::data
