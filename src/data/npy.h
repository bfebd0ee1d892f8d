// The .npy format (NumPy format 1.0, 2.0 and 3.0 headers): reading a header from a File and
// building one. Only C-order arrays of plain numeric and bool dtypes are supported.
#pragma once

#include <cstdint>
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
  int64_t data_offset = 0;  // absolute offset of the first data byte in the File
  int64_t data_bytes() const;
};

// Parses the header of the .npy bytes at [base, limit) of `file` and checks the data fits
// before `limit`. `what` names the array in errors (the file, or "a.npz:x.npy").
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
