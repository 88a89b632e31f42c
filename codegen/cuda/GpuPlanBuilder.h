// Turns a program built for the cuda target (codegen/Program.h) into the plan
// the GPU executor runs (runtime/cuda/GpuPlan.h): nested regions flattened
// into one list of kernel calls, views sharing their source's buffer, and
// every buffer at a fixed offset of one device arena. Graph inputs, outputs
// and constants keep their place for the whole run; intermediates and
// scratch share space with whatever is not alive at the same time (first fit
// by size, largest first).
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/Program.h"
#include "runtime/cuda/GpuPlan.h"

namespace friction::codegen {

// A buffer of the arena and the calls it is alive between (first: the call
// that writes it, last: the last that reads it; -1 and INT_MAX for a whole run).
struct ArenaBuffer {
  int64_t bytes = 0;
  int first = -1, last = -1;
  int64_t offset = -1;
};
// Gives every buffer its offset: largest first, each at the lowest 256-byte
// aligned offset where no buffer alive at the same time lies. Returns the
// arena's size.
int64_t placeInArena(std::vector<ArenaBuffer>& buffers);

// `p` was built from `g`; `kernelOf` maps each compiled kernel of `p` to its
// index in `plan.kernels` (already filled). Throws friction::Error naming the first step the GPU
// cannot run (an op without a GPU kernel, which would run on the interpreter).
void planGpuCalls(const Program& p, const Graph& g, const std::unordered_map<const KernelEntry*, int>& kernelOf,
                  gpu::GpuPlan& plan);

}  // namespace friction::codegen
