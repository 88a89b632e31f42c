// The algorithms of the halide backend's kernels (HalideKernels.h): how
// each kernel view becomes Funcs, node by node (elementwise formulas,
// contractions, views, nested regions); the Structured ops' build functions
// are in StructuredFuncs.cpp. Every formula follows the interpreter's
// (runtime/interp/kernels/) and the MLIR builder's
// (codegen/mlir/KernelBuilder.cpp).
#include "codegen/halide/HalideKernels.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "codegen/NativeKernels.h"
#include "codegen/halide/FuncHelpers.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/TensorShapes.h"

namespace friction::codegen::halide {
namespace {

// Builds the Funcs of one view.
class Definer {
 public:
  Definer(const KernelView& view, bool clampInputs) : view_(view), clampInputs_(clampInputs) {}

  KernelFuncs define() {
    for (size_t i = 0; i < view_.inputs.size(); ++i) {
      const Value* v = view_.inputs[i];
      Ints shape = v->shape().staticDims();
      HL::ImageParam p(halideType(v->dtype()), int(shape.size()), "in" + std::to_string(i));
      denseStatic(p, shape);
      out_.inputs.push_back(p);
      out_.inputShapes.push_back(shape);
      funcs_[v] = clampInputs_ && !shape.empty() ? clampedRead(HL::Func(p), shape, p.name()) : HL::Func(p);
    }
    FRICTION_CHECK(view_.kind != KernelKind::NativeEpilogue, "halide: a native anchor's epilogue is not a Halide kernel");
    // Every kind is its nodes in order: a Contraction's anchor, a Structured op, elementwise nodes, or (Graph)
    // any of those, views and nested regions.
    for (const Node* n : view_.nodes) defineNode(*n);
    for (const Value* v : view_.outputs) {
      // Each output a Func of its own over its buffer: pure (a reduction's result is read out of it), so every
      // schedule can tile it, and never what another Func reads (a consumer may need more of its producer
      // than the buffer holds: a rounded-up tile).
      ShapedFunc out{value(v), v->shape().staticDims()};
      out = halide::define(out.func.name() + "_out", out.shape, [&](const Exprs& y) { return at(out.func, y); });
      denseStatic(out.func.output_buffer(), out.shape);
      out_.outputs.push_back(out);
    }
    // The producers: every Func defined (the outputs are their own wrappers), once each.
    std::vector<ShapedFunc> producers;
    for (const ShapedFunc& f : out_.producers)
      if (std::none_of(producers.begin(), producers.end(),
                       [&](const ShapedFunc& o) { return o.func.function().same_as(f.func.function()); }))
        producers.push_back(f);
    out_.producers = producers;
    return out_;
  }

 private:
  // The Func of `v`: an argument's, a value defined before, or a constant of
  // the kernel (a region body's weights), embedded as a Halide buffer.
  HL::Func value(const Value* v) {
    if (auto it = funcs_.find(v); it != funcs_.end()) return it->second;
    const Tensor* t = constantData(v);
    FRICTION_CHECK(t, "halide: " + v->name() + " is neither an argument, a value computed before, nor a constant");
    std::vector<int> sizes;
    for (auto e = t->shape().rbegin(); e != t->shape().rend(); ++e) sizes.push_back(int(*e));
    HL::Buffer<> data(halideType(t->dtype()), sizes);  // row-major: Halide's dim 0 innermost is the same memory order
    std::memcpy(data.data(), t->rawData(), size_t(t->byteSize()));
    // Clamped like the arguments (a schedule may compute past what the outputs need).
    HL::Func source = clampInputs_ && !sizes.empty() ? clampedRead(HL::Func(data), t->shape(), v->name()) : HL::Func(data);
    ShapedFunc f = halide::define(v->name(), t->shape(), [&](const Exprs& i) { return at(source, i); });
    funcs_[v] = f.func;
    return f.func;
  }

  // The channels-last value `v` is transposed from in this kernel ([N,
  // spatial..., C] -> [N, C, spatial...]: the head of convert-layout's region
  // body), or null. A windowed op reads it in place: through the transpose,
  // its reads would be strided, and the transpose is materialized instead.
  const Value* channelsLastSource(const Value* v) const {
    const Node* t = v ? v->producer() : nullptr;
    if (!t || t->op() != "Transpose" || !t->input(0) || !funcs_.count(t->input(0))) return nullptr;
    const Ints perm = t->attrInts("perm");
    Ints toChannelsFirst = {0, int64_t(perm.size()) - 1};
    for (int64_t d = 1; d + 1 < int64_t(perm.size()); ++d) toChannelsFirst.push_back(d);
    return perm.size() >= 3 && perm == toChannelsFirst ? t->input(0) : nullptr;
  }

  // Defines the value(s) of `n` from the Funcs of its inputs.
  void defineNode(const Node& n) {
    if (auto region = FusedRegion::of(n)) {  // a nested region: its body, inlined into this kernel
      const Graph& body = region->body();
      for (size_t i = 0; i < body.inputs().size() && i < n.numInputs(); ++i)
        if (n.input(i)) funcs_[body.inputs()[i]] = value(n.input(i));
      for (const auto& m : body.nodes()) defineNode(*m);
      for (size_t i = 0; i < body.outputs().size(); ++i) funcs_[n.output(i)] = value(body.outputs()[i]);
      return;
    }
    const Ints shape = n.output(0)->shape().staticDims();
    ShapedFunc f;
    if (isSupportedElementwise(n)) {
      f = halide::define(n.name(), shape, [&](const Exprs& y) {
        Exprs in;
        for (const Value* v : n.inputs())
          in.push_back(v ? at(value(v), broadcastIndex(v->shape().staticDims(), shape, y)) : HL::Expr());
        return scalarFormula(n, in);
      });
    } else if (n.op() == "Conv") {
      f = {convolution(n), shape};
    } else if (n.op() == "MatMul" || n.op() == "Gemm") {
      f = {matmul(n), shape};
    } else if (isStaticView(n)) {
      f = reshape(n);
    } else {
      Structured s{n, {}, out_.producers};
      for (const Value* v : n.inputs()) s.args.push_back(v && (funcs_.count(v) || constantData(v)) ? value(v) : HL::Func());
      if (const Value* source = channelsLastSource(n.input(0))) s.channelsLastInput = value(source);
      f = structured(s);
    }
    funcs_[n.output(0)] = f.func;
    out_.producers.push_back(f);
  }

  // A view (Reshape & co.): the same elements in row-major order, read through the flat index.
  ShapedFunc reshape(const Node& n) {
    const Ints xs = n.input(0)->shape().staticDims(), ys = n.output(0)->shape().staticDims();
    const HL::Func x = value(n.input(0));
    return halide::define(n.name(), ys, [&](const Exprs& y) { return at(x, unflatten(flatten(y, ys), xs)); });
  }

  ShapedFunc structured(Structured& s) {
    using BuildFn = ShapedFunc (*)(Structured&);
    static const std::unordered_map<std::string, BuildFn> table = {
#define FRICTION_STRUCTURED_OP(op, arguments, statistics, build) {#op, &build},
#include "codegen/StructuredOps.def"
#undef FRICTION_STRUCTURED_OP
#define FRICTION_MASK_OP(op, inputs) {#op, &buildMask},
#include "codegen/MaskOps.def"
#undef FRICTION_MASK_OP
        {"ScatterND", &buildScatterND},
    };
    auto it = table.find(s.n.op());
    FRICTION_CHECK(it != table.end(), "halide: no kernel for " + s.n.op());
    return it->second(s);
  }

  // A convolution's accumulator over [N, K, spatial...]: the bias or zero,
  // then the products over an RDom of (the group's input channels, window).
  // Channels first, a row's pixels are its vector lanes and output channels
  // the rows of its register tile (they share the input pixel). When its
  // input is transposed from a channels-last value in this kernel
  // (convert-layout's region body), it reads that value in place and is
  // computed channels last: output channels in lanes, a row's pixels as
  // rows, its weights read through a panel the schedule packs per block of
  // output channels, so each step of the reduction is one vector load of
  // weights and one broadcast a pixel.
  HL::Func convolution(const Node& n) {
    const Ints ys = n.output(0)->shape().staticDims(), xs = n.input(0)->shape().staticDims(),
               ws = n.input(1)->shape().staticDims();
    const size_t d = xs.size() - 2;
    const Window win = resolveWindow(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()});
    const int64_t G = n.attrInt("group", 1), cg = xs[1] / G, kg = ys[1] / G;
    const Value* source = channelsLastSource(n.input(0));
    Vars yv = vars(ys.size());
    const Exprs y = exprs(yv);
    HL::Func acc(halideName(n.name() + "_acc"));
    Vars reversed(yv.rbegin(), yv.rend());
    acc(reversed) = n.input(2) ? at(value(n.input(2)), {y[1]}) : f32(0);
    Ints extents = {cg};
    extents.insert(extents.end(), win.kernel.begin(), win.kernel.end());
    HL::RDom r = rdom(extents, n.name() + "_r");
    // The input channel of group k / (K/G); no division when there is one group.
    Exprs xi = {y[0], G == 1 ? HL::Expr(r[0]) : (y[1] / i32(kg)) * i32(cg) + r[0]}, wi = {y[1], r[0]};
    HL::Expr inside = HL::Internal::const_true();
    for (size_t i = 0; i < d; ++i) {
      HL::Expr p = y[2 + i] * i32(win.strides[i]) - i32(win.pads[i]) + r[int(1 + i)] * i32(win.dilations[i]);
      if (win.pads[i] || win.pads[i + d] || (ys[2 + i] - 1) * win.strides[i] + (win.kernel[i] - 1) * win.dilations[i] >= xs[2 + i]) {
        inside = inside && p >= 0 && p < i32(xs[2 + i]);
        p = clampIndex(p, xs[2 + i]);
      }
      xi.push_back(p);
      wi.push_back(r[int(1 + i)]);
    }
    ShapedFunc a{acc, ys, 1};
    if (source) {
      a = channelsLast(a);
      a.panel = definePanel(n.name() + "_panel", ws.size(), [&](const Exprs& i) { return at(value(n.input(1)), i); });
      a.batchDims = 1;
    }
    HL::Expr x = source ? at(value(source), channelsLastIndex(xi)) : at(value(n.input(0)), xi);
    HL::Expr w = source ? a.panel(wi) : at(value(n.input(1)), wi);
    acc(reversed) += HL::select(inside, x * w, f32(0));
    out_.producers.push_back(a);  // the accumulator; defineNode adds the result
    return acc;
  }

  // MatMul (batch dims broadcast) or Gemm (2-D, either operand transposed):
  // the accumulator (zero, then the products over an RDom of K), then Gemm's
  // alpha and C.
  HL::Func matmul(const Node& n) {
    const Ints ys = n.output(0)->shape().staticDims();
    auto arg = [&](size_t i) { return value(n.input(i)); };
    Vars yv = vars(ys.size());
    const Exprs y = exprs(yv);
    HL::Func acc(halideName(n.name() + "_acc"));
    Vars reversed(yv.rbegin(), yv.rend());
    const Ints as = n.input(0)->shape().staticDims(), bs = n.input(1)->shape().staticDims();
    const bool ta = n.op() == "Gemm" && n.attrInt("transA", 0) != 0, tb = n.op() == "Gemm" && n.attrInt("transB", 0) != 0;
    const int64_t K = ta ? as[as.size() - 2] : as.back();
    const size_t nb = ys.size() - 2;
    acc(reversed) = f32(0);
    HL::RDom k(0, int(K), halideName(n.name() + "_k"));
    auto operand = [&](const Ints& s, HL::Expr row, HL::Expr col, bool transposed) {
      Ints batch(s.begin(), s.end() - 2), ybatch(ys.begin(), ys.begin() + int64_t(nb));
      Exprs i = broadcastIndex(batch, ybatch, Exprs(y.begin(), y.begin() + int64_t(nb)));
      if (transposed) std::swap(row, col);
      i.push_back(row), i.push_back(col);
      return i;
    };
    // B through a panel over [N, K, batch...]: the schedule packs a block of columns at a time.
    ShapedFunc a{acc, ys};
    a.batchDims = int(nb);
    a.panel = definePanel(n.name() + "_panel", bs.size(), [&](const Exprs& i) {
      Exprs b(i.begin() + 2, i.end());
      b.push_back(tb ? i[0] : i[1]), b.push_back(tb ? i[1] : i[0]);
      return at(arg(1), b);
    });
    Exprs bi = broadcastIndex(Ints(bs.begin(), bs.end() - 2), Ints(ys.begin(), ys.begin() + int64_t(nb)),
                              Exprs(y.begin(), y.begin() + int64_t(nb)));
    bi.insert(bi.begin(), {y[nb + 1], k});
    acc(reversed) += at(arg(0), operand(as, y[nb], k, ta)) * a.panel(bi);
    out_.producers.push_back(a);  // the accumulator; defineNode adds the result
    const float alpha = n.attrFloat("alpha", 1.0f), beta = n.attrFloat("beta", 1.0f);
    if (n.op() != "Gemm" || (!n.input(2) && alpha == 1.0f)) return acc;
    ShapedFunc post = halide::define(n.name() + "_gemm", ys, [&](const Exprs& yi) {
      HL::Expr v = at(acc, yi);
      if (alpha != 1.0f) v = f32(alpha) * v;
      if (const Value* c = n.input(2)) {
        HL::Expr cv = at(arg(2), broadcastIndex(c->shape().staticDims(), ys, yi));
        v = v + (beta != 1.0f ? f32(beta) * cv : cv);
      }
      return v;
    });
    return post.func;
  }

  const KernelView& view_;
  bool clampInputs_;
  KernelFuncs out_;
  std::unordered_map<const Value*, HL::Func> funcs_;
};

}  // namespace

HL::Region regionOf(const Ints& shape) {
  HL::Region r;
  for (auto e = shape.rbegin(); e != shape.rend(); ++e) r.emplace_back(0, int(*e));
  return r;
}

HL::Type halideType(DType t) {
  FRICTION_CHECK(isKernelElementType(t), "halide: no kernel buffer of " + std::string(dtypeName(t)));
  switch (t) {
    case DType::I64: return HL::Int(64);
    case DType::I32: return HL::Int(32);
    case DType::Bool: return HL::UInt(8);
    default: return HL::Float(32);
  }
}

KernelFuncs defineKernel(const KernelView& view, bool clampInputs) { return Definer(view, clampInputs).define(); }

}  // namespace friction::codegen::halide
