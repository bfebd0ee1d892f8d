#include "ptq/ir/pages.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ptq::ir {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

std::byte* map_pages(size_t bytes) {
#if defined(__linux__)
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  // Advice only: where THP is off (or "never") the mapping keeps 4 KiB pages.
  if (bytes >= kHugePage) madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<std::byte*>(p);
#else
  void* p = std::calloc(bytes, 1);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
#endif
}

void unmap_pages(std::byte* p, size_t bytes) {
  if (p == nullptr) return;
#if defined(__linux__)
  munmap(p, bytes);
#else
  (void)bytes;
  std::free(p);
#endif
}

}  // namespace ptq::ir
