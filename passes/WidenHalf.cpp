// widen-half: f16/bf16 arithmetic on f32 values. Each op that reads half values reads their f32 equals
// instead, and each half result it computed is rounded to its type by ReducePrecision, which is how the
// interpreter computes a half op (in f32, the result rounded) and keeps the op-by-op rounding that ONNX Runtime
// keeps too (it does not drop a Cast pair that narrows and widens again). So the results do not change, while
// the passes after it and the f32 kernels see f32 ops: convolutions with epilogues, layouts, fused regions, the
// rounding fused into them as one more elementwise op. Ops that only select elements (SelectsElements and View
// traits) need no rounding. Graph inputs are widened and outputs narrowed once, so the model's interface keeps
// its types; ops whose half result an attribute fixes (ConstantOfShape, Constant) stay and are widened after.
// Not widened: Casts (simplify-algebra turns a narrowing pair into ReducePrecision) and nodes holding subgraphs
// (their bodies keep their types), which read narrowed copies.
#include <unordered_map>
#include <unordered_set>

#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction {
namespace {

bool isHalfValue(const Value* v) { return v && isHalf(v->dtype()); }

// A node that computes on half values. Casts stay as they are (the kernels convert between any types), and
// simplify-algebra makes a Cast pair that narrows and widens again one ReducePrecision.
bool readsHalf(const Node& n) {
  return !hasRegion(n) && n.op() != "Cast" && n.op() != "CastLike" &&
         std::any_of(n.inputs().begin(), n.inputs().end(), isHalfValue);
}

class Widener {
 public:
  explicit Widener(Graph& g) : g_(g) {}

  int64_t run() {
    std::vector<Node*> nodes;
    for (const auto& n : g_.nodes()) nodes.push_back(n.get());
    for (Node* n : nodes) {
      const size_t mark = g_.nodes().size();
      if (readsHalf(*n)) {
        widen(*n);
        widened_.insert(n);
      } else {
        for (size_t i = 0; i < n->numInputs(); ++i) {  // a Cast, a subgraph holder, or a node of other types
          Value* v = n->input(i);
          n->setInput(i, isHalfValue(v) ? halfOf(v) : mapped(v));
        }
      }
      if (g_.nodes().size() > mark) g_.moveNodesBefore(mark, n);
    }
    if (widened_.empty()) return 0;
    narrowOutputs();
    return int64_t(widened_.size());
  }

 private:
  // `v` where a widened node replaced its producer by one of other results.
  Value* mapped(Value* v) const {
    auto it = replaced_.find(v);
    return it == replaced_.end() ? v : it->second;
  }

  // A Cast of `in` to `to`, or its ReducePrecision to `to` (op names which).
  Value* add(const std::string& op, Value* in, const std::string& name, DType to) {
    Node* n = g_.addNode(op, {in}, {g_.freshName(name)}, {{"to", int64_t(dtypeToOnnxCode(to))}}, g_.freshName(name));
    n->output(0)->setType({op == "Cast" ? to : in->dtype(), in->shape()});
    return n->output(0);
  }

  // An f32 value equal to half value `v`: v's rounded result, a widened constant, or a Cast of v.
  Value* f32Of(Value* v) {
    v = mapped(v);  // a half result the widened node still makes (EyeLike's dtype)
    if (auto it = f32_.find(v); it != f32_.end()) return it->second;
    Value* wide;
    if (auto it = unrounded_.find(v); it != unrounded_.end())
      wide = add("ReducePrecision", it->second, v->name() + "/rounded", v->dtype());
    else if (const Tensor* c = constantData(v))
      wide = g_.addInitializer(g_.freshName(v->name() + "/f32"), c->castTo(DType::F32));
    else
      wide = add("Cast", v, v->name() + "/f32", DType::F32);
    return f32_[v] = wide;
  }

  // A half value equal to `v`: v itself while its producer stays, else its f32 result narrowed.
  Value* halfOf(Value* v) {
    v = mapped(v);
    if (!v->producer() || !widened_.count(v->producer())) return v;
    if (auto it = half_.find(v); it != half_.end()) return it->second;
    auto it = unrounded_.find(v);  // the Cast rounds it as ReducePrecision would
    return half_[v] = add("Cast", it != unrounded_.end() ? it->second : f32Of(v), v->name() + "/half", v->dtype());
  }

  void widen(Node& n) {
    std::vector<Value*> in;
    for (Value* v : n.inputs()) in.push_back(!v ? nullptr : isHalfValue(v) ? f32Of(v) : mapped(v));
    std::vector<std::string> names;
    for (const Value* y : n.outputs()) names.push_back(g_.freshName(y->name() + (isHalfValue(y) ? "/f32" : "")));
    Node* wide = g_.addNode(n.op(), std::move(in), std::move(names), n.attrs(), n.name());
    inferNode(*wide);  // for the result types only: an attribute may fix a half one (EyeLike's dtype)
    const bool selects = hasTrait(n, OpTrait::SelectsElements) || hasTrait(n, OpTrait::View);
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      Value *y = n.output(i), *z = wide->output(i);
      const bool stillHalf = isHalfValue(z);
      z->setType(isHalfValue(y) && !stillHalf ? TensorType{DType::F32, y->shape()} : y->type());
      if (!isHalfValue(y) || stillHalf) replaced_[y] = z;
      else if (selects && sameHalfInputs(n, y->dtype())) f32_[y] = z;  // its elements are rounded already
      else unrounded_[y] = z;
    }
  }

  // Whether every half input of `n` has type `t` (a selected element of one is one of t).
  static bool sameHalfInputs(const Node& n, DType t) {
    return std::all_of(n.inputs().begin(), n.inputs().end(), [&](const Value* v) { return !isHalfValue(v) || v->dtype() == t; });
  }

  // Graph outputs the widened nodes made: narrowed (or taken as replaced), under their old names.
  void narrowOutputs() {
    std::vector<Value*> outs = g_.outputs();
    std::vector<std::pair<Value*, std::string>> renames;
    for (Value*& v : outs) {
      if (!v->producer() || !widened_.count(v->producer())) continue;
      renames.emplace_back(nullptr, v->name());
      v = isHalfValue(v) ? halfOf(v) : mapped(v);
      renames.back().first = v;
    }
    g_.setOutputs(outs);
    g_.eraseNodes([&](const Node& n) { return widened_.count(&n) > 0; });
    const UseIndex uses(g_);
    g_.eraseInitializers([&](const Value* v) { return f32_.count(v) && uses.unused(v); });  // the half weights
    for (auto& [v, name] : renames)  // a value the rewrite made (not an input or initializer it maps to)
      if (v->producer() && !g_.findValue(name)) g_.renameValue(v, name);
  }

  Graph& g_;
  std::unordered_set<const Node*> widened_;
  std::unordered_map<const Value*, Value*> f32_, half_, unrounded_, replaced_;
};

}  // namespace

int64_t widenHalfPrecision(Graph& g) { return Widener(g).run(); }

bool hasHalfArithmetic(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) { return readsHalf(*n); });
}

void widenHalf(Graph& g, PassContext& ctx) { ctx.count("nodes widened", widenHalfPrecision(g)); }

}  // namespace friction
