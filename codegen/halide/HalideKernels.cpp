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

// The shortest reduction whose accumulator holds several rows (accumulate): a
// depthwise 3x3 convolution's 9 steps are a short chain already, and grouped
// they cost more than they saved (every read of the accumulator picks one of
// the Tuple's elements); MobileNetV2's depthwise blocks grouped too compiled
// in 87 s and ran no faster, excluded in 14 s and 1.2x faster (single runs).
constexpr int64_t kStepsForRows = 32;

// Builds the Funcs of one view.
class Definer {
 public:
  Definer(const KernelView& view, bool clampInputs, int accumulatorRows)
      : view_(view), clampInputs_(clampInputs), accumulatorRows_(accumulatorRows) {}

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
    out_.constants.push_back(data);
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
    } else if (n.op() == "ConvTranspose") {
      f = {transposedConvolution(n), shape};
    } else if (n.op() == "MatMul" || n.op() == "Gemm") {
      f = {matmul(n), shape};
    } else if (isStaticView(n)) {
      f = reshape(n);
    } else {
      Structured s{n, {}, out_.producers, out_.constants};
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
        {"Resize", &buildResize},
    };
    auto it = table.find(s.n.op());
    FRICTION_CHECK(it != table.end(), "halide: no kernel for " + s.n.op());
    return it->second(s);
  }

  // A contraction's accumulator over `hints.shape` (its schedule hints:
  // rowDim, laneDim, panel): init(y), then += term(y) at every point of the
  // RDom the term reads; the Func to read it through. With accumulatorRows_
  // > 1, that many neighbours along the rows' dim are the elements of one
  // Tuple, so each step of the reduction updates as many independent
  // accumulators (ScheduleOptions::accumulatorRows), and a pure Func of the
  // whole shape reads them back. A last group past the end computes rows that
  // are never read, from its producers past their end (a Func is defined
  // everywhere; the kernel's inputs must be clamped: defineKernel). Clamping
  // the row instead (min with the last) made Halide's bounds of three
  // grouped convolutions in one kernel nest mins eight ways at each: it did
  // not finish simplifying MobileNetV2's block in 20 minutes.
  HL::Func accumulate(const std::string& name, ShapedFunc hints, int64_t steps, const std::function<HL::Expr(const Exprs&)>& init,
                      const std::function<HL::Expr(const Exprs&)>& term) {
    const Ints& shape = hints.shape;
    const Vars v = vars(shape.size());
    const Exprs y = exprs(v);
    const Vars reversed(v.rbegin(), v.rend());
    const int rowDim = hints.rowDim >= 0 ? hints.rowDim : int(shape.size()) - 2;
    const int64_t rows = rowDim >= 0 && steps >= kStepsForRows ? std::min<int64_t>(accumulatorRows_, shape[size_t(rowDim)]) : 1;
    if (rows <= 1) {
      hints.func = HL::Func(halideName(name));
      hints.func(reversed) = init(y);
      ref(hints.func, y) += term(y);
      out_.producers.push_back(hints);
      return hints.func;
    }
    auto row = [&](Exprs i, int64_t t) {
      i[size_t(rowDim)] = i[size_t(rowDim)] * i32(rows) + i32(t);
      return i;
    };
    HL::Func group(halideName(name + "_rows"));
    std::vector<HL::Expr> first, next;
    for (int64_t t = 0; t < rows; ++t) first.push_back(init(row(y, t)));
    group(reversed) = HL::Tuple(first);
    for (int64_t t = 0; t < rows; ++t) next.push_back(HL::Expr(ref(group, y)[int(t)]) + term(row(y, t)));
    ref(group, y) = HL::Tuple(next);
    Ints groups = shape;
    groups[size_t(rowDim)] = (shape[size_t(rowDim)] + rows - 1) / rows;
    out_.producers.push_back({group, groups});
    return halide::define(name, shape, [&](const Exprs& i) {
      Exprs g = i;
      g[size_t(rowDim)] = i[size_t(rowDim)] / i32(rows);
      std::vector<HL::Expr> members;
      for (int64_t t = 0; t < rows; ++t) members.push_back(ref(group, g)[int(t)]);
      return HL::mux(i[size_t(rowDim)] % i32(rows), members);
    }).func;
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
    // The window's taps that some output reads inside x (insideTaps), all of them where none does: the others
    // add zeros (a dilated conv over a small image: DeepLabV3's ASPP computed 9x its products).
    Ints extents = {cg}, firstTap;
    for (size_t i = 0; i < d; ++i) {
      auto [first, last] = insideTaps(win.kernel[i], xs[2 + i], ys[2 + i], win.strides[i], win.pads[i], win.dilations[i]);
      if (first >= last) first = 0, last = win.kernel[i];
      firstTap.push_back(first);
      extents.push_back(last - first);
    }
    HL::RDom r = rdom(extents, n.name() + "_r");
    ShapedFunc a{HL::Func(), ys, 1};
    if (source) {
      a = channelsLast(a);
      a.panel = definePanel(n.name() + "_panel", ws.size(), [&](const Exprs& i) { return at(value(n.input(1)), i); });
      a.panelElements = ws[0] * checkedNumel(extents);  // the kept taps' weights: what bounds inference packs
      a.batchDims = 1;
    }
    auto product = [&](const Exprs& y) {
      // The input channel of group k / (K/G); no division when there is one group.
      Exprs xi = {y[0], G == 1 ? HL::Expr(r[0]) : (y[1] / i32(kg)) * i32(cg) + r[0]}, wi = {y[1], r[0]};
      HL::Expr inside = HL::Internal::const_true();
      for (size_t i = 0; i < d; ++i) {
        const int64_t stride = win.strides[i], dilation = win.dilations[i], pad = win.pads[i];
        HL::Expr tap = r[int(1 + i)] + i32(firstTap[i]);
        HL::Expr p = y[2 + i] * i32(stride) - i32(pad) + tap * i32(dilation);
        // Guarded where some output reads outside x at a kept tap: the first tap's lowest position, the last's highest.
        const int64_t lowest = firstTap[i] * dilation - pad,
                      highest = (ys[2 + i] - 1) * stride - pad + (firstTap[i] + extents[1 + i] - 1) * dilation;
        if (lowest < 0 || highest >= xs[2 + i]) {
          inside = inside && p >= 0 && p < i32(xs[2 + i]);
          p = clampIndex(p, xs[2 + i]);
        }
        xi.push_back(p);
        wi.push_back(tap);
      }
      HL::Expr x = source ? at(value(source), channelsLastIndex(xi)) : at(value(n.input(0)), xi);
      HL::Expr w = source ? a.panel(wi) : at(value(n.input(1)), wi);
      return HL::select(inside, x * w, f32(0));
    };
    return accumulate(n.name() + "_acc", a, checkedNumel(extents), bias(n), product);  // defineNode adds the result
  }

  // A convolution's accumulator's start: its bias (input 2) per output channel, or zero.
  std::function<HL::Expr(const Exprs&)> bias(const Node& n) {
    return [this, &n](const Exprs& y) { return n.input(2) ? at(value(n.input(2)), {y[1]}) : f32(0); };
  }

  // ConvTranspose's accumulator over [N, K, spatial...], gathered rather
  // than scattered: output position p of a spatial dim takes, for tap r,
  // input q = (p + pad - r * dilation) / stride where that division is
  // exact. With dilation 1 the exact taps are r = (p + pad) mod stride +
  // j * stride, so the RDom runs over j < ceil(kernel / stride) alone (a
  // 2 x 2 window at stride 2, a U-Net's upsampling, takes one tap a dim, not
  // four); other dilations run over every tap and select. Output channels
  // are the register tile's rows, as a convolution's: they read the same
  // input pixels.
  HL::Func transposedConvolution(const Node& n) {
    const Ints ys = n.output(0)->shape().staticDims(), xs = n.input(0)->shape().staticDims(),
               ws = n.input(1)->shape().staticDims();
    const size_t d = xs.size() - 2;
    const Window win = resolveConvTranspose(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}).window;
    const int64_t G = n.attrInt("group", 1), cg = xs[1] / G, kg = ys[1] / G;
    Ints extents = {cg};
    for (size_t i = 0; i < d; ++i)
      extents.push_back(win.dilations[i] == 1 ? (win.kernel[i] + win.strides[i] - 1) / win.strides[i] : win.kernel[i]);
    HL::RDom r = rdom(extents, n.name() + "_r");
    auto product = [&](const Exprs& y) {
      Exprs xi = {y[0], G == 1 ? HL::Expr(r[0]) : (y[1] / i32(kg)) * i32(cg) + r[0]};
      Exprs wi = {xi[1], G == 1 ? y[1] : y[1] % i32(kg)};
      HL::Expr inside = HL::Internal::const_true();
      for (size_t i = 0; i < d; ++i) {
        const int64_t stride = win.strides[i], dilation = win.dilations[i], kernel = win.kernel[i];
        HL::Expr p = y[2 + i] + i32(win.pads[i]), tap = r[int(1 + i)];
        if (dilation == 1 && stride > 1) {
          tap = p % i32(stride) + tap * i32(stride);  // Halide's % of a positive divisor is never negative
          if (kernel % stride) inside = inside && tap < i32(kernel);
        }
        HL::Expr shifted = p - tap * i32(dilation), q = shifted;
        if (stride > 1) {
          if (dilation != 1) inside = inside && shifted % i32(stride) == 0;
          q = shifted / i32(stride);  // floor division: exact where selected
        }
        inside = inside && q >= 0 && q < i32(xs[2 + i]);
        xi.push_back(clampIndex(q, xs[2 + i]));
        wi.push_back(clampIndex(tap, kernel));
      }
      return HL::select(inside, at(value(n.input(0)), xi) * at(value(n.input(1)), wi), f32(0));
    };
    return accumulate(n.name() + "_acc", ShapedFunc{HL::Func(), ys, 1}, checkedNumel(extents), bias(n), product);
  }

  // MatMul (batch dims broadcast) or Gemm (2-D, either operand transposed):
  // the accumulator (zero, then the products over an RDom of K), then Gemm's
  // alpha and C.
  HL::Func matmul(const Node& n) {
    const Ints ys = n.output(0)->shape().staticDims();
    auto arg = [&](size_t i) { return value(n.input(i)); };
    const Ints as = n.input(0)->shape().staticDims(), bs = n.input(1)->shape().staticDims();
    const bool ta = n.op() == "Gemm" && n.attrInt("transA", 0) != 0, tb = n.op() == "Gemm" && n.attrInt("transB", 0) != 0;
    const int64_t K = ta ? as[as.size() - 2] : as.back();
    const size_t nb = ys.size() - 2;
    HL::RDom k(0, int(K), halideName(n.name() + "_k"));
    // B through a panel over [N, K, batch...]: the schedule packs a block of columns at a time.
    ShapedFunc a{HL::Func(), ys};
    a.batchDims = int(nb);
    a.sliceDim = int(nb) - 1;
    a.panelElements = checkedNumel(n.input(1)->shape().staticDims());
    a.panel = definePanel(n.name() + "_panel", bs.size(), [&](const Exprs& i) {
      Exprs b(i.begin() + 2, i.end());
      b.push_back(tb ? i[0] : i[1]), b.push_back(tb ? i[1] : i[0]);
      return at(arg(1), b);
    });
    auto product = [&](const Exprs& y) {
      const Exprs batch(y.begin(), y.begin() + int64_t(nb));
      const Ints ybatch(ys.begin(), ys.begin() + int64_t(nb));
      Exprs ai = broadcastIndex(Ints(as.begin(), as.end() - 2), ybatch, batch);
      ai.push_back(ta ? HL::Expr(k) : y[nb]);
      ai.push_back(ta ? y[nb] : HL::Expr(k));
      Exprs bi = broadcastIndex(Ints(bs.begin(), bs.end() - 2), ybatch, batch);
      bi.insert(bi.begin(), {y[nb + 1], k});
      return at(arg(0), ai) * a.panel(bi);
    };
    const HL::Func acc = accumulate(n.name() + "_acc", a, K, [](const Exprs&) { return f32(0); }, product);
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
  int accumulatorRows_;
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

KernelFuncs defineKernel(const KernelView& view, bool clampInputs, int accumulatorRows) {
  // A last group of rows reads past the rows' end (accumulate).
  return Definer(view, clampInputs || accumulatorRows > 1, accumulatorRows).define();
}

}  // namespace friction::codegen::halide
