// Large zeroed buffers straight from the kernel, backed by transparent huge pages where the
// system allows it. A fresh 4 KiB page costs a fault on first touch; a batch of activations is
// hundreds of MiB, so with 4 KiB pages the faults alone took a tenth of a calibration run
// (docs/perf-history.md). Memory from here is zero already and returns to the system when unmapped.
#pragma once

#include <cstddef>

namespace ptq::ir {

// Buffers from this size up come from map_pages() (smaller ones are not worth a mapping).
inline constexpr size_t kMapPagesFrom = size_t{256} << 10;

// `bytes` of zeroed memory, 4 KiB aligned; throws std::bad_alloc when the system refuses.
std::byte* map_pages(size_t bytes);
// Returns what map_pages(bytes) gave.
void unmap_pages(std::byte* p, size_t bytes);

}  // namespace ptq::ir
