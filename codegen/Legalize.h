// Rewrites, on a program's own copy of the graph, of ops that have no kernel
// of their own into ops that do (the way ONNX Runtime expands a function
// body): Split into one Slice per output (each a strided copy), and an Einsum
// of batched-matmul form (`bgid,bgjd->bgij`: one contracted, one row and one
// column letter, the rest batch letters present in all three terms) into
// Transposes around a MatMul, DepthToSpace and SpaceToDepth into a Transpose
// between two Reshapes; and first any op computing on f16/bf16 into the same op
// on f32 values with its result rounded (widen-half's rewrite, for what the passes left in half precision).
// Runs after the passes, so what it makes is never fused or re-laid-out: it decides kernels, not the graph
// the passes see.
#pragma once
#include <cstdint>

#include "ir/Graph.h"

namespace friction::codegen {

// True when `g` has a node legalize() would rewrite.
bool needsLegalizing(const Graph& g);
// Rewrites every such node with static shapes; returns how many.
int64_t legalize(Graph& g);

}  // namespace friction::codegen
