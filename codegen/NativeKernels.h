// Ops the cpu backend runs as direct microkernel calls (runtime/ukernels, no
// MLIR): 2-D Conv (any group count), MaxPool, AveragePool and
// GlobalAveragePool, NHWC in the regions convert-layout makes around them and
// NCHW on their own (so all-off runs compiled kernels of the same class);
// Transpose; Softmax, LogSoftmax (any axis), Hardmax and LayerNormalization, alone or
// as the single node of a fuse-reductions region; the data-movement and
// per-axis ops of matchTensorOp; the non-f32 (mask) ops of matchTypedOp. A Fused "epilogue"
// region anchored on one of them runs the native op into the region's output
// buffer, then ONE compiled elementwise kernel updates that buffer in place
// (KernelKind::NativeEpilogue in KernelAnalysis.h) -- unless the epilogue is one the
// native kernel applies itself while the output is in registers or cache
// (FusedEpilogue: convolutions take a residual Add, a Relu/Clip and a
// HardSigmoid, HardSwish, Sigmoid, SiLU or GELU; MatMul/Gemm anchors a bias
// Add before them too).
#pragma once
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/Graph.h"
#include "runtime/ukernels/Conv.h"
#include "runtime/ukernels/Resize.h"

namespace friction::codegen {

// An epilogue simple enough for a native kernel to apply before storing: the
// anchor's result + `bias` (a region operand of one value per element of the
// last dim, a Linear layer's), + `residual` (a region operand of the same
// shape), then clamped to [lo, hi] (Relu: [0, inf), Clip with constant
// bounds), then `activation` (HardSigmoid with its alpha and beta, HardSwish:
// 1/6 and 0.5; Sigmoid; SiLU, x * sigmoid(x); Erf-GELU with exactly GELU's
// constants); with `rounding`, each result is rounded to half precision after the clamp and after the
// activation (what widen-half's ReducePrecision nodes ask for).
struct FusedEpilogue {
  const Value* bias = nullptr;
  const Value* residual = nullptr;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  ukernels::Activation activation = ukernels::Activation::None;
  float alpha = 0.f, beta = 0.f;
  ukernels::Rounding rounding = ukernels::Rounding::None;
};

class NativeKernel {
 public:
  virtual ~NativeKernel() = default;
  // Compile-time work (packing constant weights, a conv's input table); run() works without it, slower.
  virtual void prepare() {}
  // `inputs` are the node's inputs; `out` is allocated with the output's shape and overwritten.
  virtual void run(const std::vector<Tensor>& inputs, Tensor& out) const = 0;
  // A node of several results (TopK's values and indices): `outs` holds one tensor per output, each allocated
  // with its shape; kernels of one result need not override it.
  virtual void runAll(const std::vector<Tensor>& inputs, std::vector<Tensor>& outs) const { run(inputs, outs[0]); }
  virtual std::string describe() const = 0;
  // Takes over the epilogue (a bias arrives as input 2, a residual as input 3,
  // after the node's own); false when this kernel cannot apply it.
  virtual bool fuse(const FusedEpilogue&) { return false; }
};

// A matcher of one op: its native kernel for the node and the values feeding it, or nullptr with the reason in
// `why` (the typed and indexing ops' tables).
using NativeMatcher = std::function<std::unique_ptr<NativeKernel>(const Node&, const std::vector<const Value*>&,
                                                                  std::string*)>;
// How a matcher says no: nullptr, with the reason in `why` when asked for.
inline std::unique_ptr<NativeKernel> noNative(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return nullptr;
}

// The epilogue of Fused region `region` after its native `anchor` (the
// region's first node) as a FusedEpilogue, when it is one: a chain on the
// anchor's result of at most one Add of a per-last-dim region input (first),
// at most one Add of a same-shaped region input, then at most one Relu or
// Clip, then at most one HardSigmoid, HardSwish, Sigmoid, SiLU or GELU; and
// ReducePrecision after the Adds and after the activation, where the kernels
// round.
// `resolve` maps a region operand to the value seen at the top level (where
// constant Clip bounds are constants).
std::optional<FusedEpilogue> matchFusedEpilogue(const Node& region, const Node& anchor,
                                                const std::function<const Value*(const Value*)>& resolve);

// The rows a ScatterND (reduction none) of constant index tuples writes: each
// tuple addresses data's leading m = indexShape.back() dims (negative entries
// count from the end), `rows[t]` is tuple t's flat position over those dims,
// and every row holds `rowElements` elements. Nullopt, with the reason in
// `why`, when the tuples do not fit data `xs`, one is out of range, or the
// updates' element count is not rows x rowElements. The cpu target's row
// copies and the halide target's row table both start from it.
struct ScatterRows {
  std::vector<int64_t> rows;
  int64_t rowElements = 1;
};
std::optional<ScatterRows> scatterRows(const std::vector<int64_t>& xs, const std::vector<int64_t>& indexShape,
                                       const std::vector<int64_t>& tuples, int64_t updateElements,
                                       std::string* why = nullptr);

// Resize's taps, a table per axis (made as the interpreter takes them, ir/ops/TensorShapes.h's resizeTaps), from
// constant scales or the sizes the static shapes `xs` -> `ys` hold; nullopt, with the reason in `why`, for a mode
// other than nearest, linear and cubic, tf_crop_and_resize, or scales not constant. The cpu target's gather and
// the halide target's Resize both start from it.
std::optional<std::vector<ukernels::ResizeAxis>> resizeTables(const Node& n, const std::vector<const Value*>& in,
                                                              const std::vector<int64_t>& xs,
                                                              const std::vector<int64_t>& ys, std::string* why = nullptr);

// The native kernel of a data-movement or per-axis op on f32
// (NativeTensorOps.cpp: Slice, Concat, Pad, Gather, ScatterND, Expand, Tile,
// BatchNormalization, InstanceNormalization, LRN, the Reduce ops and
// GlobalMaxPool, Resize), or nullptr with the reason in `why`.
std::unique_ptr<NativeKernel> matchTensorOp(const Node& node, const std::vector<const Value*>& outer,
                                            std::string* why = nullptr);
// The element offset at which Slice `n`'s result lies, densely, in its input's buffer (its bounds constants,
// every dim it keeps more than one element of read at the input's own stride), or nullopt: where it is, a
// view of that buffer is the result. `in` as matchNative's `outer`.
std::optional<int64_t> contiguousSliceOffset(const Node& n, const std::vector<const Value*>& in);
// BatchNormalization in a convert-layout NHWC region (after a Concat, where
// fold-batchnorm has no conv to fold into): channels innermost, `in` the
// region's operands (x NHWC, then scale, B, mean, var).
std::unique_ptr<NativeKernel> matchBatchNormNhwc(const Node& bn, const std::vector<const Value*>& in,
                                                 std::string* why = nullptr);
// The same for ops on other element types (NativeTypedOps.cpp: Cast,
// CastLike, the comparisons, And/Or/Xor/Not, Where, integer and f64
// arithmetic, Mod, IsNaN, IsInf).
std::unique_ptr<NativeKernel> matchTypedOp(const Node& node, const std::vector<const Value*>& outer,
                                           std::string* why = nullptr);
// The same for the ops that index or scan along an axis, of any element type
// (NativeIndexOps.cpp: ArgMax/ArgMin, TopK, GatherElements, ScatterElements,
// GatherND, CumSum, Trilu, EyeLike).
std::unique_ptr<NativeKernel> matchIndexOp(const Node& node, const std::vector<const Value*>& outer,
                                           std::string* why = nullptr);

// The same for the recurrent layers RNN, GRU and LSTM on f32 (NativeRecurrentOps.cpp).
std::unique_ptr<NativeKernel> matchRecurrentOp(const Node& node, const std::vector<const Value*>& outer,
                                               std::string* why = nullptr);

// The native kernel of `node`, or nullptr with the reason in `why`. `outer`
// are the values feeding node's inputs as the caller sees them (for a node in
// a region body, the region's operands): prepare() packs weights that are
// constants there. Empty `outer`: node.inputs(). `convolutions` false (the
// `ukernels` stage off): Conv is left to the code generator.
std::unique_ptr<NativeKernel> matchNative(const Node& node, std::vector<const Value*> outer = {},
                                          std::string* why = nullptr, bool convolutions = true);

// The native kernel of an epilogue region's anchor: matchNative's, or with
// `ukernels` on, a MatMul or Gemm (into the rows of an activation, by a 2-D
// B) as one SGEMM.
std::unique_ptr<NativeKernel> matchNativeAnchor(const Node& anchor, const std::vector<const Value*>& outer,
                                                bool ukernels);

}  // namespace friction::codegen
