// Memory for tensors and packed weights. Blocks of 2 MiB and more go on transparent huge pages: a batch-8
// activation or a wide layer's packed weights stream tens of MiB, and with 4 KiB pages every few KiB of that
// stream is a TLB miss.
#pragma once
#include <cstddef>

namespace friction::ukernels {

// Uninitialized memory for `bytes`, 64-byte aligned (2 MiB aligned and advised to huge pages from 2 MiB on);
// free it with std::free. nullptr when out of memory.
void* allocateBuffer(size_t bytes);

}  // namespace friction::ukernels
