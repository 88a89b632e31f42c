// fuse-epilogues: a Conv/ConvTranspose/MatMul/Gemm (or a convolution that
// convert-layout made an NHWC region) and the single-use chain after it become
// one `Fused` node of kind "epilogue":
//   anchor [→ bias Add] [→ residual Add] [→ activation] [→ residual Add]
// (one residual Add at most), each step's result possibly rounded to half precision (ReducePrecision). The bias is a constant broadcast along the
// channel axis (1 for NCHW convolutions, last for NHWC ones and MatMul/Gemm); a residual is a
// non-constant operand of the result's own shape; activations are the ops
// with the Activation trait (ir/OpTraits.def), an Erf-GELU or a SiLU (x * sigmoid(x)). Every value inside
// is used inside only, so the region has one output and cannot close a cycle.
#include "ir/OpRegistry.h"
#include "passes/Regions.h"

namespace friction {
namespace {

bool isConvOp(const std::string& op) { return op == "Conv" || op == "ConvTranspose"; }

// A convolution that convert-layout wrapped as an NHWC region: its output is
// channels-last, so its epilogue's bias broadcasts along the last axis.
bool isNhwcConv(const Node& n) {
  auto region = FusedRegion::of(n);
  const Node* op = region ? region->nhwcOp() : nullptr;
  return op && isConvOp(op->op());
}

bool isAnchor(const Node& n) {
  return n.numOutputs() == 1 && (isConvOp(n.op()) || n.op() == "MatMul" || n.op() == "Gemm" || isNhwcConv(n));
}

// The other operand of a binary Add that consumes `x`.
const Value* otherOperand(const Node& add, const Value* x) {
  if (add.op() != "Add" || add.numInputs() != 2) return nullptr;
  return add.input(0) == x ? add.input(1) : add.input(0);
}

// A constant that is 1 everywhere but the channel axis of `x` (right-aligned
// broadcast), i.e. one value per channel or a scalar.
bool isChannelBias(const Value* x, const Value* b, size_t channelAxis) {
  const Tensor* t = constantData(b);
  const Shape& xs = x->shape();
  if (!t || !xs.hasRank() || t->rank() > xs.rank()) return false;
  size_t offset = xs.rank() - t->rank();
  for (size_t i = 0; i < t->rank(); ++i) {
    int64_t d = t->dim(int(i));
    if (d != 1 && !(i + offset == channelAxis && xs[channelAxis] == Dim(d))) return false;
  }
  return true;
}

}  // namespace

void fuseEpilogues(Graph& g, PassContext& ctx) {
  UseIndex u(g);
  std::vector<std::vector<Node*>> regions;
  std::unordered_set<const Node*> claimed;  // a residual Add can follow two anchors
  for (const auto& node : g.nodes()) {
    Node& anchor = *node;
    if (!isAnchor(anchor) || !anchor.output(0)->shape().hasRank()) continue;
    size_t channelAxis = isConvOp(anchor.op()) ? 1 : anchor.output(0)->shape().rank() - 1;
    std::vector<Node*> chain = {&anchor};
    const Value* cur = anchor.output(0);
    auto take = [&](auto accept) {
      Node* next = u.soleUser(cur);
      if (!next || claimed.count(next) || next->numOutputs() != 1 || !accept(*next)) return false;
      chain.push_back(next);
      cur = next->output(0);
      return true;
    };
    auto bias = [&](const Node& n) {
      const Value* b = otherOperand(n, cur);
      return b && isChannelBias(cur, b, channelAxis);
    };
    auto residual = [&](const Node& n) {
      const Value* r = otherOperand(n, cur);
      return r && r != cur && !constantData(r) && n.output(0)->type() == cur->type();
    };
    auto activation = [&] {
      if (take([](const Node& n) { return hasTrait(n, OpTrait::Activation); })) return true;
      std::vector<Node*> pattern = matchErfGelu(u, cur).nodes;
      if (pattern.empty()) pattern = matchSilu(u, cur);
      if (pattern.empty() || claimed.count(pattern.back())) return false;
      chain.insert(chain.end(), pattern.begin(), pattern.end());
      cur = pattern.back()->output(0);  // the pattern's result is its last node
      return true;
    };
    // A result rounded to half precision (widen-half's ReducePrecision) may follow any step.
    auto rounded = [&] { take([](const Node& n) { return n.op() == "ReducePrecision"; }); };
    rounded();
    if (take(bias)) rounded();
    bool residualFirst = take(residual);
    if (residualFirst) rounded();
    if (activation()) rounded();
    if (!residualFirst && take(residual)) rounded();
    if (chain.size() < 2) continue;
    claimed.insert(chain.begin(), chain.end());
    regions.push_back(std::move(chain));
  }
  fuseSingleOutputRegions(g, regions, RegionKind::Epilogue, ctx);
}

}  // namespace friction
