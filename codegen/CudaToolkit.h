// Where the cuda target finds the CUDA toolkit: libdevice for the PTX
// (codegen/mlir/GpuStages.cpp) and ptxas (codegen/cuda/GpuCompile.h).
#pragma once
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

}  // namespace friction::codegen
