#pragma once
// The one size check every executor makes before it builds or runs a node: a
// static output larger than this machine's memory is refused by name, before
// anything is allocated for it. Allocation failures alone do not cover it: a
// Resize 2e9 pixels wide grew its tap tables until the kernel killed the
// process, and an Expand's index map threw a bare std::bad_alloc.

#include <cstdint>

namespace friction {

class Node;

// The bytes of physical memory this machine has (sysconf).
uint64_t physicalMemoryBytes();

// Throws Error naming the node, the output and its type when one of the node's
// outputs of static shape takes more bytes than physicalMemoryBytes().
void checkOutputsFitMemory(const Node& n);

}  // namespace friction
