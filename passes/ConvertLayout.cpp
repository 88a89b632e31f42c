// convert-layout: takes CNNs to NHWC. Ops with the LayoutSensitive trait
// (Conv, MaxPool, AveragePool, BatchNormalization, GlobalAveragePool: NCHW
// by ONNX definition, with NHWC kernels in friction) become, when 4-D,
//     Transpose(to NHWC) -> Fused{kind "nhwc"} -> Transpose(to NCHW)
// where the Fused body is Transpose(to NCHW) -> op -> Transpose(to NHWC): the
// region's input and output are NHWC, which codegen lowers to an NHWC kernel
// (the interpreter runs the body as is). Weights stay OIHW, as body inputs.
//
// Then transposes sink and cancel. The to-NCHW transposes (inserted by this
// pass or the model's own, as in ConvNeXt) are "layout transposes", and so is
// every transpose made by moving or composing one; only those sink, so a model's own transposes (attention
// heads, window partitions) stay where the model put them unless a layout
// transpose reaches them. With T = Transpose(., p):
//  - T(T(x, p), q) is one Transpose(x, p∘q), gone when that is the identity;
//    at the end, a transpose that only moves dims of size 1 becomes a Reshape (a view);
//  - an Elementwise op whose layout-transposed inputs share p, the others
//    constants (permuted to match) or values whose un-transposed form is a
//    reshape ([N,C,1,1]: a squeeze-excite scale): E(T(a), T(b)) = T(E(a, b));
//  - Concat and Split along axis p[axis], Slice with its axes mapped through
//    p, Pad with its pads reordered, a Reduction over the mapped axes
//    (without keepdims the perm drops the reduced dims), Resize with its
//    scales, sizes and roi reordered where the transpose then cancels;
//  - a View op (Reshape, Flatten, Squeeze, Unsqueeze) that splits and merges
//    groups of dims: T(x, p) -> Reshape becomes [Transpose(x, b) ->] Reshape
//    -> Transpose(a) (reshapeThroughTranspose), so ShuffleNet's channel
//    shuffle ends as one channels-last transpose and Swin's or MaxViT's window
//    partition as the model's own transpose alone. The same rule moves a
//    model's transpose below a reshape when every reader of the reshape is a
//    transpose that it then composes with (MaxViT's window reverse meets the
//    to-NHWC transpose of the next conv).
// Anything else (MatMul, Gather, Softmax, ...) stops the sinking, so the
// transposes left are at the graph boundary, the model's own, and before such
// ops. Stats: "ops converted", "transposes inserted", "transposes cancelled"
// (Transpose nodes that disappeared, original ones included), "transposes
// left" (top-level Transpose nodes at the end).
#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_set>

#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"
#include "passes/Permutation.h"
#include "runtime/interp/kernels/DataMovement.h"

namespace friction {
namespace {

const Perm kToNhwc = {0, 2, 3, 1};
const Perm kToNchw = {0, 3, 1, 2};

bool layoutSensitive(const Node& n) {
  if (!hasTrait(n, OpTrait::LayoutSensitive) || n.numOutputs() != 1 || !n.input(0)) return false;
  const Shape& s = n.input(0)->shape();
  return s.hasRank() && s.rank() == 4;
}

Node* transposeNode(const Value* v) {
  Node* p = v ? v->producer() : nullptr;
  return p && p->op() == "Transpose" && v->shape().hasRank() ? p : nullptr;
}

// True when `v` is a single element (broadcasts the same in any layout).
bool singleElement(const Value* v) {
  const Shape& s = v->shape();
  if (!s.hasRank()) return false;
  for (const Dim& d : s.dims())
    if (!(d.isStatic() && d.value == 1)) return false;
  return true;
}

// `c` right-aligned to p's rank and permuted so that Transpose(result, p) == c.
Tensor permuteConstant(const Tensor& c, const Perm& p) {
  std::vector<int64_t> dims(p.size() - c.rank(), 1);
  dims.insert(dims.end(), c.shape().begin(), c.shape().end());
  return interp::transposeTensor(c.reshaped(dims), invertPerm(p));
}

int64_t normalizedAxis(int64_t axis, size_t rank) { return axis < 0 ? axis + int64_t(rank) : axis; }

// Axes through the perm: an op on Transpose(x, p) along axis a is the op on x along p[a].
std::vector<int64_t> mapAxes(const std::vector<int64_t>& axes, const Perm& p) {
  std::vector<int64_t> r;
  for (int64_t a : axes) r.push_back(p[size_t(normalizedAxis(a, p.size()))]);
  return r;
}

// How a node computes on its inputs before the transpose: the replacement's
// op, inputs and attributes, and the perm each of its outputs is transposed back with.
struct Sunk {
  std::string op;
  std::vector<Value*> inputs;
  std::map<std::string, Attribute> attrs;
  std::vector<Perm> outputPerms;
};

class Converter {
 public:
  Converter(Graph& g, PassContext& ctx) : g_(g), ctx_(ctx) {}

  void run() {
    int64_t before = countTransposes();
    for (size_t i = 0, n = g_.nodes().size(); i < n; ++i) {
      Node* node = g_.nodes()[i].get();
      if (layoutSensitive(*node)) wrap(*node);
    }
    cleanup();
    for (const auto& n : g_.nodes())  // the model's own channels-last to NCHW transposes (ConvNeXt, Swin)
      if (n->op() == "Transpose" && n->input(0)->shape().hasRank() && permOf(*n, n->input(0)->shape().rank()) == kToNchw)
        layout_.insert(n.get());
    // Every step moves a transpose down or removes one; the bound guards against a rule that would not.
    for (int sweep = 0; sweep < 256; ++sweep) {
      bool changed = false;
      // Nodes appended during the sweep are visited in the same sweep.
      for (size_t i = 0; i < g_.nodes().size(); ++i) {
        Node* n = g_.nodes()[i].get();
        if (dead_.count(n)) continue;
        changed |= n->op() == "Transpose" ? simplify(*n) : sink(*n);
      }
      cleanup();
      if (!changed) break;
    }
    reshapeUnitTransposes();
    int64_t left = countTransposes();
    ctx_.count("transposes cancelled", before + inserted_ - left);
    ctx_.count("transposes left", left);
    ctx_.count("transposes inserted", inserted_);
    ctx_.stats.try_emplace("ops converted", 0);
  }

 private:
  int64_t countTransposes() const {
    int64_t k = 0;
    for (const auto& n : g_.nodes()) k += n->op() == "Transpose";
    return k;
  }

  Node* addTranspose(Value* x, const Perm& perm, const std::string& hint, bool layout) {
    Node* t = g_.addNode("Transpose", {x}, {g_.freshName(hint)}, {{"perm", perm}});
    inferNode(*t);
    if (layout) layout_.insert(t);
    return t;
  }

  // A new initializer; one a rule made before it gave up is dropped by the next cleanup.
  Value* constant(const std::string& hint, Tensor t) {
    Value* c = g_.addInitializer(g_.freshName(hint), std::move(t));
    freed_.insert(c);
    return c;
  }

  // The perm of `v` when a layout transpose produces it.
  std::optional<Perm> layoutPerm(const Value* v) const {
    Node* t = transposeNode(v);
    if (!t || !layout_.count(t)) return std::nullopt;
    return permOf(*t, v->shape().rank());
  }

  void wrap(Node& n) {
    Value* y = n.output(0);
    Node* in = addTranspose(n.input(0), kToNhwc, n.input(0)->name() + ".nhwc", false);
    auto body = std::make_shared<Graph>(n.name().empty() ? "nhwc" : n.name() + ".nhwc");
    body->setOpset(g_.opset());
    Value* xh = body->addInput("x", in->output(0)->type());
    Node* toNchw = body->addNode("Transpose", {xh}, {"x_nchw"}, {{"perm", kToNchw}});
    inferNode(*toNchw);
    std::vector<Value*> bodyIns = {toNchw->output(0)}, nodeIns = {in->output(0)};
    for (size_t i = 1; i < n.numInputs(); ++i) {
      Value* v = n.input(i);
      if (!v) {
        bodyIns.push_back(nullptr);  // region inputs cannot be absent: keep it absent inside
        continue;
      }
      bodyIns.push_back(body->addInput("in" + std::to_string(i), v->type()));
      nodeIns.push_back(v);
    }
    Node* op = body->addNode(n.op(), bodyIns, {"y"}, n.attrs(), n.name());
    inferNode(*op);
    Node* toNhwc = body->addNode("Transpose", {op->output(0)}, {"y_nhwc"}, {{"perm", kToNhwc}});
    inferNode(*toNhwc);
    body->addOutput(toNhwc->output(0));
    Node* f = g_.addNode("Fused", nodeIns, {g_.freshName(y->name() + ".nhwc")},
                         fusedAttrs(body, RegionKind::Nhwc, {n.name()}), n.name());
    inferNode(*f);
    Node* out = addTranspose(f->output(0), kToNchw, y->name() + ".nchw", true);
    replaceAllUses(g_, y, out->output(0));
    dead_.insert(&n);
    inserted_ += 2;
    ctx_.count("ops converted");
  }

  void replace(Node& n, Value* with) {
    replaceAllUses(g_, n.output(0), with);
    dead_.insert(&n);
  }

  // Composes a transpose of a transpose into one.
  bool simplify(Node& n) {
    Value* x = n.input(0);
    const size_t rank = x->shape().hasRank() ? x->shape().rank() : 0;
    Perm q = permOf(n, rank);
    if (q.size() != rank) return false;
    if (Node* inner = transposeNode(x)) {
      Perm p = permOf(*inner, rank);
      if (p.size() != rank) return false;
      Perm composed = composePerms(p, q);
      if (isIdentityPerm(composed)) {
        replace(n, inner->input(0));
        return true;
      }
      n.setInput(0, inner->input(0));
      n.setAttr("perm", composed);
      freed_.insert(x);
      if (layout_.count(inner)) layout_.insert(&n);
      return true;
    }
    return false;
  }

  // Transposes that only move dims of size 1 become Reshapes, once nothing sinks any more (a
  // [N,C,1,1] to-NCHW transpose stays a layout transpose until then, to meet the others of its perm).
  void reshapeUnitTransposes() {
    for (size_t i = 0; i < g_.nodes().size(); ++i) {
      Node& n = *g_.nodes()[i];
      if (isReshapingTranspose(n)) replace(n, reshape(n.input(0), n.output(0)->shape().staticDims(), n.output(0)->name()));
    }
    cleanup();
  }

  // Reshape(x, dims), reading through a view that produces x; dropped by the next cleanup when a rule that
  // made it gave up.
  Value* reshape(Value* x, const std::vector<int64_t>& dims, const std::string& hint) {
    if (Node* v = x->producer(); v && hasTrait(*v, OpTrait::View)) x = v->input(0);
    Node* r = g_.addNode("Reshape", {x, constant(hint + ".shape", Tensor::vectorI64(dims))}, {g_.freshName(hint)});
    inferNode(*r);
    freed_.insert(r->output(0));
    return r->output(0);
  }

  // Moves the transposes of n's inputs to its outputs when a rule below applies.
  bool sink(Node& n) {
    std::optional<Perm> p;
    for (const Value* in : n.inputs())
      if (auto q = layoutPerm(in)) {
        if (p && *p != *q) return false;
        p = q;
      }
    const bool layout = p.has_value();
    if (!p && hasTrait(n, OpTrait::View) && transposeNode(n.input(0))) {
      // A model's own transpose moves below a reshape only when what comes out below is a to-NCHW
      // transpose (a layout transpose from then on) or is read by transposes only (it composes with them).
      Perm own = permOf(*n.input(0)->producer(), n.input(0)->shape().rank());
      auto f = viewFactors(n, own);
      if (f && (f->a == kToNchw || reachesTransposes(n.output(0), 0))) p = own;
    }
    if (!p) return false;
    std::optional<Sunk> s = hasTrait(n, OpTrait::Elementwise) ? elementwise(n, *p)
                            : hasTrait(n, OpTrait::Reduction) ? reduction(n, *p)
                            : hasTrait(n, OpTrait::View)      ? view(n, *p)
                            : n.op() == "Concat"              ? concat(n, *p)
                            : n.op() == "Split"               ? split(n, *p)
                            : n.op() == "Slice"               ? slice(n, *p)
                            : n.op() == "Pad"                 ? pad(n, *p)
                            : n.op() == "Resize"              ? resize(n, *p)
                                                              : std::nullopt;
    if (!s) return false;
    std::vector<std::string> names;
    for (const Value* out : n.outputs()) names.push_back(g_.freshName(out->name() + ".t"));
    Node* e = g_.addNode(s->op, s->inputs, names, s->attrs, n.name());
    inferNode(*e);
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      Value* out = e->output(i);
      if (!isIdentityPerm(s->outputPerms[i])) {
        const Perm& perm = s->outputPerms[i];
        out = addTranspose(out, perm, n.output(i)->name() + ".t", layout || perm == kToNchw)->output(0);
        inserted_++;
      }
      replaceAllUses(g_, n.output(i), out);
    }
    dead_.insert(&n);
    return true;
  }

  // n's input 0 when it is transposed by p, else nullptr.
  Value* untransposed(const Node& n, const Perm& p) const {
    Node* t = transposeNode(n.input(0));
    return t && permOf(*t, p.size()) == p ? t->input(0) : nullptr;
  }

  Sunk like(const Node& n, const Perm& p) const { return {n.op(), {}, n.attrs(), std::vector<Perm>(n.numOutputs(), p)}; }

  // The same op on the un-transposed data (input 0), its other inputs as they are; nullopt when input 0 is
  // not transposed by p.
  std::optional<Sunk> onUntransposedData(const Node& n, const Perm& p) const {
    Value* x = untransposed(n, p);
    if (!x) return std::nullopt;
    Sunk s = like(n, p);
    s.inputs = n.inputs();
    s.inputs[0] = x;
    return s;
  }

  // The op's `axis` attribute mapped through p.
  static int64_t mappedAxis(const Node& n, const Perm& p) {
    return p[size_t(normalizedAxis(n.attrInt("axis", 0), p.size()))];
  }

  // E(T(a), T(b), c) = T(E(a, b, c')): c' a permuted constant or a single element.
  std::optional<Sunk> elementwise(const Node& n, const Perm& p) {
    if (n.numOutputs() != 1 || !n.output(0)->shape().hasRank() || n.output(0)->shape().rank() != p.size())
      return std::nullopt;
    Sunk s = like(n, p);
    for (Value* in : n.inputs()) {
      if (layoutPerm(in)) {
        // Unwrapped even when it is a single element ([1,1,1,1]): kept, the new node would sink again, forever.
        s.inputs.push_back(in->producer()->input(0));
      } else if (!in || singleElement(in)) {
        s.inputs.push_back(in);
      } else if (const Tensor* c = constantData(in); c && c->rank() <= p.size()) {
        s.inputs.push_back(constant(in->name() + ".t", permuteConstant(*c, p)));
      } else if (auto dims = untransposedDims(in, p)) {
        s.inputs.push_back(reshape(in, *dims, in->name() + ".t"));  // e.g. a [N,C,1,1] squeeze-excite scale
      } else {
        return std::nullopt;
      }
    }
    return s;
  }

  // The dims of x with Transpose(x, p) == v (v right-aligned to p's rank) when
  // that transpose keeps the memory order, so x is a reshape of v.
  static std::optional<std::vector<int64_t>> untransposedDims(const Value* v, const Perm& p) {
    if (!v->shape().isStatic() || v->shape().rank() > p.size()) return std::nullopt;
    std::vector<int64_t> aligned(p.size() - v->shape().rank(), 1), dims(p.size());
    for (int64_t d : v->shape().staticDims()) aligned.push_back(d);
    for (size_t i = 0; i < p.size(); ++i) dims[size_t(p[i])] = aligned[i];
    if (!keepsMemoryOrder(dims, p)) return std::nullopt;
    return dims;
  }

  std::optional<Sunk> concat(const Node& n, const Perm& p) {
    Sunk s = like(n, p);
    s.attrs["axis"] = mappedAxis(n, p);
    for (Value* in : n.inputs()) {
      if (layoutPerm(in)) {
        s.inputs.push_back(in->producer()->input(0));
      } else if (const Tensor* c = constantData(in); c && c->rank() == p.size()) {
        s.inputs.push_back(constant(in->name() + ".t", permuteConstant(*c, p)));
      } else {
        return std::nullopt;
      }
    }
    return s;
  }

  std::optional<Sunk> split(const Node& n, const Perm& p) {
    std::optional<Sunk> s = onUntransposedData(n, p);
    if (s) s->attrs["axis"] = mappedAxis(n, p);
    return s;
  }

  // Slice's axes: an attribute before opset 10, then input 3 (default: the first len(starts) axes).
  std::optional<Sunk> slice(const Node& n, const Perm& p) {
    std::optional<Sunk> s = onUntransposedData(n, p);
    if (!s) return std::nullopt;
    if (n.numInputs() == 1) {
      std::vector<int64_t> axes = n.attrInts("axes");
      if (axes.empty()) axes.resize(n.attrInts("starts").size()), std::iota(axes.begin(), axes.end(), 0);
      s->attrs["axes"] = mapAxes(axes, p);
      return s;
    }
    auto starts = staticInts(n.input(1));
    if (!starts) return std::nullopt;
    std::vector<int64_t> axes(starts->size());
    std::iota(axes.begin(), axes.end(), 0);
    if (n.numInputs() > 3 && n.input(3)) {
      auto given = staticInts(n.input(3));
      if (!given) return std::nullopt;
      axes = *given;
    }
    s->inputs.resize(std::max<size_t>(s->inputs.size(), 4));
    s->inputs[3] = constant(n.output(0)->name() + ".axes", Tensor::vectorI64(mapAxes(axes, p)));
    return s;
  }

  // Pad of y = T(x, p) pads y's dim i, which is x's dim p[i].
  std::optional<Sunk> pad(const Node& n, const Perm& p) {
    std::optional<Sunk> s = onUntransposedData(n, p);
    const size_t r = p.size();
    if (!s || (n.numInputs() > 3 && n.input(3))) return std::nullopt;  // explicit axes: not handled
    const bool asInput = n.numInputs() > 1;
    auto pads = asInput ? staticInts(n.input(1)) : std::optional(n.attrInts("pads"));
    if (!pads || pads->size() != 2 * r) return std::nullopt;
    std::vector<int64_t> mapped(2 * r);
    for (size_t i = 0; i < r; ++i) {
      mapped[size_t(p[i])] = (*pads)[i];
      mapped[r + size_t(p[i])] = (*pads)[r + i];
    }
    if (asInput) s->inputs[1] = constant(n.output(0)->name() + ".pads", Tensor::vectorI64(mapped));
    else s->attrs["pads"] = mapped;
    return s;
  }

  // Resize of y = T(x, p) resizes y's dim i, which is x's dim p[i]: roi, scales and sizes reordered. Only where
  // the transpose then goes on to cancel (what reads the result are transposes, or ops through which it sinks
  // into them: a U-Net's upsampling, then the Concat with the skip, then a conv): a segmentation head's last
  // upsampling, read by the graph's output, would move the transpose onto a tensor many times larger.
  std::optional<Sunk> resize(const Node& n, const Perm& p) {
    if (!reachesTransposes(n.output(0), 2)) return std::nullopt;
    std::optional<Sunk> s = onUntransposedData(n, p);
    if (!s) return std::nullopt;
    const size_t r = p.size();
    for (size_t i = 1; i < n.numInputs() && i <= 3; ++i) {
      if (!n.input(i)) continue;
      const Tensor* t = constantData(n.input(i));
      if (!t) return std::nullopt;  // computed at run time
      if (t->numel() == 0) continue;
      const size_t halves = i == 1 ? 2 : 1;  // roi: the starts, then the ends
      if (size_t(t->numel()) != halves * r) return std::nullopt;
      std::vector<double> v = t->toDoubleVector(), mapped(v.size());
      for (size_t h = 0; h < halves; ++h)
        for (size_t d = 0; d < r; ++d) mapped[h * r + size_t(p[d])] = v[h * r + d];
      s->inputs[i] = constant(n.output(0)->name() + ".resize" + std::to_string(i),
                              Tensor::fromVector<double>(DType::F64, {int64_t(mapped.size())}, mapped).castTo(t->dtype()));
    }
    return s;
  }

  // Whether every reader of v is a Transpose, or (up to `depth` ops down) an op that transposes sink through
  // whose results are read so.
  bool reachesTransposes(const Value* v, int depth) const {
    for (const Value* out : g_.outputs())
      if (out == v) return false;
    bool any = false;
    for (const auto& reader : g_.nodes()) {
      if (dead_.count(reader.get()) || std::find(reader->inputs().begin(), reader->inputs().end(), v) == reader->inputs().end())
        continue;
      any = true;
      if (reader->op() == "Transpose") continue;
      const bool sinks = hasTrait(*reader, OpTrait::Elementwise) || reader->op() == "Concat" || reader->op() == "Resize";
      if (!sinks || depth == 0) return false;
      for (const Value* out : reader->outputs())
        if (!reachesTransposes(out, depth - 1)) return false;
    }
    return any;
  }

  // Reduce over y = T(x, p)'s axes A = reduce over x's axes p[A]; without
  // keepdims the output's perm is p without the reduced dims, renumbered.
  std::optional<Sunk> reduction(const Node& n, const Perm& p) {
    std::optional<Sunk> s = onUntransposedData(n, p);
    if (!s) return std::nullopt;
    const bool asInput = !n.attrs().count("axes") && n.numInputs() > 1 && n.input(1);
    std::optional<std::vector<int64_t>> axes = asInput ? staticInts(n.input(1)) : std::optional(n.attrInts("axes"));
    if (!axes || (axes->empty() && n.attrInt("noop_with_empty_axes", 0))) return std::nullopt;
    const size_t r = p.size();
    if (axes->empty()) axes->resize(r), std::iota(axes->begin(), axes->end(), 0);
    std::vector<int64_t> mapped = mapAxes(*axes, p);
    std::sort(mapped.begin(), mapped.end());
    if (asInput) s->inputs[1] = constant(n.output(0)->name() + ".axes", Tensor::vectorI64(mapped));
    else s->attrs["axes"] = mapped;
    if (!n.attrInt("keepdims", 1)) {
      std::vector<bool> reduced(r, false);
      for (int64_t a : mapped) reduced[size_t(a)] = true;
      std::vector<int64_t> rank(r, 0);  // x's dim d -> its index among the kept dims
      for (size_t d = 0, k = 0; d < r; ++d)
        if (!reduced[d]) rank[d] = int64_t(k++);
      Perm kept;
      for (int64_t d : p)
        if (!reduced[size_t(d)]) kept.push_back(rank[size_t(d)]);
      s->outputPerms = {kept};
    }
    return s;
  }

  // How Reshape(Transpose(x, p)) splits into transposes above and below (nullopt: it would not move).
  std::optional<TransposedReshape> viewFactors(const Node& n, const Perm& p) const {
    Value* x = untransposed(n, p);
    if (!x || !x->shape().isStatic() || !n.output(0)->shape().isStatic()) return std::nullopt;
    auto f = reshapeThroughTranspose(x->shape().staticDims(), p, n.output(0)->shape().staticDims());
    if (f && !keepsMemoryOrder(x->shape().staticDims(), f->b) && keepsMemoryOrder(f->u, f->a))
      return std::nullopt;  // the same transpose, only above the reshape
    return f;
  }

  std::optional<Sunk> view(const Node& n, const Perm& p) {
    auto f = viewFactors(n, p);
    if (!f) return std::nullopt;
    Value* x = untransposed(n, p);
    if (!keepsMemoryOrder(x->shape().staticDims(), f->b))
      x = addTranspose(x, f->b, x->name() + ".t", false)->output(0), inserted_++;
    return Sunk{"Reshape", {x, constant(n.output(0)->name() + ".shape", Tensor::vectorI64(f->u))}, {}, {f->a}};
  }

  // Drops replaced nodes, then what only they read (transposes, shape arithmetic, constants),
  // so the pass leaves nothing dead behind; keeps the order topological.
  void cleanup() {
    while (!dead_.empty() || !freed_.empty()) {
      for (const Node* n : dead_)
        for (const Value* in : n->inputs())
          if (in) freed_.insert(in);
      std::erase_if(freed_, [&](const Value* v) { return dead_.count(v->producer()) > 0; });  // erased with it
      g_.eraseNodes([&](const Node& n) {
        if (!dead_.count(&n)) return false;
        layout_.erase(&n);
        return true;
      });
      dead_.clear();
      std::unordered_set<const Value*> used(g_.outputs().begin(), g_.outputs().end());
      for (const auto& n : g_.nodes())
        for (const Value* in : n->inputs()) used.insert(in);
      for (const Value* v : freed_) {
        Node* p = v->producer();
        if (p && std::none_of(p->outputs().begin(), p->outputs().end(), [&](const Value* o) { return used.count(o); }))
          dead_.insert(p);
      }
      g_.eraseInitializers([&](const Value* v) { return freed_.count(v) && !used.count(v); });
      freed_.clear();
    }
    g_.topologicalSort();
  }

  Graph& g_;
  PassContext& ctx_;
  std::unordered_set<const Node*> dead_;
  std::unordered_set<const Value*> freed_;  // values that lost a reader
  std::unordered_set<const Node*> layout_;  // the layout transposes
  int64_t inserted_ = 0;
};

}  // namespace

void convertLayout(Graph& g, PassContext& ctx) { Converter(g, ctx).run(); }

}  // namespace friction
