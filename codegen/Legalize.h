// Rewrites, on a program's own copy of the graph, of ops that have no kernel
// of their own into ops that do (the way ONNX Runtime expands a function
// body): Split into one Slice per output (each a strided copy), and an Einsum
// of batched-matmul form (`bgid,bgjd->bgij`: one contracted, one row and one
// column letter, the rest batch letters present in all three terms) into
// Transposes around a MatMul, DepthToSpace and SpaceToDepth into a Transpose
// between two Reshapes; and first any op computing on f16/bf16 into the same op
// on f32 values with its result rounded (widen-half's rewrite, for what the passes left in half precision).
// On the GPU targets (CodegenOptions::expandsNativeOnlyOps) also the ops whose host kernels are native ones:
// a Resize of constant scales into Gathers of its tap tables, weighted and summed, an axis at a time, and a
// ConvTranspose into one Conv per output phase, interleaved (else a Conv over its input with zeros between the
// elements); the latter on the cpu target too where its native kernel does not apply (not 2-D, or
// microkernels off). On every target without native steps (halide and the GPU targets) the ops only a native
// kernel runs: RNN, GRU and LSTM unrolled over their static sequence, a Tile of constant repeats into an Expand
// between two Reshapes.
// Runs after the passes, so what it makes is never fused or re-laid-out: it decides kernels, not the graph
// the passes see.
#pragma once
#include <cstdint>

#include "codegen/CodegenOptions.h"
#include "ir/Graph.h"

namespace friction::codegen {

// True when `g` has a node legalize() would rewrite.
bool needsLegalizing(const Graph& g, const CodegenOptions& options = {});
// Rewrites every such node with static shapes; returns how many.
int64_t legalize(Graph& g, const CodegenOptions& options = {});

}  // namespace friction::codegen
