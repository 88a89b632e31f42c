// Where a program's compiled kernels come from: the MLIR JIT (codegen/mlir/
// JitSource.cpp compiles them), an ahead-of-time artifact (codegen/aot/
// LibrarySource looks them up), or Halide (codegen/halide/HalideSource.h).
// The program builder asks for every kernel new to its cache at once.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/KernelAbi.h"
#include "ir/Graph.h"

namespace friction::codegen {

// Milliseconds spent making kernels: building the MLIR, lowering it, and
// translating it to machine code (JIT, or into an object file).
struct CompileTimes {
  double buildMs = 0, lowerMs = 0, jitMs = 0;
  double totalMs() const { return buildMs + lowerMs + jitMs; }
  CompileTimes& operator+=(const CompileTimes& o) {
    buildMs += o.buildMs, lowerMs += o.lowerMs, jitMs += o.jitMs;
    return *this;
  }
};

struct CompiledKernel {
  std::shared_ptr<void> owner;  // keeps the code alive (a JIT engine, a dlopen'ed library)
  KernelFn fn;                  // empty: it could not be made (`error` says why); the node falls back
  std::string error;
  bool timedAlone = false;      // compiled in a module of its own: `own` is its cost alone
  CompileTimes own;
};

struct KernelBatch {
  std::vector<CompiledKernel> kernels;  // one per requested node, in order
  CompileTimes times;                   // the whole request
};

class KernelSource {
 public:
  virtual ~KernelSource() = default;
  // Kernels for `nodes` (each has an analyzeKernel view; keys[i] is
  // structuralKey(*nodes[i])), one per node in order. Throws Error to refuse
  // the whole request (e.g. an artifact that does not match its graph).
  virtual KernelBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>& keys) = 0;
  // True when kernels() compiles code (its time is compile time), false when
  // it only looks kernels up.
  virtual bool compiles() const = 0;
  // How the kernels are made, for descriptions ("MLIR 19 linalg, ..., LLVM O2").
  virtual std::string describe() const = 0;
};

}  // namespace friction::codegen
