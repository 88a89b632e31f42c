// Post-ops: what oneDNN can apply to a Conv/MatMul/Gemm result before it is
// stored (eltwise activations, binary operands, a folded inference
// BatchNormalization, Erf-GELU), and the epilogue chains that become them.
#pragma once
#include <list>
#include <optional>
#include <unordered_set>
#include <vector>

#include "ir/Uses.h"
#include "vendor_bridge/onednn/Drafts.h"

namespace friction::vendor::onednn {

// The primitive attribute carrying `posts`; binds their operands into `d`.
dnnl::primitive_attr attrWith(const std::vector<Post>& posts, Context& ctx, Draft& d);
// The eltwise post-op of a unary node, when one matches the ONNX op exactly.
std::optional<Post> eltwiseOf(const Node& n, const Scope& sc);
// The binary algorithm of Add/Sub/Mul/Div/Max/Min.
std::optional<algorithm> binaryOf(const std::string& op);
bool commutative(algorithm a);
// An Erf-GELU (ir/Patterns.h) with exactly GELU's constants: its 5 nodes
// (the last produces y), or empty.
std::vector<const Node*> matchGelu(const UseIndex& u, const Scope& sc, const Value* x);
// An inference BatchNormalization with constant parameters after a convolution.
bool isBatchNormAfterConv(const Node& n, const Node& anchor, const Scope& sc);
// The single-use chain after `anchor` that post-ops can express (nodes in
// `taken` belong to another anchor's chain).
std::vector<const Node*> chainAfter(const UseIndex& u, const Scope& sc, const Node& anchor,
                                    const std::unordered_set<const Node*>& taken);

// The post-ops of `chain` after `anchor` (a Conv, MatMul, Gemm or an NHWC conv
// region), in the primitive's logical dst dims (NCHW for an NHWC region). A
// per-channel constant first in a conv's chain becomes the primitive's bias
// instead (extraBias). Throws Unmapped when a node has no post-op. Holds the
// folded constants the posts point to: keep it alive until the primitive is made.
class EpiloguePosts {
 public:
  EpiloguePosts(const Node& anchor, const std::vector<const Node*>& chain, const UseIndex& u, const Scope& sc);
  EpiloguePosts(const EpiloguePosts&) = delete;
  EpiloguePosts& operator=(const EpiloguePosts&) = delete;
  const std::vector<Post>& posts() const { return posts_; }
  const Tensor* extraBias() const { return extraBias_; }

 private:
  std::vector<Post> posts_;
  const Tensor* extraBias_ = nullptr;
  Tensor biasStore_;
  std::list<Tensor> bnStore_;  // folded BatchNormalization factors (copied into post-op memory)
};

}  // namespace friction::vendor::onednn
