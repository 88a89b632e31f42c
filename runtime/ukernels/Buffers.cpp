#include "runtime/ukernels/Buffers.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <new>

namespace friction::ukernels {

void* allocateBuffer(size_t bytes) {
  constexpr size_t kHugePage = size_t(2) << 20;
  if (bytes < kHugePage) return std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  void* p = std::aligned_alloc(kHugePage, (bytes + kHugePage - 1) / kHugePage * kHugePage);
  if (p) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: where THP is off, the pages stay small
  return p;
}

float* threadScratch(ScratchSlot slot, size_t floats) {
  struct Kept {
    std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
    size_t floats = 0;
  };
  thread_local std::array<Kept, size_t(ScratchSlot::Count)> kept;
  Kept& k = kept[size_t(slot)];
  if (k.floats < floats) {
    k.data.reset();  // the old block first: the two need not fit at once
    k.floats = 0;
    k.data.reset(static_cast<float*>(allocateBuffer(floats * sizeof(float))));
    if (!k.data) throw std::bad_alloc();
    k.floats = floats;
  }
  return k.data.get();
}

}  // namespace friction::ukernels
