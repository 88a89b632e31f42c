// What the MLIR code generator offers the rest of friction. This header has
// no MLIR types: codegen/mlir/ is the only folder whose files include MLIR
// and LLVM headers (docs/codegen.md).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/CodegenOptions.h"
#include "codegen/CudaToolkit.h"
#include "runtime/cuda/GpuPlan.h"
#include "codegen/KernelSource.h"
#include "ir/Graph.h"

namespace friction::codegen {

// Compiles kernels just in time: all kernels of one request in one MLIR
// module and one JIT (mlir::ExecutionEngine); when that fails, one module per
// kernel (a kernel that still fails is returned without code). With
// `compileEach`, always one module per kernel, so each kernel's phases are
// measured alone.
std::unique_ptr<KernelSource> createJitSource(const CodegenOptions& options, bool compileEach = false);

// The module of `nodes`' kernels (each must have an analyzeKernel view) after
// each stage: "built" first, then every enabled stage of
// codegen/CodegenStages.def by name. For tests and documentation.
struct StageDump {
  std::string stage;
  std::string module;
};
std::vector<StageDump> kernelStages(const std::vector<const Node*>& nodes, const CodegenOptions& options = {});

// Ahead of time: the same kernels as the JIT compiles, as one relocatable
// object file at `path` (PIC, LLVM O2, machine code for the host CPU).
// Kernel i is the function names[i]; the object defines packedSymbol(names[i])
// (a PackedFn) and leaves the microkernels (codegen/Microkernels.h) and libm
// undefined. Throws Error on failure. `jitMs` of the result is the time to
// LLVM IR, optimization and the object file.
CompileTimes emitKernelObject(const std::vector<const Node*>& nodes, const std::vector<std::string>& names,
                              const CodegenOptions& options, const std::string& path);

// Compiles the kernel of `node` (it must have an analyzeKernel view under
// `options`, whose target must be Target::Cuda) through the Cuda pipeline of
// codegen/CodegenStages.def, adding its phases to `times`. Throws Error with
// MLIR's diagnostics when a stage fails.
gpu::GpuKernel compileGpuKernel(const Node& node, const CodegenOptions& options, CompileTimes& times);
// The CUDA toolkit whose libdevice the cuda target links (CUDA_HOME,
// CUDA_ROOT, CUDA_PATH, /usr/local/cuda: the first holding
// nvvm/libdevice/libdevice.10.bc), or "" when there is none.
std::string cudaToolkitPath();

// The host CPU as LLVM's code generator targets it: its name and the
// features enabled on it ("avx2", "fma", ...), sorted.
struct HostCpu {
  std::string name;
  std::vector<std::string> features;
};
HostCpu hostCpu();

}  // namespace friction::codegen
