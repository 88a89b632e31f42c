// fuse-reductions: normalization-like composites become one `Fused` node of
// kind "reduction" each, so codegen emits one kernel (one pass over the
// reduced axis) per composite:
//  - ops with the Normalization trait (Softmax, LogSoftmax,
//    LayerNormalization). A lone op is wrapped
//    too: every reduction kernel then reaches codegen the same way, and the
//    region count says how many reduction kernels the model has;
//  - the decomposed LayerNorm older exporters write: ReduceMean → Sub →
//    Pow(2)|Mul(d,d) → ReduceMean → Add(ε) → Sqrt → Div, then an optional
//    constant Mul (γ) and Add (β);
//  - Erf-GELU that fuse-epilogues did not take.
// Not matched: decomposed Softmax (Exp/ReduceSum/Div), RMSNorm.
#include "ir/OpRegistry.h"
#include "passes/Regions.h"

namespace friction {
namespace {

bool constOperand(const Node* n, const Value* v) {
  return n && n->numInputs() == 2 && (n->input(0) == v || n->input(1) == v) &&
         constantData(n->input(0) == v ? n->input(1) : n->input(0));
}

// The decomposed LayerNorm starting at its first ReduceMean.
std::vector<Node*> matchDecomposedLayerNorm(const UseIndex& u, Node* mean) {
  if (!isOp(mean, "ReduceMean")) return {};
  const Value* x = mean->input(0);
  Node* sub = u.soleUser(mean->output(0));
  if (!isOp(sub, "Sub") || sub->input(0) != x || sub->input(1) != mean->output(0)) return {};
  const Value* d = sub->output(0);
  const auto& ds = u.users(d);
  if (u.isGraphOutput(d)) return {};
  Node* square = nullptr;
  Node* div = nullptr;
  for (Node* n : ds) {
    if (isOp(n, "Div") && n->input(0) == d) div = n;
    else if ((isOp(n, "Pow") && constOperand(n, d)) || (isOp(n, "Mul") && n->input(0) == d && n->input(1) == d))
      square = n;
  }
  size_t squareUses = isOp(square, "Mul") ? 2 : 1;
  if (!square || !div || ds.size() != squareUses + 1) return {};
  Node* var = u.soleUser(square->output(0));
  if (!isOp(var, "ReduceMean")) return {};
  Node* eps = u.soleUser(var->output(0));
  if (!isOp(eps, "Add") || !constOperand(eps, var->output(0))) return {};
  Node* sqrt = u.soleUser(eps->output(0));
  if (!isOp(sqrt, "Sqrt") || u.soleUser(sqrt->output(0)) != div || div->input(1) != sqrt->output(0)) return {};
  std::vector<Node*> r = {mean, sub, square, var, eps, sqrt, div};
  // The affine tail: ·γ then +β, each optional, with constant parameters.
  std::vector<Node*> tail = followSingleUse(u, div, [&](const Node* n, const Value* in) {
    return (isOp(n, "Mul") || isOp(n, "Add")) && constOperand(n, in);
  });
  if (tail.size() > 2) tail.resize(2);
  r.insert(r.end(), tail.begin(), tail.end());
  return r;
}

}  // namespace

void fuseReductions(Graph& g, PassContext& ctx) {
  UseIndex u(g);
  std::vector<std::vector<Node*>> regions;
  std::unordered_set<const Node*> claimed;
  auto add = [&](std::vector<Node*> r) {
    for (Node* n : r)
      if (claimed.count(n)) return;
    claimed.insert(r.begin(), r.end());
    regions.push_back(std::move(r));
  };
  for (const auto& node : g.nodes()) {
    Node* n = node.get();
    if (claimed.count(n)) continue;
    if (hasTrait(*n, OpTrait::Normalization)) add({n});
    if (auto ln = matchDecomposedLayerNorm(u, n); !ln.empty()) add(std::move(ln));
    for (const Value* v : n->outputs())
      if (auto gelu = matchErfGelu(u, v).nodes; !gelu.empty()) add(std::move(gelu));
  }
  for (const Value* v : g.inputs())
    if (auto gelu = matchErfGelu(u, v).nodes; !gelu.empty()) add(std::move(gelu));
  fuseSingleOutputRegions(g, regions, RegionKind::Reduction, ctx);
}

}  // namespace friction
