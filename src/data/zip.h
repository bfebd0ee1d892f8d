// Just enough of the ZIP format to read .npz files as np.savez and np.savez_compressed write
// them: the central directory (with ZIP64 records), stored and deflated members.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "file.h"
#include "ptq/status.h"

namespace ptq::data {

struct ZipMember {
  std::string name;
  int method = 0;  // 0 stored, 8 deflated
  uint32_t crc = 0;
  int64_t compressed_size = 0;
  int64_t size = 0;
  int64_t local_header_offset = 0;
};

// The members listed in the central directory, in directory order.
Expected<std::vector<ZipMember>> list_zip(const File& zip);
// Offset of the member's first data byte (after its local header).
Expected<int64_t> member_data_offset(const File& zip, const ZipMember& member);
// The first `n` bytes of a deflated member's data, inflating only as far as they reach (a
// header read before the whole member is inflated); an error if the member is shorter.
Expected<std::string> inflate_prefix(const File& zip, const ZipMember& member, int64_t data_offset,
                                     int64_t n);
// Inflates a deflated member into an anonymous temporary file (removed when the File closes),
// checking its size and CRC; memory use stays constant whatever the member's size.
Expected<File> inflate_member(const File& zip, const ZipMember& member, int64_t data_offset);

}  // namespace ptq::data
