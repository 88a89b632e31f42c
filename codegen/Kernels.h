// What the CPU code generator can turn into one compiled kernel, and the
// interface between the runtime side (CpuBackend.cpp, no MLIR headers) and
// the MLIR side (MlirLowering.cpp, the one MLIR-heavy translation unit).
//
// A kernel is one `func.func` over tensors: its arguments are the kernel's
// inputs, then its outputs' initial buffers (destination-passing style); it
// returns the outputs. Slice 1 handles f32 with static shapes:
//   Elementwise  one elementwise op, or a Fused "elementwise" region: ONE
//                linalg.generic whose payload computes the whole body per
//                element (numpy broadcasting through the indexing maps)
//   Contraction  MatMul/Gemm, or a Fused "epilogue" region anchored on one:
//                linalg.fill + linalg.matmul/batch_matmul (or a contraction
//                generic), then ONE generic applying alpha/C and the epilogue
//                in place on the accumulator
//   NativeEpilogue  a Fused "epilogue" region anchored on an op the backend
//                runs natively (NativeKernels.h: NHWC conv, pooling): the
//                caller fills the output buffer with the anchor's result, the
//                kernel is ONE generic applying the epilogue there in place
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::codegen {

enum class KernelKind { Elementwise, Contraction, NativeEpilogue };

// The flat view of one kernel: the nodes it computes (a single node, or a
// Fused region's body), its inputs and outputs.
struct KernelView {
  KernelKind kind = KernelKind::Elementwise;
  std::vector<const Node*> nodes;     // topological; for Contraction/NativeEpilogue, nodes[0] is the anchor
  std::vector<const Value*> inputs;   // kernel arguments, in order
  std::vector<const Value*> outputs;  // kernel results, in order
  std::vector<int64_t> domain;        // iteration space of the elementwise part (= output shape)
  // Elementwise kernels over at least 2 rows are compiled with dim 0 of the
  // domain dynamic on the outputs and on the inputs that span it (rowInputs[i];
  // the others broadcast along it), so the runtime calls them on slabs of rows
  // from several threads: generated code runs parallel without an OpenMP
  // runtime in the JIT. A function of the node's types, hence of its key.
  bool rowSplit = false;
  std::vector<bool> rowInputs;
};

// Ops the elementwise payload emitter handles (codegen/ScalarOps.def).
bool isSupportedElementwise(const Node& n);
// The kernel view of `node`, or nullptr with the reason in `why`.
std::unique_ptr<KernelView> analyzeKernel(const Node& node, std::string* why = nullptr);
// A structural key (ir/Structural.h's nodeStructure, tensors hashed): op,
// attributes (Fused bodies structurally, node names and provenance left
// out), input and output types. Equal keys compute the same function, so
// they share one compiled kernel.
std::string structuralKey(const Node& node);

// The MLIR side. Kernels are called through their packed C interface: args[i]
// points to a pointer to the i-th memref descriptor (inputs, then outputs).
using PackedFn = void (*)(void**);

struct CompiledBatch {
  std::shared_ptr<void> owner;    // keeps the JIT (ExecutionEngine) alive
  std::vector<PackedFn> entries;  // one per requested node, in order
  double buildMs = 0;             // building the MLIR (C++ builders)
  double lowerMs = 0;             // pass pipeline down to the LLVM dialect
  double jitMs = 0;               // translation to LLVM IR, O3 and machine code
  std::vector<std::string> errors;  // optional, per entry: why it is null (a kernel source, CpuBackend.h)
};

// Choices of the code generator (cpu backend options).
struct CodegenOptions {
  bool ukernels = true;  // matmuls call runtime/ukernels' SGEMM (off: linalg loops, LLVM-vectorized)
};

// Compiles kernels for `nodes` (each must have an analyzeKernel view) into one
// module and one JIT. Throws Error with MLIR's diagnostics on failure.
// FRICTION_CG_DUMP=1 prints the module after each stage to stderr.
CompiledBatch compileKernels(const std::vector<const Node*>& nodes, const CodegenOptions& options = {});

// Ahead-of-time (codegen/Aot.h): the same kernels as compileKernels, as one
// relocatable object file at `path` (PIC, LLVM O3, machine code for the host
// CPU) instead of a JIT. Kernel i is the function names[i]; the object defines
// packedSymbol(names[i]), a PackedFn like CompiledBatch::entries, and leaves
// the microkernels (`_mlir_ciface_friction_sgemm*`, Microkernels.h) and libm
// undefined. Throws Error on failure.
struct ObjectStats {
  double buildMs = 0;   // building the MLIR
  double lowerMs = 0;   // pass pipeline down to the LLVM dialect
  double objectMs = 0;  // translation to LLVM IR, O3, machine code into the object file
};
ObjectStats emitKernelObject(const std::vector<const Node*>& nodes, const std::vector<std::string>& names,
                             const CodegenOptions& options, const std::string& path);
// "_mlir__mlir_ciface_" + name: the packed entry of kernel `name` in such an object.
std::string packedSymbol(const std::string& name);
// The host CPU as LLVM's code generator targets it (no MLIR work): its name
// and the features enabled on it ("avx2", "fma", ...), sorted.
struct HostCpu {
  std::string name;
  std::vector<std::string> features;
};
HostCpu hostCpu();

// The module of one kernel after each stage ("built", "interchanged",
// "bufferized", "ukernels", "loops", "llvm"), for documentation and tests.
std::vector<std::pair<std::string, std::string>> kernelStages(const Node& node, const CodegenOptions& options = {});

}  // namespace friction::codegen
