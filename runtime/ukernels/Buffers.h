// Memory for tensors and packed weights. Blocks of 2 MiB and more go on transparent huge pages: a batch-8
// activation or a wide layer's packed weights stream tens of MiB, and with 4 KiB pages every few KiB of that
// stream is a TLB miss.
#pragma once
#include <cstddef>

namespace friction::ukernels {

// Uninitialized memory for `bytes`, 64-byte aligned (2 MiB aligned and advised to huge pages from 2 MiB on);
// free it with std::free. nullptr when out of memory.
void* allocateBuffer(size_t bytes);

// Scratch memory a kernel needs only during one call (a convolution's gathered rows, an SGEMM's sourced panels),
// kept by the calling thread from call to call and grown when a call needs more: allocated afresh on every
// call, MiBs of it came as new pages each time (a 512-channel 3x3 conv over a 7x7 image ran 1.7x its time, up
// to 20x when the kernel had to compact memory for huge pages). One slot per user, so that a kernel holding
// its scratch can call another that needs some. At least `floats` floats, 64-byte aligned, uninitialized;
// valid until this thread asks for the same slot again.
enum class ScratchSlot { ConvRows, GemmPanels, Count };
float* threadScratch(ScratchSlot slot, size_t floats);

}  // namespace friction::ukernels
