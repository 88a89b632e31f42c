// The cuda target's compile of a whole model: the program builder's view of
// the optimized graph with the cuda pipeline's options (every contraction
// and convolution generated, no host slabs), and each distinct kernel
// compiled to PTX (codegen/mlir/GpuStages.cpp). Steps the GPU cannot run yet
// (ops the cpu backend runs natively or on the interpreter) are counted, not
// hidden. What `friction compile --backend cuda` prints and writes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/CodegenOptions.h"
#include "codegen/CudaToolkit.h"
#include "runtime/cuda/GpuPlan.h"
#include "codegen/KernelSource.h"
#include "ir/Graph.h"

namespace friction::codegen {

// The GPU architectures the cuda pipeline makes PTX for (compile --gpu-chip, cuda?chip=).
inline const std::vector<std::string> kGpuChips = {"sm_80", "sm_86", "sm_89", "sm_90"};

struct GpuCompiledKernel {
  std::string label;  // what it computes: op or region kind -> output type (as the cpu profile names kernels)
  std::string file;   // its PTX file's name in an --emit-ptx folder
  int64_t calls = 0;  // steps of the model that run it
  gpu::GpuKernel code;     // empty ptx when it failed (error says why)
  std::string error;
};

struct GpuCompileReport {
  std::string chip;
  std::vector<GpuCompiledKernel> kernels;  // distinct kernels, in program order
  int64_t kernelCalls = 0, launches = 0;   // per run of the model
  std::map<std::string, int64_t> hostSteps;  // steps without a GPU kernel yet: what runs them -> count
  int64_t views = 0;                          // zero-copy views (no kernel on any target)
  CompileTimes times;
  // What the cuda backend runs (GpuPlanBuilder.h), when every step has a GPU
  // kernel; else planError says which step does not.
  gpu::GpuPlan plan;
  std::string planError;
  int64_t failed() const;
};

// Compiles `g` (optimized, static shapes) for options.gpuChip.
GpuCompileReport compileForGpu(const Graph& g, CodegenOptions options);

// Writes one <file>.ptx per compiled kernel and kernels.json (labels, calls,
// launches with grid, block and arguments, host steps) into `dir`.
void writePtxFolder(const GpuCompileReport& report, const std::string& dir);

// ptxas from the CUDA toolkit (the bin/ of cudaToolkitRoots(), then PATH),
// or "" when there is none.
std::string findPtxas();

// What `ptxas -v -arch=<chip>` says of one PTX text: accepted or not, its
// registers (the most any function of it uses) and its message when refused.
struct PtxasResult {
  bool ok = false;
  int registers = -1;
  std::string message;
};
PtxasResult runPtxas(const std::string& ptxas, const std::string& ptx, const std::string& chip);

}  // namespace friction::codegen
