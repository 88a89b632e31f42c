// Kernels as Halide algorithms: what each kernel view (codegen/KernelAnalysis.h)
// computes, as Halide functions, with no schedule (HalideSchedule.h decides
// how). The same views as the MLIR code generator builds, so the `halide`
// backend differs from `cpu` only in the kernel compiler:
//   Elementwise  one Func per node of the view (its own shape, broadcasting
//                on read), so loop-level fusion (inline or materialize) is a
//                schedule choice for every intermediate
//   Contraction  the anchor's accumulator (a pure zero or bias, then one
//                update over an RDom of the reduced dims), then the epilogue
//   Structured   one op of codegen/StructuredOps.def: one build function per
//                op, named as the MLIR ones, from the same list
//   Typed        a mask op (codegen/MaskOps.def), a Cast between f32, i64,
//                i32 and bool, or a ScatterND of constant indices, with the
//                Structured ones' build functions
// Halide's dim 0 is the innermost; friction's shapes are row-major, so every
// access reverses friction's index order.
#pragma once
#include <Halide.h>

#include <string>
#include <vector>

#include "codegen/KernelAnalysis.h"

namespace friction::codegen::halide {

namespace HL = ::Halide;

// A Func with the friction shape it is defined over.
struct ShapedFunc {
  HL::Func func;
  std::vector<int64_t> shape;
  // A reduction's dim whose neighbours share one operand's reads (a
  // convolution's output channels share the input pixels): the rows of its
  // register tile; -1: the second innermost.
  int rowDim = -1;
  // A reduction's dim laid out innermost and computed in vector lanes (a
  // channels-last convolution's output channels); -1: the innermost.
  int laneDim = -1;
  // An operand a reduction reads per block of its lanes, packed at that
  // block's loop: its Halide args are [lanes, the rest...] in that order, so
  // the lanes' dim is stored innermost however it is scheduled (a
  // channels-last convolution's weights [K, C/G, window...]; a matmul's B as
  // [N, K, batch...]; definePanel in FuncHelpers.h); undefined when none.
  HL::Func panel;
  int64_t panelElements = 0;  // the panel's size: the operand's
  // The leading dims whose loops enclose the panel's blocks (a batch: one
  // panel a batch index); the blocks enclose the other dims' loops, so one
  // block's panel serves all of them.
  int batchDims = 0;
  // A reduction's dim that a consumer may compute it a slice of at a time
  // without cutting its register tile: a channels-last convolution's image
  // rows, a batched matmul's innermost batch dim; -1: none.
  int sliceDim = -1;
};

// The Halide functions of one kernel.
struct KernelFuncs {
  std::vector<HL::ImageParam> inputs;  // one per view input: f32, integers (Gather indices, a Cast's input) or bools
  std::vector<std::vector<int64_t>> inputShapes;
  std::vector<ShapedFunc> outputs;     // one per view output
  // Everything else the kernel defines, producers first: per-node values
  // (pure, inlined by default) and reductions (accumulators, statistics:
  // with update definitions).
  std::vector<ShapedFunc> producers;
  // The buffers it reads that are none of its inputs (a region body's weights, a ScatterND's or a Resize's
  // tables): arguments of the compiled pipeline after the inputs, so that they are read where Halide's
  // runtime allocated them (aligned), not copied into the code as globals.
  std::vector<HL::Buffer<>> constants;
};

// The value of elementwise node `n` (an op of codegen/ScalarOps.def: one
// emit function per op, in ScalarFormulas.cpp) from its inputs' values,
// `in[i]` undefined where an optional input is absent.
HL::Expr scalarFormula(const Node& n, const std::vector<HL::Expr>& in);

// The value of mask op `op` (codegen/MaskOps.def) from its operands' values,
// bools as Halide bools: a bool result.
HL::Expr maskFormula(const std::string& op, const std::vector<HL::Expr>& in);

// The Halide type of a buffer of `t`: f32, i64, i32, or bool as a byte;
// throws for any other (isKernelElementType).
HL::Type halideType(DType t);

// Halide's region of a friction shape (reversed: Halide's dim 0 is the innermost).
HL::Region regionOf(const std::vector<int64_t>& shape);

// The algorithm of `view`; throws Error for what it cannot express. With
// `clampInputs`, every read of an input is clamped into it (repeat_edge):
// the autoschedulers' schedules may compute a producer beyond what the
// outputs need (rounded-up or shifted tails), which must not read past the
// buffers. `accumulatorRows` > 1: a contraction's accumulator holds that many
// rows as one Tuple (ScheduleOptions::accumulatorRows).
KernelFuncs defineKernel(const KernelView& view, bool clampInputs, int accumulatorRows = 1);

}  // namespace friction::codegen::halide
