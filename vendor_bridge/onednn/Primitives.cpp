#include "vendor_bridge/onednn/Primitives.h"

#include <algorithm>

#include "ir/ops/NnShapes.h"
#include "vendor_bridge/onednn/PostOps.h"

namespace friction::vendor::onednn {

Draft Drafter::conv(const Node& n, const Scope& sc, Operand src, memory::dims dstDims, Tag dstTag,
                    const std::vector<Post>& posts, const Tensor* extraBias) {
  need(n.op() == "Conv" && n.numOutputs() == 1);
  const Value *x = n.input(0), *w = n.input(1), *b = n.input(2);
  need(isStaticF32(x) && isStaticF32(w) && (!b || isStaticF32(b)) && isStaticF32(n.output(0)));
  auto xs = x->shape().staticDims(), ws = w->shape().staticDims(), ys = n.output(0)->shape().staticDims();
  size_t sp = xs.size() - 2;
  need(xs.size() >= 3 && xs.size() <= 5 && ws.size() == xs.size());
  Window win = resolveWindow(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()});
  int64_t g = n.attrInt("group", 1);
  need(g >= 1 && ws[0] % g == 0);
  memory::dims strides(sp), dil(sp), padL(sp), padR(sp);
  for (size_t i = 0; i < sp; ++i) {
    strides[i] = win.strides[i], dil[i] = win.dilations[i] - 1;
    padL[i] = win.pads[i], padR[i] = win.pads[sp + i];
  }
  Draft d;
  d.kind = "convolution";
  memory::dims wd(ws.begin(), ws.end());
  Tag wTag = plainTag(ws.size());
  if (g > 1) {
    wd.insert(wd.begin(), g);
    wd[1] /= g;
    wTag = plainTag(wd.size());
  }
  memory::desc wPlain(wd, kF32, wTag);
  const Tensor* wConst = sc.constOf(w);
  memory::desc wWant = wConst ? memory::desc(wd, kF32, Tag::any) : wPlain;
  const Tensor* bConst = b ? sc.constOf(b) : extraBias;
  memory::desc bMd({ws[0]}, kF32, Tag::a);
  need(!bConst || bConst->numel() == ws[0]);
  memory::desc srcMd = src.md(), dstMd(dstDims, kF32, dstTag);
  dnnl::primitive_attr attr = attrWith(posts, ctx_, d);
  bool hasBias = b || extraBias;
  auto desc = hasBias ? dnnl::convolution_forward::desc(kInference, algorithm::convolution_direct, srcMd, wWant, bMd,
                                                         dstMd, strides, dil, padL, padR)
                      : dnnl::convolution_forward::desc(kInference, algorithm::convolution_direct, srcMd, wWant,
                                                         dstMd, strides, dil, padL, padR);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, ctx_.eng);
  need(pd.src_desc() == srcMd && pd.dst_desc() == dstMd);
  d.rt.emplace_back(DNNL_ARG_SRC, src);
  bindWeights(ctx_, d, wConst, Operand{w, wd, wTag}, pd.weights_desc());
  if (bConst)
    d.fixed.emplace_back(DNNL_ARG_BIAS, constMemory(ctx_, *bConst, bMd));
  else if (b)
    d.rt.emplace_back(DNNL_ARG_BIAS, Operand{b, {ws[0]}, Tag::a});
  d.prim = dnnl::convolution_forward(pd);
  d.dst = dstMd;
  (void)ys;
  return d;
}

Draft Drafter::matmul(const Node& n, const Scope& sc, const std::vector<Post>& posts) {
  need(n.op() == "MatMul" && n.numOutputs() == 1);
  const Value *a = n.input(0), *b = n.input(1), *y = n.output(0);
  need(isStaticF32(a) && isStaticF32(b) && isStaticF32(y));
  auto as = a->shape().staticDims(), bs = b->shape().staticDims(), ys = y->shape().staticDims();
  need(as.size() >= 2 && bs.size() >= 2 && ys.size() <= 6);
  auto pad = [&](std::vector<int64_t> s) {
    s.insert(s.begin(), ys.size() - s.size(), 1);
    return memory::dims(s.begin(), s.end());
  };
  Draft d;
  d.kind = "matmul";
  Operand A{a, pad(as), plainTag(ys.size())}, B{b, pad(bs), plainTag(ys.size())};
  const Tensor* bConst = sc.constOf(b);
  memory::desc dstMd(memory::dims(ys.begin(), ys.end()), kF32, plainTag(ys.size()));
  memory::desc bWant = bConst ? memory::desc(B.dims, kF32, Tag::any) : B.md();
  dnnl::primitive_attr attr = attrWith(posts, ctx_, d);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(A.md(), bWant, dstMd), attr, ctx_.eng);
  need(pd.src_desc() == A.md() && pd.dst_desc() == dstMd);
  d.rt.emplace_back(DNNL_ARG_SRC, A);
  bindWeights(ctx_, d, bConst, B, pd.weights_desc());
  d.prim = dnnl::matmul(pd);
  d.dst = dstMd;
  return d;
}

Draft Drafter::gemm(const Node& n, const Scope& sc, const std::vector<Post>& posts) {
  need(n.op() == "Gemm" && n.numOutputs() == 1);
  const Value *a = n.input(0), *b = n.input(1), *c = n.input(2), *y = n.output(0);
  need(isStaticF32(a) && isStaticF32(b) && isStaticF32(y) && (!c || isStaticF32(c)));
  auto as = a->shape().staticDims(), bs = b->shape().staticDims(), ys = y->shape().staticDims();
  need(as.size() == 2 && bs.size() == 2 && ys.size() == 2);
  bool ta = n.attrInt("transA", 0) != 0, tb = n.attrInt("transB", 0) != 0;
  float alpha = n.attrFloat("alpha", 1.f), beta = n.attrFloat("beta", 1.f);
  int64_t M = ys[0], N = ys[1], K = ta ? as[0] : as[1];
  Draft d;
  d.kind = "matmul";
  Operand A{a, {M, K}, ta ? Tag::ba : Tag::ab}, B{b, {K, N}, tb ? Tag::ba : Tag::ab};
  const Tensor* bConst = sc.constOf(b);
  need(alpha == 1.f || bConst);
  Tensor bScaled;
  if (bConst && alpha != 1.f) {
    bScaled = bConst->clone();
    for (int64_t i = 0; i < bScaled.numel(); ++i) bScaled.data<float>()[i] *= alpha;
    bConst = &bScaled;
  }
  memory::desc dstMd({M, N}, kF32, Tag::ab);
  memory::desc bWant = bConst ? memory::desc(B.dims, kF32, Tag::any) : B.md();
  std::optional<memory::desc> biasMd;
  Tensor biasScaled;
  const Tensor* cConst = c ? sc.constOf(c) : nullptr;
  Operand C;
  if (c) {
    auto cs = c->shape().staticDims();
    need(cs.size() <= 2);
    cs.insert(cs.begin(), 2 - cs.size(), 1);
    need((cs[0] == 1 || cs[0] == M) && (cs[1] == 1 || cs[1] == N));
    C = Operand{c, {cs[0], cs[1]}, Tag::ab};
    biasMd = C.md();
    need(beta == 1.f || cConst);
    if (cConst && beta != 1.f) {
      biasScaled = cConst->clone();
      for (int64_t i = 0; i < biasScaled.numel(); ++i) biasScaled.data<float>()[i] *= beta;
      cConst = &biasScaled;
    }
  }
  dnnl::primitive_attr attr = attrWith(posts, ctx_, d);
  auto desc = biasMd ? dnnl::matmul::desc(A.md(), bWant, *biasMd, dstMd) : dnnl::matmul::desc(A.md(), bWant, dstMd);
  dnnl::matmul::primitive_desc pd(desc, attr, ctx_.eng);
  need(pd.src_desc() == A.md() && pd.dst_desc() == dstMd);
  d.rt.emplace_back(DNNL_ARG_SRC, A);
  bindWeights(ctx_, d, bConst, B, pd.weights_desc());
  if (biasMd) {
    if (cConst)
      d.fixed.emplace_back(DNNL_ARG_BIAS, constMemory(ctx_, *cConst, *biasMd));
    else
      d.rt.emplace_back(DNNL_ARG_BIAS, C);
  }
  d.prim = dnnl::matmul(pd);
  d.dst = dstMd;
  return d;
}

Draft Drafter::pool(const Node& n, const Scope& sc, Operand src, memory::dims dstDims, Tag dstTag) {
  const std::string& op = n.op();
  need(n.numOutputs() == 1);
  const Value* x = n.input(0);
  need(isStaticF32(x) && isStaticF32(n.output(0)));
  auto xs = x->shape().staticDims(), ys = n.output(0)->shape().staticDims();
  need(xs.size() >= 3 && xs.size() <= 5);
  size_t sp = xs.size() - 2;
  memory::dims strides(sp, 1), kernel(sp), dil(sp, 0), padL(sp, 0), padR(sp, 0);
  algorithm alg = algorithm::pooling_max;
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    for (size_t i = 0; i < sp; ++i) kernel[i] = xs[2 + i];
    alg = op == "GlobalMaxPool" ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
  } else {
    need(op == "MaxPool" || op == "AveragePool");
    Window win = resolveWindow(n, {xs.begin() + 2, xs.end()});
    bool includePad = op == "AveragePool" && n.attrInt("count_include_pad", 0) != 0;
    need(!(includePad && win.ceilMode));
    if (op == "AveragePool") alg = includePad ? algorithm::pooling_avg_include_padding : algorithm::pooling_avg_exclude_padding;
    for (size_t i = 0; i < sp; ++i) {
      strides[i] = win.strides[i], kernel[i] = win.kernel[i], dil[i] = win.dilations[i] - 1;
      padL[i] = win.pads[i];
      // ceil_mode: oneDNN rounds down, so pad the end until the last window exists.
      int64_t needed = (ys[2 + i] - 1) * win.strides[i] + (win.kernel[i] - 1) * win.dilations[i] + 1 - xs[2 + i] - padL[i];
      padR[i] = win.ceilMode ? std::max<int64_t>(needed, win.pads[sp + i]) : win.pads[sp + i];
      // A window that starts in the end padding only would average nothing.
      need(!win.ceilMode || (ys[2 + i] - 1) * win.strides[i] < xs[2 + i] + padL[i]);
    }
  }
  Draft d;
  d.kind = "pooling";
  memory::desc dstMd(dstDims, kF32, dstTag);
  dnnl::pooling_v2_forward::desc desc(kInference, alg, src.md(), dstMd, strides, kernel, dil, padL, padR);
  dnnl::pooling_v2_forward::primitive_desc pd(desc, ctx_.eng);
  need(pd.dst_desc() == dstMd);
  d.rt.emplace_back(DNNL_ARG_SRC, src);
  d.prim = dnnl::pooling_v2_forward(pd);
  d.dst = dstMd;
  (void)sc;
  return d;
}

Draft Drafter::batchnorm(const Node& n, const Scope& sc, Operand src) {
  need(n.op() == "BatchNormalization" && n.numOutputs() == 1 && n.attrInt("training_mode", 0) == 0);
  const Value* x = n.input(0);
  need(isStaticF32(x) && x->shape().rank() >= 2);
  int64_t C = x->shape().staticDims()[1];
  Draft d;
  d.kind = "batch_normalization";
  memory::desc cMd({C}, kF32, Tag::a);
  int args[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  for (int i = 0; i < 4; ++i) {
    const Value* v = n.input(size_t(i) + 1);
    need(isStaticF32(v) && v->shape().numel() == C);
    if (const Tensor* t = sc.constOf(v))
      d.fixed.emplace_back(args[i], constMemory(ctx_, *t, cMd));
    else
      d.rt.emplace_back(args[i], Operand{v, {C}, Tag::a});
  }
  auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  dnnl::batch_normalization_forward::desc desc(kInference, src.md(), n.attrFloat("epsilon", 1e-5f), flags);
  dnnl::batch_normalization_forward::primitive_desc pd(desc, ctx_.eng);
  d.rt.emplace_back(DNNL_ARG_SRC, src);
  d.prim = dnnl::batch_normalization_forward(pd);
  d.dst = pd.dst_desc();
  return d;
}

Draft Drafter::layernorm(const Node& n, const Scope& sc) {
  need(n.op() == "LayerNormalization" && n.numOutputs() == 1);
  const Value *x = n.input(0), *s = n.input(1), *b = n.input(2);
  need(isStaticF32(x) && isStaticF32(s) && (!b || isStaticF32(b)) && x->shape().rank() >= 1);
  auto xs = x->shape().staticDims();
  int64_t axis = n.attrInt("axis", -1);
  if (axis < 0) axis += int64_t(xs.size());
  need(axis >= 0 && axis < int64_t(xs.size()));
  int64_t len = 1, groups = 1;
  for (size_t i = 0; i < xs.size(); ++i) (int64_t(i) < axis ? groups : len) *= xs[i];
  need(s->shape().numel() == len && (!b || b->shape().numel() == len));
  Draft d;
  d.kind = "layer_normalization";
  Operand src{x, {groups, len}, Tag::ab};
  memory::desc lMd({len}, kF32, Tag::a);
  auto bind = [&](int arg, const Value* v) {
    if (const Tensor* t = sc.constOf(v))
      d.fixed.emplace_back(arg, constMemory(ctx_, *t, lMd));
    else
      d.rt.emplace_back(arg, Operand{v, {len}, Tag::a});
  };
  bind(DNNL_ARG_SCALE, s);
  auto flags = dnnl::normalization_flags::use_scale;
  if (b) flags = flags | dnnl::normalization_flags::use_shift, bind(DNNL_ARG_SHIFT, b);
  dnnl::layer_normalization_forward::desc desc(kInference, src.md(), n.attrFloat("epsilon", 1e-5f), flags);
  dnnl::layer_normalization_forward::primitive_desc pd(desc, ctx_.eng);
  need(pd.dst_desc() == src.md());
  d.rt.emplace_back(DNNL_ARG_SRC, src);
  d.prim = dnnl::layer_normalization_forward(pd);
  d.dst = src.md();
  return d;
}

Draft Drafter::softmax(const Node& n) {
  need((n.op() == "Softmax" || n.op() == "LogSoftmax") && n.numOutputs() == 1);
  const Value* x = n.input(0);
  need(isStaticF32(x) && x->shape().rank() >= 1);
  int64_t r = int64_t(x->shape().rank()), axis = n.attrInt("axis", -1);
  if (axis < 0) axis += r;
  need(axis >= 0 && axis < r);
  Operand src{x, dimsOf(x), plainTag(size_t(r))};
  Draft d;
  d.rt.emplace_back(DNNL_ARG_SRC, src);
  if (n.op() == "Softmax") {
    d.kind = "softmax";
    dnnl::softmax_forward::primitive_desc pd({kInference, src.md(), int(axis)}, ctx_.eng);
    d.prim = dnnl::softmax_forward(pd);
  } else {
    d.kind = "logsoftmax";
    dnnl::logsoftmax_forward::primitive_desc pd({kInference, src.md(), int(axis)}, ctx_.eng);
    d.prim = dnnl::logsoftmax_forward(pd);
  }
  d.dst = src.md();
  return d;
}

Draft Drafter::eltwise(const Value* x, const Value* y, const Post& e) {
  need(isStaticF32(x) && isStaticF32(y) && x->shape() == y->shape());
  Operand src{x, dimsOf(x), plainTag(std::max<size_t>(1, x->shape().rank()))};
  Draft d;
  d.kind = "eltwise";
  dnnl::eltwise_forward::primitive_desc pd({kInference, e.alg, src.md(), e.alpha, e.beta}, ctx_.eng);
  d.rt.emplace_back(DNNL_ARG_SRC, src);
  d.prim = dnnl::eltwise_forward(pd);
  d.dst = src.md();
  return d;
}

Draft Drafter::transpose(const Node& n) {
  need(n.op() == "Transpose" && n.numOutputs() == 1);
  const Value *x = n.input(0), *y = n.output(0);
  need(isStaticF32(x) && isStaticF32(y) && x->shape().rank() >= 1);
  auto xs = x->shape().staticDims();
  size_t r = xs.size();
  std::vector<int64_t> perm = n.attrInts("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; ++i) perm.push_back(int64_t(r - 1 - i));
  need(perm.size() == r);
  memory::dims st(r, 1), dims(r), strides(r);
  for (size_t i = r - 1; i > 0; --i) st[i - 1] = st[i] * xs[i];
  for (size_t i = 0; i < r; ++i) {
    need(perm[i] >= 0 && perm[i] < int64_t(r));
    dims[i] = xs[size_t(perm[i])], strides[i] = st[size_t(perm[i])];
  }
  Operand src{x, dims, Tag::undef, strides};
  memory::desc dstMd(dims, kF32, plainTag(r));
  Draft d;
  d.kind = "reorder";
  dnnl::reorder::primitive_desc pd(ctx_.eng, src.md(), ctx_.eng, dstMd);
  d.rt.emplace_back(DNNL_ARG_FROM, src);
  d.prim = dnnl::reorder(pd);
  d.dst = dstMd;
  return d;
}

Draft Drafter::binary(const Node& n, const Scope& sc) {
  auto alg = binaryOf(n.op());
  need(alg && n.numInputs() == 2 && n.numOutputs() == 1);
  const Value *a = n.input(0), *b = n.input(1), *y = n.output(0);
  need(isStaticF32(a) && isStaticF32(b) && isStaticF32(y));
  if (a->shape() != y->shape()) {
    need(commutative(*alg) && b->shape() == y->shape());
    std::swap(a, b);
  }
  size_t r = std::max<size_t>(1, y->shape().rank());
  auto view = [&](const Value* v) {
    auto s = v->shape().staticDims();
    need(s.size() <= r);
    s.insert(s.begin(), r - s.size(), 1);
    return Operand{v, memory::dims(s.begin(), s.end()), plainTag(r)};
  };
  Operand A = view(a), B = view(b);
  Draft d;
  d.kind = "binary";
  dnnl::binary::primitive_desc pd({*alg, A.md(), B.md(), A.md()}, ctx_.eng);
  d.rt.emplace_back(DNNL_ARG_SRC_0, A);
  if (const Tensor* t = sc.constOf(b))
    d.fixed.emplace_back(DNNL_ARG_SRC_1, constMemory(ctx_, *t, B.md()));
  else
    d.rt.emplace_back(DNNL_ARG_SRC_1, B);
  d.prim = dnnl::binary(pd);
  d.dst = A.md();
  return d;
}

}  // namespace friction::vendor::onednn
