// oneDNN primitives for friction nodes: each draft throws Unmapped (or
// dnnl::error) when the node has no exact mapping, so the caller can fall
// back. Weights of Conv, and of MatMul/Gemm with a constant right operand, are
// reordered once, at compile time, to the format the primitive picked with
// format_tag::any; activations stay in plain layouts.
#pragma once
#include <vector>

#include "vendor_bridge/onednn/Drafts.h"

namespace friction::vendor::onednn {

class Drafter {
 public:
  explicit Drafter(Context& ctx) : ctx_(ctx) {}

  // Conv on `src` (logical NC[D]HW dims in layout src.tag) into dst dims/tag.
  // `extraBias` (per output channel) is added as the primitive's bias when the node has none.
  Draft conv(const Node& n, const Scope& sc, Operand src, memory::dims dstDims, Tag dstTag, const std::vector<Post>& posts,
             const Tensor* extraBias = nullptr);

  // MatMul with numpy batch broadcasting (ranks >= 2).
  Draft matmul(const Node& n, const Scope& sc, const std::vector<Post>& posts);

  // Gemm: transposes as strided views; C as the matmul bias (beta folded when C is constant).
  Draft gemm(const Node& n, const Scope& sc, const std::vector<Post>& posts);

  // MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool.
  Draft pool(const Node& n, const Scope& sc, Operand src, memory::dims dstDims, Tag dstTag);

  // BatchNormalization (inference: the given statistics).
  Draft batchnorm(const Node& n, const Scope& sc, Operand src);

  // LayerNormalization over dims [axis, rank): viewed as 2-D {groups, len}.
  Draft layernorm(const Node& n, const Scope& sc);

  // Softmax or LogSoftmax along its axis.
  Draft softmax(const Node& n);

  // The eltwise op of post-op `e` on its own, x -> y.
  Draft eltwise(const Value* x, const Value* y, const Post& e);

  // Transpose as a reorder from a permuted-strides view of the input.
  Draft transpose(const Node& n);

  // Add/Sub/Mul/Div/Max/Min with numpy broadcasting: src1 broadcasts into src0's shape.
  Draft binary(const Node& n, const Scope& sc);

 private:
  Context& ctx_;
};

}  // namespace friction::vendor::onednn
