// What the files of codegen/mlir/ share: the one MLIR context, diagnostics
// collected into error messages, and the stage functions of the pipeline.
#pragma once
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/CodegenOptions.h"
#include "ir/Graph.h"
#include "ir/ops/NnShapes.h"
#include "llvm/Support/Error.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class OpBuilder;
class PassManager;
}  // namespace mlir

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace friction::codegen {

// One context for the process (dialect loading is the slow part of setup);
// `mu` serializes its use.
struct MlirContext {
  mlir::MLIRContext ctx;
  std::mutex mu;
  static MlirContext& get();

 private:
  MlirContext();
};

// Collects MLIR diagnostics for error messages while it lives.
struct Diagnostics {
  std::string text;
  mlir::ScopedDiagnosticHandler handler;
  explicit Diagnostics(mlir::MLIRContext& ctx);
};

std::string printOp(mlir::Operation* op);

// Runs the passes `add` puts into a module-level pass manager; throws Error
// naming `stage` with MLIR's diagnostics when they fail.
void runPasses(mlir::ModuleOp module, const char* stage, const std::function<void(mlir::PassManager&)>& add);

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// One func.func per node (KernelBuilder.cpp), named names[i]; `options` as
// the program builder saw them (analyzeKernel).
mlir::OwningOpRef<mlir::ModuleOp> buildModule(mlir::MLIRContext& ctx, const std::vector<const Node*>& nodes,
                                              const std::vector<std::string>& names, const CodegenOptions& options);

// The kernel of a Structured view's single op (StructuredKernels.cpp):
// `args` are aligned with the node's inputs (null for its constant ones),
// `init` is the result's initial tensor, `scratch` the view's statistics
// buffers; returns the result, then the scratch tensors as updated.
std::vector<mlir::Value> buildStructuredKernel(mlir::OpBuilder& b, const Node& n, const std::vector<mlir::Value>& args,
                                               mlir::Value init, const std::vector<mlir::Value>& scratch);

// Windows of convolutions and pools over [N, C, spatial...] (KernelBuilder.cpp).
// True when every window cell of every output lies inside the input: the
// whole window is then one affine contraction, no padding reached.
bool windowInside(const Window& win, const std::vector<int64_t>& xs, const std::vector<int64_t>& ys);
// One window cell (row-major over the window) as slices over the spatial
// dims: the rectangle of outputs whose tap lies inside the input (offsets and
// sizes), and where those taps are (offsets, strides); nullopt when it
// reaches no output.
struct WindowCell {
  std::vector<int64_t> at;  // the cell's position in the window
  std::vector<int64_t> xOffsets, xStrides, yOffsets, sizes;
};
std::optional<WindowCell> windowCell(const Window& win, const std::vector<int64_t>& xs, const std::vector<int64_t>& ys,
                                     int64_t cell);

// Runs the stages of codegen/CodegenStages.def in `options.target`'s pipeline
// that `options` enables (Pipeline.cpp): down to the LLVM dialect for Cpu and
// CudaNests, to gpu.binary ops holding PTX and a host function of
// gpu.launch_func for Cuda. `observe` sees the module after each ("built"
// first). Throws Error with MLIR's diagnostics when a stage fails.
using StageObserver = std::function<void(const std::string& stage, mlir::ModuleOp module)>;
void runStages(mlir::ModuleOp module, const CodegenOptions& options, const StageObserver& observe = nullptr);

// The stage functions, one per entry of codegen/CodegenStages.def.
#define FRICTION_CODEGEN_STAGE(fn, name, switchable, targets, summary) void fn(mlir::ModuleOp module, const CodegenOptions& options);
#include "codegen/CodegenStages.def"
#undef FRICTION_CODEGEN_STAGE

// LLVM O2, not O3, for JIT and AOT alike: on ResNet-50's 25 distinct kernels
// O3's unrolling made basic blocks that cost 4.8 s in the machine scheduler
// against 0.95 s, for no measurable run time (generated code is ~1% of it;
// the microkernels do the rest).
constexpr unsigned kLlvmOptLevel = 2;

// LLVM's O2 module pipeline as the kernels (JIT and AOT alike) get it:
// vectorized, but neither unrolled nor interleaved. Unrolling made most of
// the compile time (DenseNet-121's 63 distinct kernels: 3.95 s with it, 1.0 s
// without; MaxViT-T 2.9 -> 1.7 s) for no fewer instructions per run
// (callgrind, five torch fixtures: within 0.7%): generated loops are
// elementwise maps and epilogues, the heavy lifting is in the microkernels.
llvm::Error optimizeLlvmModule(llvm::Module* module, llvm::TargetMachine* target);

}  // namespace friction::codegen
