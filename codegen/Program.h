// A compiled model as the code generators run it: a list of steps over a
// slot table (runtime/SlotProgram.h), each a call of a compiled kernel, of a
// native microkernel, a zero-copy view (Reshape & co., a contiguous Slice), of the reference
// interpreter's kernel, or a nested program for a Fused region's body. Outputs of compiled and native steps may
// live in one arena that plan-memory laid out. ProgramBuilder.h makes them.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/KernelSource.h"
#include "codegen/NativeKernels.h"
#include "runtime/BufferPool.h"
#include "runtime/SlotProgram.h"
#include "runtime/StepProfile.h"
#include "runtime/interp/KernelRegistry.h"

namespace friction::codegen {

// One distinct compiled kernel, shared by every step that computes the same
// structural key.
struct KernelEntry {
  CompiledKernel code;
  std::string label;  // what it computes, for statistics: op or region kind -> output type
};

struct Program;

struct Step : SlotStep {
  enum Kind { Compiled, Interp, Sub, Native, View } kind = Interp;
  const Node* node = nullptr;
  std::shared_ptr<KernelEntry> kernel;   // Compiled; Native with a compiled epilogue
  std::vector<int> argInputs;            // Compiled (and compiled epilogues): the node inputs passed, in argument order
  std::vector<std::vector<int64_t>> scratch;  // Compiled: scratch buffers passed after the outputs (KernelView::scratch)
  int splitDim = -1;                     // a split kernel (KernelView::splitDim): the dim cut into slabs,
  std::vector<int> argSplitDims;         // and each argument's own dim to cut (-1: passed whole)
  std::unique_ptr<NativeKernel> native;  // Native: the node itself, or the region's anchor
  std::vector<int> nativeIn;             // slots of the native op's inputs
  const interp::Kernel* interpKernel = nullptr;
  std::unique_ptr<Program> sub;
  int64_t viewOffset = 0;    // View: the element of its input's buffer its result starts at (a Slice)
  bool viewWindow = false;   // View: a window of its input at viewOffset (a Slice), else its input reshaped
  std::vector<int64_t> viewShape;  // View: its result's shape
  int64_t arenaOffset = -1;  // output 0 lives in the program's arena at this offset (plan-memory)
};

struct Program : SlotProgram<Step> {
  // The graph the steps point into when the builder resolved a copy of the
  // one it was given (ProgramBuilder::build), else null.
  std::shared_ptr<const Graph> resolved;
  // One buffer for the intermediates plan-memory placed (top level only); a
  // model therefore runs one inference at a time.
  std::shared_ptr<void> arena;
  // Where the other outputs of compiled and native steps come from.
  std::shared_ptr<BufferPool> buffers = BufferPool::create();
  // Profiling: wall time of every step, summed over runs (leaf steps of
  // regions are timed in their own program).
  bool profiling = false;
  mutable std::vector<double> stepMs;
  mutable std::vector<long> stepCalls;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  void runStep(const Step& s, std::vector<Tensor>& env, std::vector<Tensor>& args, std::vector<Tensor>& outs) const;
};

// Turns profiling on in `p` and every nested program.
void enableProfiling(Program& p);
// Zeroes the step times of `p` and every nested program.
void resetProfile(Program& p);
// The timed leaf steps of `p` and of the regions inside it.
void collectProfile(const Program& p, std::vector<StepTime>& out);
// Calls `fn` on every constant of `p` and its nested programs.
void forEachConstant(const Program& p, const std::function<void(const Tensor&)>& fn);

// One distinct kernel of a model.
struct KernelCompileStat {
  std::string kernel;  // op or region kind -> output type
  int64_t calls = 0;   // steps of the model that run it
  double buildMs = -1, lowerMs = -1, jitMs = -1;  // its own phases when compiled alone; -1 when in a batch
  bool compiled = true;  // false: it failed and its steps run on the interpreter
};

// What a program is made of and what making it cost.
struct ProgramStats {
  int64_t kernelCalls = 0;       // nodes that run a compiled kernel (Fused bodies counted inside)
  int64_t kernelsCompiled = 0;   // distinct kernels compiled for this program
  int64_t kernelsLoaded = 0;     // distinct kernels looked up (an AOT artifact), not compiled
  int64_t kernelsReused = 0;     // calls served by a kernel made earlier (cache hits)
  int64_t nativeCalls = 0;       // direct microkernel calls (NHWC conv/pool, transpose, softmax, layernorm)
  std::map<std::string, int64_t> nativeOps;    // NativeKernel::describe() -> count
  int64_t shapeNodesFolded = 0;  // integer/bool nodes evaluated when the program was built (foldShapeArithmetic)
  int64_t legalized = 0;         // Split and Einsum nodes rewritten into ops with kernels (Legalize.h)
  int64_t views = 0;             // View-trait ops and contiguous Slices run as a new shape on the same buffer
  int64_t fallbackNodes = 0;     // nodes on the interpreter's kernels
  std::map<std::string, int64_t> fallbackOps;  // op -> count
  int64_t arenaValues = 0;       // intermediates in the plan-memory arena
  int64_t arenaBytes = 0;        // its size
  int64_t patternArenaValues = 0;  // pattern instances' intermediates in their bodies' plans
  int64_t patternArenaBytes = 0;   // the blocks the instances share (one per level of nesting)
  double compileMs = 0;          // making the kernels, wall
  CompileTimes phases;           // of which MLIR build, lowering, JIT
  std::vector<KernelCompileStat> kernels;  // per distinct kernel
};

}  // namespace friction::codegen
