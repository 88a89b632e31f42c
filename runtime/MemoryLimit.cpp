#include "runtime/MemoryLimit.h"

#include <unistd.h>

#include <cstdio>

#include "ir/Error.h"
#include "ir/Graph.h"

namespace friction {

uint64_t physicalMemoryBytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    return pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : UINT64_MAX;
  }();
  return bytes;
}

void checkOutputsFitMemory(const Node& n) {
  for (const Value* v : n.outputs()) {
    if (!v || !v->shape().hasRank() || !v->shape().isStatic()) continue;
    // In floating point: the product of a fuzzer's dims overflows int64.
    long double bytes = dtypeSize(v->dtype());
    for (const Dim& d : v->shape().dims()) bytes *= d.value;
    if (bytes <= (long double)physicalMemoryBytes()) continue;
    char size[64];
    std::snprintf(size, sizeof size, "%.3Lg bytes, more than this machine's %.1f GiB of memory", bytes,
                  double(physicalMemoryBytes()) / double(1ull << 30));
    throw Error(n.describe() + ": output '" + v->name() + "' " + v->type().str() + " takes " + size);
  }
}

}  // namespace friction
