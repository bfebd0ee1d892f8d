// Checks on what stb_image 2.27 (Debian's libstb-dev) trusts in an image file: a JPEG Huffman
// table (DHT) whose 16 code counts add up to more than 256 overflows its tables, in stbi_info
// as in stbi_load; a scan (SOS) that decodes with a table no DHT defined reads uninitialised
// tables, out of bounds; a PNG chunk's length is allocated (up to 2 GB) before its bytes are read.
// Like the model reader's node guard, the checks run before the library sees the bytes, and
// anything else is left to it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "file.h"
#include "ptq/status.h"

namespace ptq::data {

// Checks every DHT and SOS segment of the JPEG in `bytes` (whole file; not a JPEG: nothing to
// check).
Status check_jpeg_tables(std::string_view bytes, const std::string& what);
// Checks that every chunk of the PNG in `bytes` fits in the file (not a PNG: nothing to check).
Status check_png_chunks(std::string_view bytes, const std::string& what);
// Checks the DHT segments before the frame header (SOF): those stbi_info reads. Reads segment
// headers only, not the whole file.
Status check_jpeg_header_tables(const File& file);

}  // namespace ptq::data
