// What a code generator turns into one compiled kernel: the flat view of a
// node or Fused region, and its structural key. No MLIR types here; the
// kernel builder (codegen/mlir/KernelBuilder.cpp) makes one `func.func` of a
// view: its arguments are the kernel's inputs, then its outputs' initial
// buffers (destination-passing style); it returns the outputs. Kernels are
// f32 with static shapes:
//   Elementwise  one elementwise op, or a Fused "elementwise" region: ONE
//                linalg.generic whose payload computes the whole body per
//                element (numpy broadcasting through the indexing maps)
//   Contraction  MatMul/Gemm, or a Fused "epilogue" region anchored on one:
//                linalg.fill + linalg.matmul/batch_matmul (or a contraction
//                generic), then ONE generic applying alpha/C and the epilogue
//                in place on the accumulator. A Conv without a native kernel
//                (ukernels=off, or one the microkernels do not cover: 1-D,
//                3-D) is one too: the bias, then one contraction generic per
//                window cell over the output pixels it reaches (no padding
//                copy), then the epilogue
//   NativeEpilogue  a Fused "epilogue" region anchored on an op the backend
//                runs natively (NativeKernels.h: NHWC conv, pooling): the
//                caller fills the output buffer with the anchor's result, the
//                kernel is ONE generic applying the epilogue there in place
//   Structured   the GPU and halide targets only: one op of codegen/StructuredOps.def
//                (Transpose, Slice, Concat, Pad, the Reduce ops, pooling, ...)
//                as generics over its arguments; its constant inputs (Slice
//                bounds, Pad amounts, Reduce axes) are read when it is built
//   Graph        the halide target only: a Fused region the kinds above do not
//                cover (a convert-layout nhwc region, an epilogue anchored on
//                one, a decomposed normalization, a dedup pattern) as ONE
//                kernel of its whole body: every node elementwise, a
//                contraction, a ConvTranspose, Structured or a view, nested
//                regions inlined
//   Typed        the halide target only: one op the cpu target runs as a
//                native typed kernel (NativeKernels.h): a mask op of
//                codegen/MaskOps.def (bool operands or result), a Cast
//                a Structured one does not cover, a ScatterND of
//                constant indices, a Resize of constant scales or a
//                ConvTranspose; operands f32, i64, i32 or bool, its
//                constant operands read when it is built
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/CodegenOptions.h"
#include "ir/Graph.h"

namespace friction::codegen {

enum class KernelKind { Elementwise, Contraction, NativeEpilogue, Structured, Graph, Typed };

// The flat view of one kernel: the nodes it computes (a single node, or a
// Fused region's body), its inputs and outputs.
struct KernelView {
  KernelKind kind = KernelKind::Elementwise;
  std::vector<const Node*> nodes;     // topological; for Contraction/NativeEpilogue, nodes[0] is the anchor
  std::vector<const Value*> inputs;   // kernel arguments, in order
  // Structured and Typed: the node input each argument is (the rest are
  // constants; none when every one is); the other kinds take every present input.
  std::vector<int> argInputs;
  bool listsArguments() const { return kind == KernelKind::Structured || kind == KernelKind::Typed; }
  // Structured: scratch buffers (f32, these shapes) the kernel takes after
  // its outputs: statistics a normalization computes before it normalizes.
  std::vector<std::vector<int64_t>> scratch;
  std::vector<const Value*> outputs;  // kernel results, in order
  std::vector<int64_t> domain;        // iteration space of the elementwise part (= output shape)
  // Elementwise kernels are compiled with one dim of the domain dynamic, the
  // split dim (the first of extent 2 or more: dim 0, or the channels of a
  // batch-1 [1, C, H, W]), on the outputs and on the inputs that span it, so
  // the runtime calls them on slabs of it from several threads: generated
  // code runs parallel without an OpenMP runtime in the JIT. Every dim before
  // it has extent 1, so a slab is contiguous. inputSplitDims[i] is the split
  // dim in input i's own shape, -1 when the input broadcasts along it. A
  // function of the node's types, hence of its key. -1: not split.
  int splitDim = -1;
  std::vector<int> inputSplitDims;
};

// Element types a kernel's buffers may have: f32, i64, i32, or bool (a byte
// each). Most kinds take f32 alone; Typed kernels take them all.
bool isKernelElementType(DType t);
// A ConvTranspose the halide target's gathered accumulator and legalize()'s Conv over zeros both take: f32,
// static, 1-D to 3-D, weights [C, K / group, window...], a bias per output channel, the result's shape the
// geometry's; false with the reason in `why` otherwise.
bool checkConvTranspose(const Node& n, std::string* why = nullptr);

// Ops the elementwise payload emitter handles (codegen/ScalarOps.def).
bool isSupportedElementwise(const Node& n);
// A shape-only op (Reshape, Flatten, Squeeze, Unsqueeze: the View trait)
// between static f32 values of as many elements: zero-copy on the host.
bool isStaticView(const Node& n);
// The dims of input 0 a Softmax or LogSoftmax (its `axis`), a
// LayerNormalization (`axis` to the last) or an InstanceNormalization (every
// dim after the channels) normalizes over.
std::vector<bool> normalizedDims(const Node& n);
// The dims of input 0 a Reduce op reduces (its axes input or attribute;
// every dim when empty) or a global pool does (the spatial dims); throws
// Error for an axis out of range or a reduction over no axis.
std::vector<bool> reducedDims(const Node& n);
// The integers of constant input `i` of `n` (Slice bounds, Pad amounts,
// Reduce axes: what a Structured kernel reads when it is built), or nullopt
// when it is absent; throws Error when it is not a constant of integers.
std::optional<std::vector<int64_t>> constantInts(const Node& n, size_t i);
// A Pad's amounts for every axis (begins, then ends) and its constant value,
// as a compiled kernel takes them; throws Error for another mode, pads or a
// value that are not constants, or negative pads (a crop).
struct ConstantPad {
  std::vector<int64_t> pads;
  double value = 0;
};
ConstantPad constantPad(const Node& pad);
// The kernel view of `node` under `options` (ukernels=off: convolutions are
// compiled kernels), or nullptr with the reason in `why`.
std::unique_ptr<KernelView> analyzeKernel(const Node& node, const CodegenOptions& options, std::string* why = nullptr);
// A structural key (ir/Structural.h's nodeStructure, tensors hashed): op,
// attributes (Fused bodies structurally, node names and provenance left
// out), input and output types. Equal keys compute the same function, so
// they share one compiled kernel.
std::string structuralKey(const Node& node);

}  // namespace friction::codegen
