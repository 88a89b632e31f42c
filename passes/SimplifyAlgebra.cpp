// simplify-algebra: local rewrites, one small function each, applied to a
// fixed point: no-op removal (Identity, inference Dropout, x*1, x+0, Cast,
// Reshape/Expand to the same shape, identity Transpose), chain folding
// (Reshape of a view, Transpose of Transpose, Squeeze/Unsqueeze pairs),
// transposes that only move dims of size 1 as reshapes, float-integer-float
// cast round trips of values already integral and in range (quantize-dequantize),
// float round trips through a wider float, and f32-f16-f32 ones as ReducePrecision.
//
// A rewrite either makes a node's users read another value ("forward"), or
// edits the node in place. Nodes it bypasses are removed at the end, with the
// producers and initializers that only they used. A node whose output is a
// graph output is never forwarded: the output would change its name.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"
#include "passes/Permutation.h"

namespace friction {
namespace {

struct Rewriter {
  Graph& g;
  UseIndex uses;
  std::unordered_set<Node*> touched;  // may have become dead

  // Makes the users of n's output 0 read `with` instead.
  bool forward(Node& n, Value* with) {
    Value* out = n.output(0);
    if (uses.isGraphOutput(out) || with->dtype() != out->dtype()) return false;
    for (size_t i = 1; i < n.numOutputs(); ++i)
      if (!uses.unused(n.output(i))) return false;
    uses.replaceAllUses(out, with);
    touched.insert(&n);
    return true;
  }
  void setInput(Node& n, size_t i, Value* v) {
    if (Node* p = n.input(i) ? n.input(i)->producer() : nullptr) touched.insert(p);
    uses.setInput(n, i, v);
  }
  // Removes touched nodes left without users, then producers and initializers only they used.
  void removeDead() {
    std::unordered_set<const Node*> dead;
    std::unordered_set<const Value*> deadInits;
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      Node& n = **it;
      if (!touched.count(&n) || !uses.unused(n)) continue;
      dead.insert(&n);
      for (size_t i = 0; i < n.numInputs(); ++i) {
        Value* in = n.input(i);
        if (!in) continue;
        uses.setInput(n, i, nullptr);
        if (in->producer()) touched.insert(in->producer());
        if (in->isConstant() && uses.unused(in)) deadInits.insert(in);
      }
    }
    g.eraseNodes([&](const Node& n) { return dead.count(&n) > 0; });
    g.eraseInitializers([&](const Value* v) { return deadInits.count(v) > 0; });
  }
};

Node* producerWithOp(const Value* v, std::initializer_list<const char*> ops) {
  Node* p = v ? v->producer() : nullptr;
  if (!p) return nullptr;
  for (const char* op : ops)
    if (p->op() == op) return p;
  return nullptr;
}

// Every dim known (static or a named symbol) and equal: the op changed nothing.
bool sameKnownShape(const Shape& a, const Shape& b) {
  if (!a.hasRank() || a != b) return false;
  return std::none_of(a.dims().begin(), a.dims().end(), [](const Dim& d) { return d.isUnknown(); });
}

// Broadcasting `c` against `x` leaves x's shape unchanged: c's rank is not
// larger and each of its dims is 1 or provably equal to x's.
bool broadcastKeepsShape(const Shape& x, const std::vector<int64_t>& c) {
  if (!x.hasRank() || c.size() > x.rank()) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    const Dim& d = x[x.rank() - c.size() + i];
    if (c[i] != 1 && !(d.isStatic() && d.value == c[i])) return false;
  }
  return true;
}

// Input `k` of n is a constant of all `neutral` that leaves input `1-k` unchanged.
bool isNeutralOperand(const Node& n, size_t k, double neutral) {
  const Tensor* c = constantData(n.input(k));
  const Value* x = n.input(1 - k);
  return c && x && c->dtype() == x->dtype() && isSplat(*c, neutral) && broadcastKeepsShape(x->shape(), c->shape());
}

// Axes normalized against `rank` and sorted; nullopt when unknown.
std::optional<std::vector<int64_t>> normalizedAxes(const Value* axes, int64_t rank) {
  auto a = staticInts(axes);
  if (!a) return std::nullopt;
  for (int64_t& x : *a) {
    if (x < -rank || x >= rank) return std::nullopt;
    if (x < 0) x += rank;
  }
  std::sort(a->begin(), a->end());
  return a;
}

// --- Rewrites: each returns true when it changed the graph. ---

bool removeIdentity(Rewriter& rw, Node& n) { return n.op() == "Identity" && rw.forward(n, n.input(0)); }

// Inference Dropout passes its input through (when the mask is unused).
bool removeDropout(Rewriter& rw, Node& n) {
  if (n.op() != "Dropout") return false;
  if (n.input(2)) {
    const Tensor* training = constantData(n.input(2));
    const Tensor* ratio = constantData(n.input(1));
    bool inference = training && isSplat(*training, 0);
    bool zeroRatio = ratio && isSplat(*ratio, 0);
    if (!inference && !zeroRatio) return false;
  }
  return rw.forward(n, n.input(0));
}

// x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1.
bool removeNeutralArithmetic(Rewriter& rw, Node& n) {
  const std::string& op = n.op();
  bool commutes = hasTrait(n, OpTrait::Commutative);
  double neutral = op == "Add" || op == "Sub" ? 0 : 1;
  if (!commutes && op != "Sub" && op != "Div") return false;
  if (isNeutralOperand(n, 1, neutral)) return rw.forward(n, n.input(0));
  if (commutes && isNeutralOperand(n, 0, neutral)) return rw.forward(n, n.input(1));
  return false;
}

bool removeSameTypeCast(Rewriter& rw, Node& n) {
  return n.op() == "Cast" && n.input(0)->dtype() == n.output(0)->dtype() && rw.forward(n, n.input(0));
}

bool removeSameShapeReshape(Rewriter& rw, Node& n) {
  return hasTrait(n, OpTrait::View) &&
         sameKnownShape(n.input(0)->shape(), n.output(0)->shape()) && rw.forward(n, n.input(0));
}

bool removeSameShapeExpand(Rewriter& rw, Node& n) {
  return n.op() == "Expand" && sameKnownShape(n.input(0)->shape(), n.output(0)->shape()) &&
         rw.forward(n, n.input(0));
}

// Reshape(V(x), s) -> Reshape(x, s) for a View op V (Reshape, Flatten,
// Squeeze, ...): a reshape only reads the element order, which views keep.
// Not when s may hold a 0 (without allowzero a 0 copies a dim of the
// intermediate shape).
bool foldReshapeOfView(Rewriter& rw, Node& n) {
  if (n.op() != "Reshape") return false;
  Node* view = n.input(0)->producer();
  if (!view || !hasTrait(*view, OpTrait::View)) return false;
  if (n.attrInt("allowzero", 0) == 0) {
    auto target = staticInts(n.input(1));
    if (!target || std::count(target->begin(), target->end(), 0)) return false;
  }
  rw.setInput(n, 0, view->input(0));
  reinferNode(n);
  return true;
}

// Transpose(Transpose(x, p1), p2) = Transpose(x, p) with p[i] = p1[p2[i]].
bool composeTransposes(Rewriter& rw, Node& n) {
  if (n.op() != "Transpose") return false;
  Node* inner = producerWithOp(n.input(0), {"Transpose"});
  if (!inner || !inner->input(0)->shape().hasRank()) return false;
  size_t rank = inner->input(0)->shape().rank();
  Perm p1 = permOf(*inner, rank), p2 = permOf(n, rank);
  if (p1.size() != rank || p2.size() != rank) return false;
  rw.setInput(n, 0, inner->input(0));
  n.setAttr("perm", composePerms(p1, p2));
  reinferNode(n);
  return true;
}

bool removeIdentityTranspose(Rewriter& rw, Node& n) {
  if (n.op() != "Transpose" || !n.input(0)->shape().hasRank()) return false;
  return isIdentityPerm(permOf(n, n.input(0)->shape().rank())) && rw.forward(n, n.input(0));
}

// A Transpose that moves only dims of size 1 keeps the memory order: it is a
// Reshape (a view in the backends), e.g. [N,C,1,1] -> [N,1,1,C] before a head.
bool transposeOfUnitDimsAsReshape(Rewriter& rw, Node& n) {
  if (!isReshapingTranspose(n) || isIdentityPerm(permOf(n, n.input(0)->shape().rank()))) return false;
  Value* shape = rw.g.addInitializer(rw.g.freshName(n.output(0)->name() + ".shape"),
                                     Tensor::vectorI64(n.output(0)->shape().staticDims()));
  n.setOp("Reshape");
  n.removeAttr("perm");
  n.setInputs({n.input(0), nullptr});
  rw.uses.setInput(n, 1, shape);
  return true;
}

// True when every element of `v` is an integer: a constant of integers (small enough to scan), the result of
// Round/Floor/Ceil or of a Cast from an integer type, or arithmetic of such values that stays integral.
bool integralValued(const Value* v, int depth = 0) {
  constexpr int64_t kScanElements = 4096;
  if (!v || depth > 16) return false;
  if (const Tensor* c = constantData(v)) {
    if (!isFloat(c->dtype())) return true;
    if (c->numel() > kScanElements) return false;
    for (int64_t i = 0; i < c->numel(); ++i)
      if (double e = c->elementAsDouble(i); !std::isfinite(e) || e != std::floor(e)) return false;
    return true;
  }
  const Node* p = v->producer();
  if (!p) return false;
  const std::string& op = p->op();
  if (op == "Round" || op == "Floor" || op == "Ceil") return true;
  if (op == "Cast") return !isFloat(p->input(0)->dtype());
  if (op != "Add" && op != "Sub" && op != "Mul" && op != "Max" && op != "Min" && op != "Neg" && op != "Abs" &&
      op != "Relu" && op != "Clip")
    return false;
  return std::all_of(p->inputs().begin(), p->inputs().end(),
                     [&](const Value* in) { return !in || integralValued(in, depth + 1); });
}

// Cast(Cast(x, I), T) -> x for an x of type T whose elements are integers inside integer type I's range, which a
// Clip to constant bounds within that range says: a quantize-dequantize pair's round trip (Clip(Round(x / s) + z,
// lo, hi) to int8 and back), which then fuses as f32 arithmetic. (A NaN element would have become 0 by the
// casts; quantized activations hold none.)
bool removeIntegerRoundTrip(Rewriter& rw, Node& n) {
  if (n.op() != "Cast") return false;
  Node* narrow = producerWithOp(n.input(0), {"Cast"});
  if (!narrow || !isInteger(narrow->output(0)->dtype())) return false;
  Value* x = narrow->input(0);
  const Node* clip = producerWithOp(x, {"Clip"});
  if (x->dtype() != n.output(0)->dtype() || !clip || !integralValued(x)) return false;
  const Tensor *lo = constantData(clip->input(1)), *hi = constantData(clip->input(2));
  if (!lo || !hi || lo->numel() != 1 || hi->numel() != 1) return false;
  const Tensor range = Tensor::fromVector<double>(DType::F64, {2}, {lo->elementAsDouble(0), hi->elementAsDouble(0)});
  const Tensor inType = range.castTo(narrow->output(0)->dtype());  // saturated to I's range: unchanged if inside
  return inType.elementAsDouble(0) == range.elementAsDouble(0) && inType.elementAsDouble(1) == range.elementAsDouble(1) &&
         rw.forward(n, x);
}

// Float types by precision: each holds every value of a lower rank (f16 and bf16 hold neither's).
int floatRank(DType t) { return isHalf(t) ? 1 : t == DType::F32 ? 2 : t == DType::F64 ? 3 : 0; }

// Cast(Cast(x, W), T) -> x for a float x of type T that the wider float type W holds exactly.
bool removeWideningRoundTrip(Rewriter& rw, Node& n) {
  Node* wide = n.op() == "Cast" ? producerWithOp(n.input(0), {"Cast"}) : nullptr;
  if (!wide) return false;
  Value* x = wide->input(0);
  const int from = floatRank(x->dtype());
  return from > 0 && floatRank(wide->output(0)->dtype()) > from && x->dtype() == n.output(0)->dtype() &&
         rw.forward(n, x);
}

// Cast(Cast(x, H), f32) -> ReducePrecision(x, H) for an f32 x and a half type H: the rounding in one op that
// fuses and stays f32 (what widen-half leaves where a model casts to f16 itself).
bool narrowingRoundTripAsReducePrecision(Rewriter& rw, Node& n) {
  Node* narrow = n.op() == "Cast" ? producerWithOp(n.input(0), {"Cast"}) : nullptr;
  if (!narrow || !isHalf(narrow->output(0)->dtype())) return false;
  Value* x = narrow->input(0);
  if (x->dtype() != DType::F32 || n.output(0)->dtype() != DType::F32) return false;
  n.setOp("ReducePrecision");
  n.removeAttr("saturate");
  n.setAttr("to", int64_t(dtypeToOnnxCode(narrow->output(0)->dtype())));
  rw.setInput(n, 0, x);
  return true;
}

// Unsqueeze(Squeeze(x, a), a) and Squeeze(Unsqueeze(x, a), a) give back x.
bool cancelSqueezeUnsqueeze(Rewriter& rw, Node& n) {
  bool unsqueeze = n.op() == "Unsqueeze";
  if (!unsqueeze && n.op() != "Squeeze") return false;
  Node* inner = producerWithOp(n.input(0), {unsqueeze ? "Squeeze" : "Unsqueeze"});
  if (!inner || !inner->input(1) || !n.input(1)) return false;
  // Both axis lists refer to the rank of the larger tensor: x's for
  // Squeeze-then-Unsqueeze, the Unsqueeze output's otherwise.
  const Shape& big = unsqueeze ? inner->input(0)->shape() : inner->output(0)->shape();
  if (!big.hasRank()) return false;
  auto a = normalizedAxes(inner->input(1), int64_t(big.rank()));
  auto b = normalizedAxes(n.input(1), int64_t(big.rank()));
  return a && b && *a == *b && rw.forward(n, inner->input(0));
}

struct Rewrite {
  const char* stat;
  bool (*apply)(Rewriter&, Node&);
};

const Rewrite kRewrites[] = {
    {"identities removed", removeIdentity},
    {"dropouts removed", removeDropout},
    {"neutral arithmetic removed", removeNeutralArithmetic},
    {"casts removed", removeSameTypeCast},
    {"reshapes removed", removeSameShapeReshape},
    {"expands removed", removeSameShapeExpand},
    {"reshapes folded", foldReshapeOfView},
    {"transposes composed", composeTransposes},
    {"transposes removed", removeIdentityTranspose},
    {"transposes of unit dims made reshapes", transposeOfUnitDimsAsReshape},
    {"squeeze pairs cancelled", cancelSqueezeUnsqueeze},
    {"integer cast round trips removed", removeIntegerRoundTrip},
    {"float round trips through a wider type removed", removeWideningRoundTrip},
    {"narrowing cast round trips made ReducePrecision", narrowingRoundTripAsReducePrecision},
};

}  // namespace

void simplifyAlgebra(Graph& g, PassContext& ctx) {
  Rewriter rw{g, UseIndex(g), {}};
  // Each rewrite removes a node or shortens a chain, so this terminates; the
  // bound is a guard against a rewrite that would not.
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    for (const auto& up : g.nodes()) {
      Node& n = *up;
      for (const Rewrite& r : kRewrites) {
        if (rw.uses.unused(n)) break;  // dead or bypassed
        if (r.apply(rw, n)) {
          ctx.count(r.stat);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  rw.removeDead();
}

}  // namespace friction
