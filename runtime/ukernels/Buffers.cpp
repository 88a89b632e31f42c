#include "runtime/ukernels/Buffers.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

namespace friction::ukernels {

void* allocateBuffer(size_t bytes) {
  constexpr size_t kHugePage = size_t(2) << 20;
  if (bytes < kHugePage) return std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  void* p = std::aligned_alloc(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage);
  if (p) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: where THP is off, the pages stay small
  return p;
}

}  // namespace friction::ukernels
