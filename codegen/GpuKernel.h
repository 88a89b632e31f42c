// A kernel as the cuda target makes it (codegen/mlir/GpuStages.cpp): PTX
// and the launches that run it. No MLIR types: the host side and the CLI read
// it.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace friction::codegen {

// Where a CUDA toolkit may be, in order: $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH,
// /usr/local/cuda (its libdevice is linked into PTX, its ptxas assembles it).
inline std::vector<std::string> cudaToolkitRoots() {
  std::vector<std::string> roots;
  for (const char* env : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v) roots.push_back(v);
  roots.push_back("/usr/local/cuda");
  return roots;
}

// One launch of a GPU kernel: the gpu.func in the kernel's PTX, grid and
// block sizes, and the arguments in order: a buffer of the kernel (its
// inputs, then its outputs, then its scratch buffers, as a device pointer),
// or a constant.
struct GpuLaunchArg {
  int buffer = -1;  // >= 0: the kernel's buffer of this index
  bool isFloat = false;
  int64_t integer = 0;  // an index or integer constant (buffer < 0, !isFloat)
  double real = 0;      // an f32 constant (isFloat)
};
struct GpuLaunch {
  std::string function;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::vector<GpuLaunchArg> args;
};
// A kernel for the GPU: one PTX module and the launches, in order, that
// compute the kernel (a fill, a contraction, an epilogue: one each).
struct GpuKernel {
  std::string ptx;
  std::vector<GpuLaunch> launches;
  int buffers = 0;                             // the kernel's inputs and outputs (GpuLaunchArg::buffer below it)
  std::vector<std::vector<int64_t>> scratch;   // f32 scratch buffers, GpuLaunchArg::buffer `buffers` and on
};
}  // namespace friction::codegen
