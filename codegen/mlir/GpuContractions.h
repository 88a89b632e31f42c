// What the GPU stages that rewrite contractions share (gpu-shared in
// GpuSharedTiles.cpp, gpu-coarsen in GpuStages.cpp): which generics they can
// take, the dims a thread's register tile runs along, and the reduction loops
// that carry a thread's accumulators.
#pragma once
#include <optional>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace friction::codegen {

// The loops of a generic the contraction stages can rewrite: buffers, static
// loops, one output written once per parallel iteration (its map a
// permutation of the parallel dims), at least one reduction dim, and no input
// viewing the output's buffer (the accumulators stay in registers until the
// end).
struct ContractionLoops {
  llvm::SmallVector<int64_t> ranges;
  llvm::SmallVector<unsigned> parallel, reduction;
  // gpu-tile flattens a nest with the last parallel dim fastest: consecutive
  // threads step `fast`.
  unsigned fast = 0;
  // Per loop dim (0 for `fast` and the reduction dims): how many inputs that
  // vary with `fast` do not read it; a thread's outputs along such a dim
  // ("rows") share those inputs' loads.
  llvm::SmallVector<int> rowReuse;
  // Whether an input does not read `fast` (a matmul's A, a convolution's
  // weights): outputs along `fast` ("columns") share its loads.
  bool columnReuse = false;
};
std::optional<ContractionLoops> contractionLoops(mlir::linalg::GenericOp op);

// The named linalg ops with reduction dims of `module`, as generics.
void generalizeContractions(mlir::ModuleOp module);

// Builds the reduction loops of a thread that computes `accumulators.size()`
// outputs of `op`: scf.for nests from 0 to `extents` (one per reduction dim, in
// order), carrying the accumulators; at each step the payload is cloned once
// per output t, input i read by `load(builder, i, dims(builder, t, ivs))`
// (scalar inputs passed through). Returns the final accumulators.
llvm::SmallVector<mlir::Value> accumulateOutputs(
    mlir::OpBuilder& b, mlir::Location loc, mlir::linalg::GenericOp op, llvm::ArrayRef<int64_t> extents,
    llvm::ArrayRef<mlir::Value> accumulators,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder&, int64_t, mlir::ValueRange)> dims,
    llvm::function_ref<mlir::Value(mlir::OpBuilder&, unsigned, llvm::ArrayRef<mlir::Value>)> load);

// The indices `map` gives the loop dims `dims`.
llvm::SmallVector<mlir::Value> applyMap(mlir::OpBuilder& b, mlir::Location loc, mlir::AffineMap map,
                                        llvm::ArrayRef<mlir::Value> dims);

}  // namespace friction::codegen
