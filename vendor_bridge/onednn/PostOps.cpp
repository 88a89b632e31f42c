#include "vendor_bridge/onednn/PostOps.h"

#include <cmath>

#include "ir/FusedRegion.h"
#include "ir/Patterns.h"

namespace friction::vendor::onednn {

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

// An inference BatchNormalization with constant parameters after a convolution:
// per-channel y = x * a + b, i.e. a binary mul and a binary add post-op.
bool isBatchNormAfterConv(const Node& n, const Node& anchor, const Scope& sc) {
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
    if (next && next->numOutputs() == 1 && isStaticF32(next->output(0)) && next->output(0)->shape() == cur->shape()) {
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

EpiloguePosts::EpiloguePosts(const Node& anchor, const std::vector<const Node*>& chain, const UseIndex& u,
                             const Scope& sc) {
  auto region = FusedRegion::of(anchor);
  const Node* inner = region ? region->nhwcOp() : nullptr;
  bool nhwc = inner != nullptr;
  const Value* out = anchor.output(0);
  need(isStaticF32(out));
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
  bool anchorHasBias = nhwc ? inner->input(2) != nullptr : anchor.input(2) != nullptr;
  const Value* cur = out;
  for (size_t k = 0; k < chain.size();) {
    const Node& n = *chain[k];
    if (n.op() == "Add" && n.numInputs() == 2 && (n.input(0) == cur || n.input(1) == cur) && n.input(0) != n.input(1) &&
        n.output(0)->shape() == cur->shape()) {
      const Value* other = n.input(0) == cur ? n.input(1) : n.input(0);
      need(isStaticF32(other));
      Operand o = view(other);
      const Tensor* c = sc.constOf(other);
      // A per-channel constant first in a conv's chain is the primitive's bias.
      bool perChannel = c && isConv && posts_.empty() && !anchorHasBias && !extraBias_;
      for (size_t i = 0; perChannel && i < o.dims.size(); ++i) perChannel = i == 1 || o.dims[i] == 1;
      if (perChannel) {
        int64_t C = view(out).dims[1];
        need(c->numel() == C || c->numel() == 1);
        biasStore_ = Tensor(DType::F32, {C});
        for (int64_t j = 0; j < C; ++j) biasStore_.data<float>()[j] = c->data<float>()[c->numel() == 1 ? 0 : j];
        extraBias_ = &biasStore_;
      } else {
        Post p;
        p.kind = Post::Binary;
        p.alg = algorithm::binary_add;
        p.src1 = o;
        p.constant = c;
        posts_.push_back(p);
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
      bnStore_.emplace_back(DType::F32, std::vector<int64_t>{C});
      Tensor& a = bnStore_.back();
      bnStore_.emplace_back(DType::F32, std::vector<int64_t>{C});
      Tensor& b = bnStore_.back();
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
        posts_.push_back(p);
      }
      cur = n.output(0);
      k++;
      continue;
    }
    if (n.input(0) == cur) {
      if (auto e = eltwiseOf(n, sc)) {
        posts_.push_back(*e);
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
    posts_.push_back(e);
    cur = gelu.back()->output(0);
    k += gelu.size();
  }
  need(posts_.size() + (extraBias_ ? 1 : 0) == 0 || cur->shape() == out->shape());
}

}  // namespace friction::vendor::onednn
