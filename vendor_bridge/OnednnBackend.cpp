// The `onednn` backend (see OnednnBackend.h). compile() walks the graph once,
// like the cpu backend (codegen/ProgramBuilder.cpp):
//   - Constant nodes are evaluated at compile time;
//   - a node with an exact oneDNN mapping becomes one primitive (weights of
//     Conv, and of MatMul/Gemm with a constant right operand, are reordered
//     once, here, to the format the primitive picked with format_tag::any);
//   - a Fused "nhwc" region (convert-layout's Transpose -> op -> Transpose)
//     becomes one primitive on channels-last memory;
//   - with postops=on, a Fused "epilogue" region, or an anchor's single-use
//     chain (bias/residual Add, activation, Erf-GELU) in an unfused graph,
//     becomes ONE primitive with eltwise/binary post-ops;
//   - an Erf-GELU subgraph (5 nodes with the exact constants) is one eltwise;
//   - other Fused regions run their body as a nested program;
//   - anything else runs the reference interpreter's kernel (the fallback).
// Activations stay in plain layouts (NCHW, or NHWC inside "nhwc" regions), so
// no reorders happen at run time. run() executes the steps over a slot table,
// freeing each intermediate after its last use.
//
// The residual Add is a binary post-op (src1 = the residual), not a sum
// post-op: sum accumulates into dst, which would need dst to be the
// residual's own buffer, and friction tensors share storage (a Reshape's
// output aliases its input), so overwriting it in place is not known to be safe.
#include "vendor_bridge/OnednnBackend.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <list>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/Patterns.h"
#include "ir/Uses.h"
#include "ir/ops/NnShapes.h"
#include "runtime/SlotProgram.h"
#include "runtime/interp/KernelRegistry.h"
#include "vendor_bridge/Bridges.h"

namespace friction::vendor {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kInference = dnnl::prop_kind::forward_inference;

struct Options {
  bool postops = true;
  int threads = 0;  // 0: OpenMP's default
};

// Thrown while drafting a primitive for something without an exact mapping.
struct Unmapped {};
void need(bool ok) {
  if (!ok) throw Unmapped{};
}

struct Context {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// ---------------------------------------------------------------------------
// Programs: steps over a slot table.

struct Program;

struct RtArg {
  int arg;  // DNNL_ARG_*
  int in;   // index into Step::in
  memory::desc md;
};

struct Step : SlotStep {
  enum Kind { Prim, Interp, Sub } kind = Interp;
  const Node* node = nullptr;
  dnnl::primitive prim;
  std::vector<RtArg> rt;
  std::vector<std::pair<int, memory>> fixed;  // compile-time memory (weights, constant operands)
  memory::desc dstMd;
  std::vector<int64_t> outShape;
  const interp::Kernel* interpKernel = nullptr;
  std::unique_ptr<Program> sub;
};

struct Program : SlotProgram<Step> {
  std::vector<Tensor> run(Context& ctx, const std::vector<Tensor>& inputs) const;
};

Tensor runPrimitive(Context& ctx, const Step& s, const std::vector<Tensor>& env) {
  std::unordered_map<int, memory> args;
  for (const auto& [arg, m] : s.fixed) args.emplace(arg, m);
  for (const RtArg& a : s.rt) {
    const Tensor& t = env[size_t(s.in[size_t(a.in)])];
    FRICTION_CHECK(t.defined() && t.dtype() == DType::F32 && size_t(t.numel()) * 4 == a.md.get_size(),
                   "onednn: " + s.node->describe() + ": input is " + (t.defined() ? t.type().str() : "absent") +
                       ", the primitive was built for another shape");
    args.emplace(a.arg, memory(a.md, ctx.eng, const_cast<void*>(t.rawData())));
  }
  Tensor out(DType::F32, s.outShape);
  args.emplace(DNNL_ARG_DST, memory(s.dstMd, ctx.eng, out.rawData()));
  s.prim.execute(ctx.strm, args);
  ctx.strm.wait();
  return out;
}

std::vector<Tensor> Program::run(Context& ctx, const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> env = initialSlots(inputs), args, outs;
  for (const Step& s : steps) {
    if (s.kind == Step::Prim) {
      outs.assign(1, runPrimitive(ctx, s, env));
    } else {
      args.clear();
      for (int slot : s.in) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
      outs = s.kind == Step::Sub ? s.sub->run(ctx, args) : (*s.interpKernel)(*s.node, args);
    }
    finishStep(s, outs, env);
  }
  return results(env, "onednn");
}

// ---------------------------------------------------------------------------
// Graph helpers.

bool isOp(const Node* n, const char* op) { return n && n->op() == op; }

bool staticF32(const Value* v) { return v && v->dtype() == DType::F32 && v->shape().hasRank() && v->shape().isStatic(); }

memory::dims dimsOf(const Value* v) {
  std::vector<int64_t> d = v->shape().staticDims();
  if (d.empty()) d = {1};
  return memory::dims(d.begin(), d.end());
}

Tag plainTag(size_t rank) {
  static const Tag tags[] = {Tag::a, Tag::a, Tag::ab, Tag::abc, Tag::abcd, Tag::abcde, Tag::abcdef};
  need(rank <= 6);
  return tags[rank];
}

// A value bound at run time (or a constant), viewed as `dims` in layout `tag`.
struct Operand {
  const Value* v = nullptr;
  memory::dims dims;
  Tag tag = Tag::undef;
  memory::dims strides;  // instead of `tag` when not empty (a permuted view)
  memory::desc md() const { return strides.empty() ? memory::desc(dims, kF32, tag) : memory::desc(dims, kF32, strides); }
};

// How the values of one graph map to the program's: region bodies bind their
// inputs to the Fused node's inputs; constants are known at compile time.
struct Scope {
  const std::unordered_map<const Value*, const Value*>* subst = nullptr;
  const std::unordered_map<const Value*, Tensor>* consts = nullptr;
  const Value* outer(const Value* v) const {
    if (subst) {
      auto it = subst->find(v);
      if (it != subst->end()) return it->second;
    }
    return v;
  }
  const Tensor* constOf(const Value* v) const {
    if (!v) return nullptr;
    if (consts) {
      auto it = consts->find(v);
      if (it != consts->end()) return &it->second;
    }
    v = outer(v);
    if (v->isConstant()) return &v->constant();
    if (consts) {
      auto it = consts->find(v);
      if (it != consts->end()) return &it->second;
    }
    return nullptr;
  }
};

std::optional<float> scalarConst(const Scope& sc, const Value* v) {
  const Tensor* t = sc.constOf(v);
  if (!t || t->numel() != 1 || t->dtype() != DType::F32) return std::nullopt;
  return t->data<float>()[0];
}

// ---------------------------------------------------------------------------
// Post-ops.

struct Post {
  enum Kind { Eltwise, Binary } kind = Eltwise;
  algorithm alg = algorithm::undef;
  float alpha = 0, beta = 0;
  Operand src1;                     // Binary: its view in the primitive's dst dims
  const Tensor* constant = nullptr;  // Binary with a compile-time operand
};

// A primitive under construction.
struct Draft {
  dnnl::primitive prim;
  std::vector<std::pair<int, Operand>> rt;
  std::vector<std::pair<int, memory>> fixed;
  memory::desc dst;
  std::string kind;
  int postOps = 0, reorders = 0;
  int fusedNodes = 0;  // epilogue nodes folded into this primitive (bias and post-ops)
};

memory constMemory(Context& ctx, const Tensor& t, const memory::desc& md) {
  need(t.dtype() == DType::F32 && size_t(t.numel()) * 4 == md.get_size());
  memory m(md, ctx.eng);
  std::memcpy(m.get_data_handle(), t.rawData(), md.get_size());
  return m;
}

// A constant in `plain`, reordered to `want` when the primitive chose another format.
memory reordered(Context& ctx, const Tensor& t, const memory::desc& plain, const memory::desc& want, Draft& d) {
  memory src = constMemory(ctx, t, plain);
  if (want == plain) return src;
  memory dst(want, ctx.eng);
  dnnl::reorder(src, dst).execute(ctx.strm, src, dst);
  ctx.strm.wait();
  d.reorders++;
  return dst;
}

// Binds the weights: a constant once, reordered to the primitive's choice;
// otherwise the run-time operand in its plain layout.
void bindWeights(Context& ctx, Draft& d, const Tensor* constant, const Operand& plain, const memory::desc& want) {
  if (constant)
    d.fixed.emplace_back(DNNL_ARG_WEIGHTS, reordered(ctx, *constant, plain.md(), want, d));
  else
    d.rt.emplace_back(DNNL_ARG_WEIGHTS, plain);
}

dnnl::primitive_attr attrWith(const std::vector<Post>& posts, Context& ctx, Draft& d) {
  dnnl::post_ops po;
  for (size_t i = 0; i < posts.size(); ++i) {
    const Post& p = posts[i];
    if (p.kind == Post::Eltwise) {
      po.append_eltwise(1.f, p.alg, p.alpha, p.beta);
    } else {
      po.append_binary(p.alg, p.src1.md());
      int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(int(i)) | DNNL_ARG_SRC_1;
      if (p.constant)
        d.fixed.emplace_back(arg, constMemory(ctx, *p.constant, p.src1.md()));
      else
        d.rt.emplace_back(arg, p.src1);
    }
  }
  d.postOps = int(posts.size());
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  return attr;
}

// Eltwise algorithm of a unary node, when one matches the ONNX op exactly.
std::optional<Post> eltwiseOf(const Node& n, const Scope& sc) {
  const std::string& op = n.op();
  Post p;
  auto set = [&](algorithm a, float alpha = 0, float beta = 0) {
    p.alg = a, p.alpha = alpha, p.beta = beta;
    return p;
  };
  if (op == "Relu") return set(algorithm::eltwise_relu);
  if (op == "LeakyRelu") return set(algorithm::eltwise_relu, n.attrFloat("alpha", 0.01f));
  if (op == "Sigmoid") return set(algorithm::eltwise_logistic);
  if (op == "Tanh") return set(algorithm::eltwise_tanh);
  if (op == "Elu") return set(algorithm::eltwise_elu, n.attrFloat("alpha", 1.0f));
  if (op == "Exp") return set(algorithm::eltwise_exp);
  if (op == "Log") return set(algorithm::eltwise_log);
  if (op == "Sqrt") return set(algorithm::eltwise_sqrt);
  if (op == "Abs") return set(algorithm::eltwise_abs);
  if (op == "Neg") return set(algorithm::eltwise_linear, -1.f, 0.f);
  if (op == "Softplus") return set(algorithm::eltwise_soft_relu);
  if (op == "HardSwish") return set(algorithm::eltwise_hardswish);
  if (op == "Reciprocal") return set(algorithm::eltwise_pow, 1.f, -1.f);
  if (op == "Clip") {
    float lo = -INFINITY, hi = INFINITY;
    if (n.hasAttr("min") || n.hasAttr("max")) {  // opset < 11
      lo = n.attrFloat("min", lo), hi = n.attrFloat("max", hi);
    } else {
      if (n.input(1)) {
        auto v = scalarConst(sc, n.input(1));
        if (!v) return std::nullopt;
        lo = *v;
      }
      if (n.input(2)) {
        auto v = scalarConst(sc, n.input(2));
        if (!v) return std::nullopt;
        hi = *v;
      }
    }
    return set(algorithm::eltwise_clip_v2, lo, hi);
  }
  return std::nullopt;
}

std::optional<algorithm> binaryOf(const std::string& op) {
  if (op == "Add") return algorithm::binary_add;
  if (op == "Sub") return algorithm::binary_sub;
  if (op == "Mul") return algorithm::binary_mul;
  if (op == "Div") return algorithm::binary_div;
  if (op == "Max") return algorithm::binary_max;
  if (op == "Min") return algorithm::binary_min;
  return std::nullopt;
}
bool commutative(algorithm a) {
  return a == algorithm::binary_add || a == algorithm::binary_mul || a == algorithm::binary_max ||
         a == algorithm::binary_min;
}

// An Erf-GELU (ir/Patterns.h) with exactly GELU's constants: its 5 nodes
// (the last produces y), or empty.
std::vector<const Node*> matchGelu(const UseIndex& u, const Scope& sc, const Value* x) {
  GeluMatch m = matchErfGelu(u, x, [&](const Value* v) { return sc.constOf(v); });
  if (!m.exact) return {};
  return {m.nodes.begin(), m.nodes.end()};
}

// ---------------------------------------------------------------------------
// Primitive drafts. Each throws Unmapped (or dnnl::error) when it has no exact mapping.

class Drafter {
 public:
  explicit Drafter(Context& ctx) : ctx_(ctx) {}

  // Conv on `src` (logical NC[D]HW dims in layout src.tag) into dst dims/tag.
  // `extraBias` (per output channel) is added as the primitive's bias when the node has none.
  Draft conv(const Node& n, const Scope& sc, Operand src, memory::dims dstDims, Tag dstTag, const std::vector<Post>& posts,
             const Tensor* extraBias = nullptr) {
    need(n.op() == "Conv" && n.numOutputs() == 1);
    const Value *x = n.input(0), *w = n.input(1), *b = n.input(2);
    need(staticF32(x) && staticF32(w) && (!b || staticF32(b)) && staticF32(n.output(0)));
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

  // MatMul with numpy batch broadcasting (ranks >= 2).
  Draft matmul(const Node& n, const Scope& sc, const std::vector<Post>& posts) {
    need(n.op() == "MatMul" && n.numOutputs() == 1);
    const Value *a = n.input(0), *b = n.input(1), *y = n.output(0);
    need(staticF32(a) && staticF32(b) && staticF32(y));
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

  // Gemm: transposes as strided views; C as the matmul bias (beta folded when C is constant).
  Draft gemm(const Node& n, const Scope& sc, const std::vector<Post>& posts) {
    need(n.op() == "Gemm" && n.numOutputs() == 1);
    const Value *a = n.input(0), *b = n.input(1), *c = n.input(2), *y = n.output(0);
    need(staticF32(a) && staticF32(b) && staticF32(y) && (!c || staticF32(c)));
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

  // MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool.
  Draft pool(const Node& n, const Scope& sc, Operand src, memory::dims dstDims, Tag dstTag) {
    const std::string& op = n.op();
    need(n.numOutputs() == 1);
    const Value* x = n.input(0);
    need(staticF32(x) && staticF32(n.output(0)));
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

  // BatchNormalization (inference: the given statistics).
  Draft batchnorm(const Node& n, const Scope& sc, Operand src) {
    need(n.op() == "BatchNormalization" && n.numOutputs() == 1 && n.attrInt("training_mode", 0) == 0);
    const Value* x = n.input(0);
    need(staticF32(x) && x->shape().rank() >= 2);
    int64_t C = x->shape().staticDims()[1];
    Draft d;
    d.kind = "batch_normalization";
    memory::desc cMd({C}, kF32, Tag::a);
    int args[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (int i = 0; i < 4; ++i) {
      const Value* v = n.input(size_t(i) + 1);
      need(staticF32(v) && v->shape().numel() == C);
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

  // LayerNormalization over dims [axis, rank): viewed as 2-D {groups, len}.
  Draft layernorm(const Node& n, const Scope& sc) {
    need(n.op() == "LayerNormalization" && n.numOutputs() == 1);
    const Value *x = n.input(0), *s = n.input(1), *b = n.input(2);
    need(staticF32(x) && staticF32(s) && (!b || staticF32(b)) && x->shape().rank() >= 1);
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

  Draft softmax(const Node& n) {
    need((n.op() == "Softmax" || n.op() == "LogSoftmax") && n.numOutputs() == 1);
    const Value* x = n.input(0);
    need(staticF32(x) && x->shape().rank() >= 1);
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

  Draft eltwise(const Value* x, const Value* y, const Post& e) {
    need(staticF32(x) && staticF32(y) && x->shape() == y->shape());
    Operand src{x, dimsOf(x), plainTag(std::max<size_t>(1, x->shape().rank()))};
    Draft d;
    d.kind = "eltwise";
    dnnl::eltwise_forward::primitive_desc pd({kInference, e.alg, src.md(), e.alpha, e.beta}, ctx_.eng);
    d.rt.emplace_back(DNNL_ARG_SRC, src);
    d.prim = dnnl::eltwise_forward(pd);
    d.dst = src.md();
    return d;
  }

  // Transpose as a reorder from a permuted-strides view of the input.
  Draft transpose(const Node& n) {
    need(n.op() == "Transpose" && n.numOutputs() == 1);
    const Value *x = n.input(0), *y = n.output(0);
    need(staticF32(x) && staticF32(y) && x->shape().rank() >= 1);
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

  // Add/Sub/Mul/Div/Max/Min with numpy broadcasting: src1 broadcasts into src0's shape.
  Draft binary(const Node& n, const Scope& sc) {
    auto alg = binaryOf(n.op());
    need(alg && n.numInputs() == 2 && n.numOutputs() == 1);
    const Value *a = n.input(0), *b = n.input(1), *y = n.output(0);
    need(staticF32(a) && staticF32(b) && staticF32(y));
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

 private:
  Context& ctx_;
};

// The op inside a convert-layout "nhwc" region, or nullptr.
const Node* nhwcInner(const Node& n) {
  auto region = FusedRegion::of(n);
  return region ? region->nhwcOp() : nullptr;
}

bool isAnchorOp(const Node& n) {
  if (n.op() == "Conv" || n.op() == "MatMul" || n.op() == "Gemm") return true;
  const Node* inner = nhwcInner(n);
  return inner && inner->op() == "Conv";
}

// ---------------------------------------------------------------------------
// Program builder.

class ProgramBuilder {
 public:
  ProgramBuilder(Context& ctx, const Options& opt, OnednnStats& stats) : ctx_(ctx), drafter_(ctx), opt_(opt), stats_(stats) {}

  // `known`: values of `g` whose contents are known at compile time (a region
  // body's inputs bound to constants outside).
  std::unique_ptr<Program> build(const Graph& g, const std::unordered_map<const Value*, Tensor>& known = {}) {
    auto p = std::make_unique<Program>();
    auto slotOf = [&](const Value* v) { return p->slotOf(v); };
    std::unordered_map<const Value*, Tensor> consts = known;
    Scope sc{nullptr, &consts};
    for (const Value* v : g.inputs()) p->inputSlots.push_back(slotOf(v));
    for (const Value* v : g.initializers()) p->constants.emplace_back(slotOf(v), v->constant());
    const auto& registry = interp::KernelRegistry::instance();
    // Constant nodes are evaluated now: they cost nothing at run time.
    for (const auto& node : g.nodes()) {
      const Node& n = *node;
      if (n.op() != "Constant" || n.numInputs() != 0) continue;
      const interp::Kernel* k = registry.find("Constant");
      FRICTION_CHECK(k, "onednn: no Constant kernel");
      auto outs = (*k)(n, {});
      for (size_t o = 0; o < n.numOutputs() && o < outs.size(); ++o) {
        p->constants.emplace_back(slotOf(n.output(o)), outs[o]);
        consts[n.output(o)] = outs[o];
      }
    }
    UseIndex u(g);
    // Groups of nodes that run as one step, emitted at their last node.
    std::unordered_set<const Node*> absorbed;
    std::map<size_t, Step> deferred;
    auto defer = [&](const std::vector<const Node*>& group, Step s) {
      size_t last = 0;
      for (const Node* m : group) last = std::max(last, u.position(m)), absorbed.insert(m);
      deferred.emplace(last, std::move(s));
    };
    auto toStep = [&](const Node& n, Draft&& d, const Value* out, const Scope& scope) {
      Step s;
      s.kind = Step::Prim;
      s.node = &n;
      s.prim = std::move(d.prim);
      s.fixed = std::move(d.fixed);
      s.dstMd = d.dst;
      s.outShape = out->shape().staticDims();
      for (auto& [arg, op] : d.rt) {
        s.rt.push_back({arg, int(s.in.size()), op.md()});
        s.in.push_back(slotOf(scope.outer(op.v)));
      }
      s.out.push_back(slotOf(out));
      FRICTION_CHECK(s.dstMd.get_size() == size_t(Shape::fromStatic(s.outShape).numel().value_or(0)) * 4,
                     "onednn: " + n.describe() + ": primitive dst does not match the output");
      stats_.primitives++;
      stats_.primitiveKinds[d.kind]++;
      stats_.postOps += d.postOps;
      stats_.weightReorders += d.reorders;
      if (d.fusedNodes > 0) stats_.fusedEpilogues++;
      return s;
    };
    // 1. Epilogue chains in the unfused graph (postops=on).
    if (opt_.postops) {
      for (const auto& node : g.nodes()) {
        const Node& a = *node;
        if (absorbed.count(&a) || !isAnchorOp(a) || a.numOutputs() != 1) continue;
        std::vector<const Node*> chain = chainAfter(u, sc, a, absorbed);
        std::optional<Draft> d;
        // The longest prefix of the chain that oneDNN accepts (e.g. a broadcast it cannot post-op).
        for (; !chain.empty(); chain.pop_back())
          if ((d = tryDraft([&] { return anchorWithChain(a, chain, u, sc, sc); }))) break;
        if (!d) continue;
        std::vector<const Node*> group = {&a};
        group.insert(group.end(), chain.begin(), chain.end());
        defer(group, toStep(a, std::move(*d), chain.back()->output(0), sc));
      }
    }
    // 2. Erf-GELU subgraphs: one eltwise each.
    for (const auto& node : g.nodes())
      for (const Value* x : node->inputs()) {
        if (!x || absorbed.count(node.get())) continue;
        auto gelu = matchGelu(u, sc, x);
        bool free = !gelu.empty();
        for (const Node* m : gelu) free = free && !absorbed.count(m);
        if (!free) continue;
        Post e;
        e.alg = algorithm::eltwise_gelu_erf;
        const Value* y = gelu.back()->output(0);
        std::optional<Draft> d = tryDraft([&] { return drafter_.eltwise(x, y, e); });
        if (d) defer(gelu, toStep(*gelu.back(), std::move(*d), y, sc));
      }
    // 3. Everything else, in order.
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = *g.nodes()[i];
      if (n.op() == "Constant" && n.numInputs() == 0) continue;
      if (absorbed.count(&n)) {
        auto it = deferred.find(i);
        if (it != deferred.end()) p->steps.push_back(std::move(it->second));
        continue;
      }
      std::optional<Step> s;
      if (n.op() == "Fused") {
        s = fusedStep(n, sc, toStep, slotOf, consts);
      } else if (std::optional<Draft> d = tryDraft([&] { return single(n, sc); })) {
        s = toStep(n, std::move(*d), n.output(0), sc);
      }
      if (!s) {
        s.emplace();
        s->kind = Step::Interp;
        s->node = &n;
        s->interpKernel = registry.find(n.op());
        FRICTION_CHECK(s->interpKernel, "onednn: no kernel for op '" + n.op() + "' (node '" + n.name() + "')");
        for (const Value* v : n.inputs()) s->in.push_back(v ? slotOf(v) : -1);
        for (const Value* v : n.outputs()) s->out.push_back(slotOf(v));
        stats_.fallbackNodes++;
        stats_.fallbackOps[n.op()]++;
      }
      p->steps.push_back(std::move(*s));
    }
    for (const Value* v : g.outputs()) p->outputSlots.push_back(slotOf(v));
    p->computeReleases();
    return p;
  }

 private:
  template <typename F>
  std::optional<Draft> tryDraft(F&& f) {
    try {
      return f();
    } catch (const Unmapped&) {
    } catch (const dnnl::error&) {
    } catch (const Error&) {
    }
    return std::nullopt;
  }

  // One node as one primitive (plain layouts).
  Draft single(const Node& n, const Scope& sc) {
    for (const Value* v : n.outputs()) need(staticF32(v));
    const std::string& op = n.op();
    if (op == "Conv") {
      const Value* x = n.input(0);
      need(staticF32(x));
      return drafter_.conv(n, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())}, dimsOf(n.output(0)),
                           plainTag(n.output(0)->shape().rank()), {});
    }
    if (op == "MatMul") return drafter_.matmul(n, sc, {});
    if (op == "Gemm") return drafter_.gemm(n, sc, {});
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      const Value* x = n.input(0);
      need(staticF32(x));
      return drafter_.pool(n, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())}, dimsOf(n.output(0)),
                           plainTag(n.output(0)->shape().rank()));
    }
    if (op == "BatchNormalization") {
      const Value* x = n.input(0);
      need(staticF32(x));
      return drafter_.batchnorm(n, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())});
    }
    if (op == "LayerNormalization") return drafter_.layernorm(n, sc);
    if (op == "Softmax" || op == "LogSoftmax") return drafter_.softmax(n);
    if (op == "Transpose") return drafter_.transpose(n);
    if (binaryOf(op)) return drafter_.binary(n, sc);
    if (auto e = eltwiseOf(n, sc)) return drafter_.eltwise(n.input(0), n.output(0), *e);
    throw Unmapped{};
  }

  // A convert-layout region's op on channels-last memory. `sc` maps body values to the program's.
  Draft nhwcRegion(const Node& fused, const Scope& sc, const std::vector<Post>& posts, const Tensor* extraBias = nullptr) {
    const Node* op = nhwcInner(fused);
    need(op && staticF32(op->input(0)) && staticF32(op->output(0)) && op->input(0)->shape().rank() == 4);
    Operand src{FusedRegion::of(fused)->body().inputs()[0], dimsOf(op->input(0)), Tag::nhwc};
    memory::dims dst = dimsOf(op->output(0));
    if (op->op() == "Conv") return drafter_.conv(*op, sc, src, dst, Tag::nhwc, posts, extraBias);
    need(posts.empty());
    if (op->op() == "BatchNormalization") return drafter_.batchnorm(*op, sc, src);
    return drafter_.pool(*op, sc, src, dst, Tag::nhwc);
  }

  // Substitution of a region body's inputs by the Fused node's inputs (as seen through `outer`).
  static std::unordered_map<const Value*, const Value*> bodyBinding(const Node& fused, const Scope& outer) {
    const Graph& body = FusedRegion::of(fused)->body();
    std::unordered_map<const Value*, const Value*> m;
    for (size_t i = 0; i < body.inputs().size() && i < fused.numInputs(); ++i)
      m[body.inputs()[i]] = outer.outer(fused.input(i));
    return m;
  }

  // An inference BatchNormalization with constant parameters after a convolution:
  // per-channel y = x * a + b, i.e. a binary mul and a binary add post-op.
  static bool isBatchNormAfterConv(const Node& n, const Node& anchor, const Scope& sc) {
    if (n.op() != "BatchNormalization" || n.numOutputs() != 1 || n.attrInt("training_mode", 0) != 0) return false;
    if (anchor.op() != "Conv") return false;
    for (size_t i = 1; i < 5; ++i)
      if (!sc.constOf(n.input(i))) return false;
    return true;
  }

  // The single-use chain after an anchor that post-ops can express.
  std::vector<const Node*> chainAfter(const UseIndex& u, const Scope& sc, const Node& anchor,
                                      const std::unordered_set<const Node*>& taken) {
    std::vector<const Node*> chain;
    const Value* cur = anchor.output(0);
    for (;;) {
      const Node* next = u.soleUser(cur);
      if (next && taken.count(next)) break;  // another anchor's chain has it (a residual Add)
      if (next && next->numOutputs() == 1 && staticF32(next->output(0)) && next->output(0)->shape() == cur->shape()) {
        bool add = next->op() == "Add" && next->numInputs() == 2 && next->input(0) != next->input(1);
        bool act = next->input(0) == cur && eltwiseOf(*next, sc).has_value();
        bool bn = isBatchNormAfterConv(*next, anchor, sc);
        if (add || act || bn) {
          chain.push_back(next);
          cur = next->output(0);
          continue;
        }
      }
      if (u.isGraphOutput(cur)) break;  // the GELU's input must not be a graph output: it is never materialized
      auto gelu = matchGelu(u, sc, cur);
      if (gelu.empty()) break;
      for (const Node* m : gelu)
        if (taken.count(m)) return chain;
      chain.insert(chain.end(), gelu.begin(), gelu.end());
      cur = gelu.back()->output(0);
    }
    return chain;
  }

  // The anchor (Conv, MatMul, Gemm or an NHWC conv region) with `chain` as post-ops.
  // `sc` maps the anchor's graph's values to the program's; `anchorScope` is what the
  // anchor's own operands resolve through (differs for an NHWC region).
  Draft anchorWithChain(const Node& anchor, const std::vector<const Node*>& chain, const UseIndex& u, const Scope& sc,
                        const Scope& /*unused*/) {
    const Node* inner = nhwcInner(anchor);
    bool nhwc = inner != nullptr;
    const Value* out = anchor.output(0);
    need(staticF32(out));
    size_t rank = out->shape().rank();
    need(rank >= 1 && (!nhwc || rank == 4));
    bool isConv = anchor.op() == "Conv" || nhwc;
    // The primitive's dst dims: logical (NCHW for an NHWC region).
    auto view = [&](const Value* v) {
      auto s = v->shape().staticDims();
      need(s.size() <= rank);
      s.insert(s.begin(), rank - s.size(), 1);
      if (nhwc) s = {s[0], s[3], s[1], s[2]};
      return Operand{v, memory::dims(s.begin(), s.end()), nhwc ? Tag::nhwc : plainTag(rank)};
    };
    std::vector<Post> posts;
    const Tensor* extraBias = nullptr;
    Tensor biasStore;
    std::list<Tensor> bnStore;  // folded BatchNormalization factors (copied into post-op memory)
    bool anchorHasBias = nhwc ? inner->input(2) != nullptr : anchor.input(2) != nullptr;
    const Value* cur = out;
    for (size_t k = 0; k < chain.size();) {
      const Node& n = *chain[k];
      if (n.op() == "Add" && n.numInputs() == 2 && (n.input(0) == cur || n.input(1) == cur) && n.input(0) != n.input(1) &&
          n.output(0)->shape() == cur->shape()) {
        const Value* other = n.input(0) == cur ? n.input(1) : n.input(0);
        need(staticF32(other));
        Operand o = view(other);
        const Tensor* c = sc.constOf(other);
        // A per-channel constant first in a conv's chain is the primitive's bias.
        int64_t channels = o.dims[1];
        bool perChannel = c && isConv && posts.empty() && !anchorHasBias && !extraBias;
        for (size_t i = 0; perChannel && i < o.dims.size(); ++i) perChannel = i == 1 || o.dims[i] == 1;
        if (perChannel) {
          int64_t C = view(out).dims[1];
          need(c->numel() == C || c->numel() == 1);
          biasStore = Tensor(DType::F32, {C});
          for (int64_t j = 0; j < C; ++j) biasStore.data<float>()[j] = c->data<float>()[c->numel() == 1 ? 0 : j];
          extraBias = &biasStore;
          (void)channels;
        } else {
          Post p;
          p.kind = Post::Binary;
          p.alg = algorithm::binary_add;
          p.src1 = o;
          p.constant = c;
          posts.push_back(p);
        }
        cur = n.output(0);
        k++;
        continue;
      }
      if (n.input(0) == cur && n.op() == "BatchNormalization") {
        // Only in a raw graph: the node runs in the anchor's layout (NCHW, channel axis 1).
        need(isConv && !nhwc && isBatchNormAfterConv(n, anchor, sc));
        int64_t C = view(out).dims[1];
        const Tensor *scale = sc.constOf(n.input(1)), *shift = sc.constOf(n.input(2)), *mean = sc.constOf(n.input(3)),
                     *var = sc.constOf(n.input(4));
        need(scale->numel() == C && shift->numel() == C && mean->numel() == C && var->numel() == C);
        float eps = n.attrFloat("epsilon", 1e-5f);
        bnStore.emplace_back(DType::F32, std::vector<int64_t>{C});
        Tensor& a = bnStore.back();
        bnStore.emplace_back(DType::F32, std::vector<int64_t>{C});
        Tensor& b = bnStore.back();
        for (int64_t j = 0; j < C; ++j) {
          double inv = 1.0 / std::sqrt(double(var->data<float>()[j]) + double(eps));
          a.data<float>()[j] = float(double(scale->data<float>()[j]) * inv);
          b.data<float>()[j] = float(double(shift->data<float>()[j]) - double(mean->data<float>()[j]) * double(scale->data<float>()[j]) * inv);
        }
        memory::dims cd(rank, 1);
        cd[1] = C;
        for (auto [alg, t] : {std::pair{algorithm::binary_mul, &a}, std::pair{algorithm::binary_add, &b}}) {
          Post p;
          p.kind = Post::Binary;
          p.alg = alg;
          p.src1 = Operand{nullptr, cd, plainTag(rank)};
          p.constant = t;
          posts.push_back(p);
        }
        cur = n.output(0);
        k++;
        continue;
      }
      if (n.input(0) == cur) {
        if (auto e = eltwiseOf(n, sc)) {
          posts.push_back(*e);
          cur = n.output(0);
          k++;
          continue;
        }
      }
      auto gelu = matchGelu(u, sc, cur);
      need(!gelu.empty() && k + gelu.size() <= chain.size());
      for (size_t j = 0; j < gelu.size(); ++j) need(chain[k + j] == gelu[j]);
      Post e;
      e.alg = algorithm::eltwise_gelu_erf;
      posts.push_back(e);
      cur = gelu.back()->output(0);
      k += gelu.size();
    }
    need(posts.size() + (extraBias ? 1 : 0) == 0 || cur->shape() == out->shape());
    Draft d;
    if (nhwc) {
      auto binding = bodyBinding(anchor, sc);
      Scope inner_{&binding, sc.consts};
      d = nhwcRegion(anchor, inner_, posts, extraBias);
      // Operands of the region body resolve to the program's values now.
      for (auto& [arg, op] : d.rt) op.v = inner_.outer(op.v);
    } else if (anchor.op() == "Conv") {
      const Value* x = anchor.input(0);
      need(staticF32(x));
      d = drafter_.conv(anchor, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())}, dimsOf(out), plainTag(rank),
                        posts, extraBias);
    } else {
      need(!extraBias);
      d = anchor.op() == "MatMul" ? drafter_.matmul(anchor, sc, posts) : drafter_.gemm(anchor, sc, posts);
    }
    d.fusedNodes = int(chain.size());
    return d;
  }

  template <typename ToStep, typename SlotOf>
  std::optional<Step> fusedStep(const Node& n, const Scope& sc, ToStep& toStep, SlotOf& slotOf,
                                const std::unordered_map<const Value*, Tensor>& consts) {
    auto region = FusedRegion::of(n);
    RegionKind kind = region->kind();
    const Graph& body = region->body();
    auto binding = bodyBinding(n, sc);
    Scope bodyScope{&binding, sc.consts};
    if (kind == RegionKind::Nhwc && n.numOutputs() == 1) {
      if (auto d = tryDraft([&] { return nhwcRegion(n, bodyScope, {}); })) {
        for (auto& [arg, op] : d->rt) op.v = bodyScope.outer(op.v);
        return toStep(n, std::move(*d), n.output(0), sc);
      }
    }
    if (kind == RegionKind::Epilogue && opt_.postops && n.numOutputs() == 1 && !body.nodes().empty()) {
      UseIndex bu(body);
      const Node& anchor = *body.nodes()[0];
      std::vector<const Node*> chain;
      for (size_t i = 1; i < body.nodes().size(); ++i) chain.push_back(body.nodes()[i].get());
      bool shape = isAnchorOp(anchor) && body.outputs().size() == 1 &&
                   body.outputs()[0] == (chain.empty() ? anchor.output(0) : chain.back()->output(0));
      if (shape) {
        if (auto d = tryDraft([&] { return anchorWithChain(anchor, chain, bu, bodyScope, bodyScope); })) {
          for (auto& [arg, op] : d->rt) op.v = bodyScope.outer(op.v);
          return toStep(n, std::move(*d), n.output(0), sc);
        }
      }
    }
    // The body node by node; its inputs bound to constants stay known.
    Step s;
    s.kind = Step::Sub;
    s.node = &n;
    std::unordered_map<const Value*, Tensor> known;
    for (size_t i = 0; i < body.inputs().size() && i < n.numInputs(); ++i)
      if (const Tensor* t = sc.constOf(n.input(i))) known[body.inputs()[i]] = *t;
    s.sub = build(body, known);
    for (const Value* v : n.inputs()) s.in.push_back(v ? slotOf(v) : -1);
    for (const Value* v : n.outputs()) s.out.push_back(slotOf(v));
    (void)consts;
    return s;
  }

  Context& ctx_;
  Drafter drafter_;
  const Options& opt_;
  OnednnStats& stats_;
};

// ---------------------------------------------------------------------------

class OnednnModel : public CompiledModel {
 public:
  OnednnModel(std::shared_ptr<Context> ctx, std::unique_ptr<Program> p, OnednnStats stats, Options opt, std::string d)
      : ctx_(std::move(ctx)), program_(std::move(p)), stats_(std::move(stats)), opt_(opt), description_(std::move(d)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    int before = omp_get_max_threads();
    if (opt_.threads > 0) omp_set_num_threads(opt_.threads);
    try {
      auto out = program_->run(*ctx_, inputs);
      if (opt_.threads > 0) omp_set_num_threads(before);
      return out;
    } catch (...) {
      if (opt_.threads > 0) omp_set_num_threads(before);
      throw;
    }
  }
  std::string description() const override { return description_; }
  const OnednnStats& stats() const { return stats_; }

 private:
  std::shared_ptr<Context> ctx_;
  std::unique_ptr<Program> program_;
  OnednnStats stats_;
  Options opt_;
  std::string description_;
};

class OnednnBackend : public Backend {
 public:
  explicit OnednnBackend(Options opt) : opt_(opt) {}
  std::string name() const override { return "onednn"; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph) override {
    auto t0 = std::chrono::steady_clock::now();
    auto ctx = std::make_shared<Context>();
    OnednnStats stats;
    int before = omp_get_max_threads();
    if (opt_.threads > 0) omp_set_num_threads(opt_.threads);  // compile-time reorders too
    std::unique_ptr<Program> program;
    try {
      program = ProgramBuilder(*ctx, opt_, stats).build(graph);
    } catch (...) {
      if (opt_.threads > 0) omp_set_num_threads(before);
      throw;
    }
    if (opt_.threads > 0) omp_set_num_threads(before);
    stats.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::string d = "oneDNN " + onednnVersion() + " {\"postops\":\"" + (opt_.postops ? "on" : "off") + "\"" +
                    (opt_.threads > 0 ? ",\"threads\":" + std::to_string(opt_.threads) : std::string()) + "}: " +
                    std::to_string(stats.primitives) + " primitives [";
    bool first = true;
    for (const auto& [k, c] : stats.primitiveKinds) {
      d += (first ? "" : ", ") + k + " x" + std::to_string(c);
      first = false;
    }
    d += "], " + std::to_string(stats.fusedEpilogues) + " with post-ops (" + std::to_string(stats.postOps) +
         " post-ops), " + std::to_string(stats.weightReorders) + " weights reordered, " +
         std::to_string(stats.fallbackNodes) + " nodes on interp fallback";
    if (!stats.fallbackOps.empty()) {
      d += " [";
      first = true;
      for (const auto& [op, c] : stats.fallbackOps) {
        d += (first ? "" : ", ") + op + " x" + std::to_string(c);
        first = false;
      }
      d += "]";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "; compile %.0f ms", stats.compileMs);
    d += buf;
    return std::make_unique<OnednnModel>(std::move(ctx), std::move(program), std::move(stats), opt_, std::move(d));
  }

 private:
  Options opt_;
};

Options parseOptions(const std::map<std::string, std::string>& o) {
  Options opt;
  for (const auto& [k, v] : o) {
    if (k == "postops") {
      FRICTION_CHECK(v == "on" || v == "off", "onednn: postops must be on or off, got '" + v + "'");
      opt.postops = v == "on";
    } else if (k == "threads") {
      char* end = nullptr;
      long t = std::strtol(v.c_str(), &end, 10);
      FRICTION_CHECK(!v.empty() && *end == 0 && t >= 1 && t <= 1024, "onednn: threads must be a positive integer, got '" + v + "'");
      opt.threads = int(t);
    } else {
      throw Error("backend onednn: unknown option '" + k + "' (options: postops=on|off, threads=N)");
    }
  }
  return opt;
}

}  // namespace

std::string onednnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

const OnednnStats* onednnStats(const CompiledModel& model) {
  auto* m = dynamic_cast<const OnednnModel*>(&model);
  return m ? &m->stats() : nullptr;
}

void registerOnednnBackend() {
  registerBackend("onednn", [](const std::map<std::string, std::string>& o) -> std::unique_ptr<Backend> {
    return std::make_unique<OnednnBackend>(parseOptions(o));
  });
}

}  // namespace friction::vendor
