// The `cpu` backend: nodes that codegen supports run as MLIR-compiled kernels
// (one per node or Fused region, cached by structure so identical kernels
// compile once); the rest run on the reference interpreter's kernels.
#pragma once
#include <memory>

#include "codegen/Kernels.h"
#include "runtime/Backend.h"

namespace friction::codegen {

// One distinct compiled kernel of a model.
struct KernelCompileStat {
  std::string kernel;  // op or region kind -> output type
  int64_t calls = 0;   // steps of the model that run it
  double buildMs = -1, lowerMs = -1, jitMs = -1;  // its own phases with cpu?compile=each; -1 when compiled in a batch
  bool compiled = true;  // false: it failed and its steps run on the interpreter
};

// Compile statistics of one CompiledModel (CpuModel).
struct CpuStats {
  int64_t kernelCalls = 0;       // nodes that run a compiled kernel (Fused bodies counted inside)
  int64_t kernelsCompiled = 0;   // distinct kernels this compile() built
  int64_t kernelsReused = 0;     // calls served by a kernel compiled earlier (cache hits)
  int64_t nativeCalls = 0;       // direct microkernel calls (NHWC conv/pool, transpose, softmax, layernorm)
  std::map<std::string, int64_t> nativeOps;    // NativeKernel::describe() -> count
  int64_t fallbackNodes = 0;     // nodes on the interpreter's kernels
  int64_t arenaValues = 0;       // intermediates in the plan-memory arena
  int64_t arenaBytes = 0;        // its size
  std::map<std::string, int64_t> fallbackOps;  // op -> count
  double compileMs = 0;          // total, MLIR build + lowering + JIT
  double buildMs = 0, lowerMs = 0, jitMs = 0;
  int64_t kernelsLoaded = 0;     // distinct kernels taken from a KernelSource (an AOT artifact), not compiled
  std::vector<KernelCompileStat> kernels;  // per distinct kernel
};

// Where the cpu backend takes its compiled kernels from when it is not the
// JIT: an ahead-of-time artifact (codegen/Aot.h). The program around the
// kernels (native microkernel steps, interpreter fallbacks, constants) is
// built exactly as compile() builds it.
class KernelSource {
 public:
  virtual ~KernelSource() = default;
  // One entry per node; keys[i] is structuralKey(*nodes[i]). A null entry
  // makes the node fall back to the interpreter (errors[i] says why); throw
  // Error to refuse.
  virtual CompiledBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>& keys) = 0;
};

// The distinct kernels the cpu backend needs for `graph` (structural key and
// a node computing it), in the order compile() would build them. No MLIR work.
std::vector<std::pair<std::string, const Node*>> cpuKernelsOf(const Graph& graph, const CodegenOptions& options = {});
// A cpu model of `graph` (which must outlive it) whose kernels come from
// `source` instead of the JIT; `what` names the source in description().
std::unique_ptr<CompiledModel> compileCpuWithKernels(const Graph& graph, const CodegenOptions& options,
                                                     KernelSource& source, const std::string& what);

// How the cpu backend compiles and reports, beyond code generation.
struct CpuBackendOptions {
  bool profile = false;      // profile=on: time every step (CompiledModel::profile())
  bool compileEach = false;  // compile=each: one module per kernel, so per-kernel compile phases are measured
};
// The CPU backend object. Spec options: ukernels=on|off (default on), profile=on|off (off), compile=batch|each (batch).
std::unique_ptr<Backend> createCpuBackend(const CodegenOptions& options = {}, const CpuBackendOptions& cpu = {});
// Statistics of a model compiled by the cpu backend (nullptr for other models).
const CpuStats* cpuStats(const CompiledModel& model);

// Registers "cpu" with runtime/Backend.h.
void registerCpuBackend();

}  // namespace friction::codegen
