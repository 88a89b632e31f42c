// convert-layout: takes CNNs to NHWC. Ops with the LayoutSensitive trait
// (Conv, MaxPool, AveragePool, BatchNormalization, GlobalAveragePool: NCHW
// by ONNX definition, with NHWC kernels in friction) become, when 4-D,
//     Transpose(to NHWC) -> Fused{kind "nhwc"} -> Transpose(to NCHW)
// where the Fused body is Transpose(to NCHW) -> op -> Transpose(to NHWC): the
// region's input and output are NHWC, which codegen lowers to an NHWC kernel
// (the interpreter runs the body as is). Weights stay OIHW, as body inputs.
// Then transposes sink and cancel:
//  - Transpose(Transpose(x, p), q) with q after p the identity becomes x;
//  - an Elementwise op whose inputs are all to-NCHW transposes of the same
//    perm, constants (permuted to match) or single elements runs before the
//    transpose instead: E(T(a), T(b)) = T(E(a, b));
//  - so does a 4-D Concat of such transposes (and constants), along the axis
//    the transpose maps its axis to: Concat(T(a), T(b), axis 1) =
//    T(Concat(a, b, axis 3)), so a DenseNet block or a SqueezeNet Fire module
//    stays NHWC from one conv to the next.
// Anything else (Flatten, Reshape, MatMul, ...) stops the sinking, so
// the transposes left are at the graph boundary and before such ops (e.g. the
// head's Flatten). Stats: "ops converted", "transposes inserted",
// "transposes cancelled" (Transpose nodes that disappeared, original ones
// included), "transposes left" (top-level Transpose nodes at the end).
#include <cstring>
#include <unordered_set>

#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction {
namespace {

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

bool layoutSensitive(const Node& n) {
  if (!hasTrait(n, OpTrait::LayoutSensitive) || n.numOutputs() != 1 || !n.input(0)) return false;
  const Shape& s = n.input(0)->shape();
  return s.hasRank() && s.rank() == 4;
}

Node* transpose(Graph& g, Value* x, const std::vector<int64_t>& perm, const std::string& hint) {
  Node* t = g.addNode("Transpose", {x}, {g.freshName(hint)}, {{"perm", perm}});
  inferNode(*t);
  return t;
}

bool isTranspose(const Value* v, const std::vector<int64_t>* perm = nullptr) {
  const Node* p = v ? v->producer() : nullptr;
  return p && p->op() == "Transpose" && (!perm || p->attrInts("perm") == *perm);
}

// True when `v` is a single element (broadcasts the same in any layout).
bool singleElement(const Value* v) {
  const Shape& s = v->shape();
  if (!s.hasRank()) return false;
  for (const Dim& d : s.dims())
    if (!(d.isStatic() && d.value == 1)) return false;
  return true;
}

// `c` right-aligned to rank 4 and permuted so that Transpose(result, perm) == c.
Tensor permuteConstant(const Tensor& c, const std::vector<int64_t>& perm) {
  std::vector<int64_t> dims(4 - c.rank(), 1);
  dims.insert(dims.end(), c.shape().begin(), c.shape().end());
  std::vector<int64_t> out(4);
  for (int i = 0; i < 4; ++i) out[perm[i]] = dims[i];
  Tensor r(c.dtype(), out);
  size_t es = dtypeSize(c.dtype());
  std::vector<int64_t> inStride(4, 1), outStride(4, 1);
  for (int i = 2; i >= 0; --i) inStride[i] = inStride[i + 1] * dims[i + 1], outStride[i] = outStride[i + 1] * out[i + 1];
  const char* src = static_cast<const char*>(c.rawData());
  char* dst = static_cast<char*>(r.rawData());
  for (int64_t k = 0; k < c.numel(); ++k) {
    int64_t rem = k, o = 0;
    for (int i = 0; i < 4; ++i) {
      int64_t idx = rem / inStride[i];
      rem %= inStride[i];
      o += idx * outStride[perm[i]];
    }
    std::memcpy(dst + o * es, src + k * es, es);
  }
  return r;
}

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
    for (bool changed = true; changed;) {
      changed = false;
      // Nodes appended during the sweep are visited in the same sweep.
      for (size_t i = 0; i < g_.nodes().size(); ++i) {
        Node* n = g_.nodes()[i].get();
        if (dead_.count(n)) continue;
        changed |= n->op() == "Transpose" ? cancel(*n) : (sinkable(*n) && sink(*n));
      }
      cleanup();
    }
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

  void wrap(Node& n) {
    Value* y = n.output(0);
    Node* in = transpose(g_, n.input(0), kToNhwc, n.input(0)->name() + ".nhwc");
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
    Node* out = transpose(g_, f->output(0), kToNchw, y->name() + ".nchw");
    replaceAllUses(g_, y, out->output(0));
    dead_.insert(&n);
    inserted_ += 2;
    ctx_.count("ops converted");
  }

  // Transpose(Transpose(x, p), q) == x when q undoes p.
  bool cancel(Node& n) {
    Value* mid = n.input(0);
    if (!isTranspose(mid)) return false;
    std::vector<int64_t> p = mid->producer()->attrInts("perm"), q = n.attrInts("perm");
    if (p.size() != q.size()) return false;
    for (size_t i = 0; i < q.size(); ++i)
      if (p[q[i]] != int64_t(i)) return false;
    replaceAllUses(g_, n.output(0), mid->producer()->input(0));
    dead_.insert(&n);
    return true;
  }

  static bool sinkable(const Node& n) { return hasTrait(n, OpTrait::Elementwise) || n.op() == "Concat"; }

  // E(T(a), T(b), c) -> T(E(a, b, c')) for the to-NCHW transpose T; Concat likewise, along the mapped axis.
  bool sink(Node& n) {
    if (n.numOutputs() != 1 || !n.output(0)->shape().hasRank() || n.output(0)->shape().rank() != 4) return false;
    const bool concat = n.op() == "Concat";
    bool any = false;
    for (const Value* in : n.inputs()) any |= isTranspose(in, &kToNchw);
    if (!any) return false;
    std::vector<Value*> ins;
    for (Value* in : n.inputs()) {
      if (isTranspose(in, &kToNchw)) {
        // Unwrapped even when it is a single element ([1,1,1,1]): kept, the new node would sink again, forever.
        ins.push_back(in->producer()->input(0));
      } else if (!concat && (!in || singleElement(in))) {
        ins.push_back(in);
      } else if (const Tensor* c = in ? constantData(in) : nullptr; c && c->rank() <= 4 && (!concat || c->rank() == 4)) {
        ins.push_back(g_.addInitializer(g_.freshName(in->name() + ".nhwc"), permuteConstant(*c, kToNchw)));
      } else {
        return false;
      }
    }
    auto attrs = n.attrs();
    if (concat) {
      int64_t axis = n.attrInt("axis", 0);
      attrs["axis"] = kToNchw[size_t(axis < 0 ? axis + 4 : axis)];  // NCHW axis a is NHWC axis perm[a]
    }
    Node* e = g_.addNode(n.op(), ins, {g_.freshName(n.output(0)->name() + ".nhwc")}, attrs, n.name());
    inferNode(*e);
    Node* t = transpose(g_, e->output(0), kToNchw, n.output(0)->name() + ".nchw");
    replaceAllUses(g_, n.output(0), t->output(0));
    dead_.insert(&n);
    inserted_++;
    return true;
  }

  // Drops replaced nodes and transposes nothing reads any more; keeps the order topological.
  void cleanup() {
    for (bool removed = true; removed;) {
      std::unordered_set<const Value*> used(g_.outputs().begin(), g_.outputs().end());
      for (const auto& n : g_.nodes())
        for (const Value* in : n->inputs()) used.insert(in);
      size_t before = g_.nodes().size();
      g_.eraseNodes([&](const Node& n) {
        return dead_.count(&n) || (n.op() == "Transpose" && !used.count(n.output(0)));
      });
      dead_.clear();
      removed = g_.nodes().size() != before;
    }
    g_.topologicalSort();
  }

  Graph& g_;
  PassContext& ctx_;
  std::unordered_set<const Node*> dead_;
  int64_t inserted_ = 0;
};

}  // namespace

void convertLayout(Graph& g, PassContext& ctx) { Converter(g, ctx).run(); }

}  // namespace friction
