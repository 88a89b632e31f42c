// The `cpu` backend: nodes that codegen supports run as MLIR-compiled kernels
// (one per node or Fused region, cached by structure so identical kernels
// compile once); the rest run on the reference interpreter's kernels.
#pragma once
#include <memory>

#include "codegen/Kernels.h"
#include "runtime/Backend.h"

namespace friction::codegen {

// Compile statistics of one CompiledModel (CpuModel).
struct CpuStats {
  int64_t kernelCalls = 0;       // nodes that run a compiled kernel (Fused bodies counted inside)
  int64_t kernelsCompiled = 0;   // distinct kernels this compile() built
  int64_t kernelsReused = 0;     // calls served by a kernel compiled earlier (cache hits)
  int64_t nativeCalls = 0;       // direct microkernel calls (NHWC conv/pool, softmax, layernorm)
  int64_t fallbackNodes = 0;     // nodes on the interpreter's kernels
  std::map<std::string, int64_t> fallbackOps;  // op -> count
  double compileMs = 0;          // total, MLIR build + lowering + JIT
  double buildMs = 0, lowerMs = 0, jitMs = 0;
};

// The CPU backend object. Spec options: ukernels=on|off (default on).
std::unique_ptr<Backend> createCpuBackend(const CodegenOptions& options = {});
// Statistics of a model compiled by the cpu backend (nullptr for other models).
const CpuStats* cpuStats(const CompiledModel& model);

// Registers "cpu" with runtime/Backend.h.
void registerCpuBackend();

}  // namespace friction::codegen
