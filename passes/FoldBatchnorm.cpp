// fold-batchnorm: an inference BatchNormalization y = s·x + t, with
// s = γ/√(var+ε) and t = β - mean·s per channel, folds into the Conv,
// ConvTranspose, Gemm or MatMul (rank-2, constant weight) that feeds it when
// that producer has no other use: w' = w·s per output channel and
// b' = b·s + t. A MatMul has no bias input, so its BN becomes Add(·, t).
// Any other inference BN with constant parameters (after a Concat, a pool, a
// conv with other uses) becomes Mul(x, s) and Add(·, t), which
// fuse-elementwise can merge with its neighbours.
//
// Rounding: s, t, w' and b' are computed in double and rounded once to the
// weights' dtype. The unfolded graph rounds the conv result and then each BN
// step in that dtype, so outputs differ by a few ulps per layer (tests
// compare at 1e-4 relative).
#include <cmath>
#include <functional>
#include <optional>
#include <unordered_set>

#include "ir/OpRegistry.h"
#include "passes/PassUtil.h"
#include "passes/Regions.h"

namespace friction {
namespace {

const Tensor* floatConstant(const Value* v) {
  const Tensor* t = constantData(v);
  return t && isFloat(t->dtype()) ? t : nullptr;
}

struct Affine {
  std::vector<double> s, t;
};

// The BN as a per-channel affine map, when its parameters are constants.
std::optional<Affine> bnAffine(const Node& bn) {
  if (bn.attrInt("training_mode", 0) != 0 || bn.numInputs() != 5) return std::nullopt;
  std::vector<std::vector<double>> p;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = floatConstant(bn.input(i));
    if (!t || t->rank() != 1) return std::nullopt;
    p.push_back(t->toDoubleVector());
    if (p.back().size() != p[0].size()) return std::nullopt;
  }
  double eps = bn.attrFloat("epsilon", 1e-5f);
  Affine a;
  for (size_t c = 0; c < p[0].size(); ++c) {
    double s = p[0][c] / std::sqrt(p[3][c] + eps);
    a.s.push_back(s);
    a.t.push_back(p[1][c] - p[2][c] * s);
  }
  return a;
}

Tensor fromDoubles(const std::vector<double>& v, std::vector<int64_t> shape, DType dtype) {
  return Tensor::fromVector<double>(DType::F64, std::move(shape), v).castTo(dtype);
}

// How weight elements map to output channels: element i feeds channel
// of(i), constant over runs of `run` consecutive elements.
struct ChannelMap {
  std::function<size_t(int64_t)> of;
  int64_t run = 1;
};

// The map for the supported producers; `of` is empty when the weight does not fit.
ChannelMap channelOf(const Node& p, const Tensor& w, size_t channels) {
  auto C = int64_t(channels);
  if (p.op() == "Conv" && w.rank() >= 3 && w.dim(0) == C) {
    int64_t inner = w.numel() / C;
    return {[inner](int64_t i) { return size_t(i / inner); }, inner};
  }
  if (p.op() == "ConvTranspose" && w.rank() >= 3) {
    // w is [Cin, Cout/group, k...]; output channel = group index · Cout/group + j.
    int64_t group = p.attrInt("group", 1), per = w.dim(1), cin = w.dim(0);
    if (group * per != C || cin % group) return {};
    int64_t spatial = w.numel() / (cin * per), cinPerGroup = cin / group;
    return {[=](int64_t i) { return size_t((i / (spatial * per)) / cinPerGroup * per + (i / spatial) % per); }, spatial};
  }
  bool gemm = p.op() == "Gemm", matmul = p.op() == "MatMul";
  if ((gemm || matmul) && w.rank() == 2 && p.output(0)->shape().rank() == 2) {
    if (gemm && p.attrInt("transB", 0)) {
      if (w.dim(0) != C) return {};
      int64_t k = w.dim(1);
      return {[k](int64_t i) { return size_t(i / k); }, k};
    }
    if (w.dim(1) != C) return {};
    return {[C](int64_t i) { return size_t(i % C); }, 1};
  }
  return {};
}

// w·s[channel] per element, in double, rounded once to w's dtype. f32 (all
// the zoo and PyTorch weights) takes a direct loop: ResNet-50 has 25M weights.
Tensor scaleWeight(const Tensor& w, const ChannelMap& map, const std::vector<double>& s) {
  if (w.dtype() == DType::F32) {
    Tensor out(DType::F32, w.shape());
    const float* src = w.data<float>();
    float* dst = out.data<float>();
    for (int64_t i = 0; i < w.numel(); i += map.run) {
      double scale = s[map.of(i)];
      for (int64_t j = i; j < i + map.run; ++j) dst[j] = float(double(src[j]) * scale);
    }
    return out;
  }
  std::vector<double> v = w.toDoubleVector();
  for (int64_t i = 0; i < int64_t(v.size()); ++i) v[size_t(i)] *= s[map.of(i)];
  return fromDoubles(v, w.shape(), w.dtype());
}

// bn, in place, as Add(x, shift).
void becomeAdd(Node& bn, Value* x, Value* shift) {
  bn.setInputs({x, shift});
  for (const char* attr : {"epsilon", "momentum", "training_mode"}) bn.removeAttr(attr);
  bn.setOp("Add");
  inferNode(bn);
}

// Folds bn (affine a) into its producer p's weights and bias; false, with nothing changed, where p's weights do not
// fit. A MatMul has no bias input: bn becomes the bias Add. Otherwise bn goes: replace maps its output to p's.
bool foldIntoProducer(Graph& g, Node& p, Node& bn, const Affine& a, std::unordered_map<const Value*, Value*>& replace,
                      std::unordered_set<const Value*>& oldParams) {
  const Tensor* w = floatConstant(p.input(1));
  if (!w) return false;
  auto channel = channelOf(p, *w, a.s.size());
  if (!channel.of) return false;

  // The existing bias, as a per-channel vector (Gemm's C scaled by beta).
  size_t C = a.s.size();
  std::vector<double> b(C, 0.0);
  bool gemm = p.op() == "Gemm";
  if (p.op() != "MatMul" && p.input(2)) {
    const Tensor* bias = floatConstant(p.input(2));
    if (!bias || !(bias->numel() == int64_t(C) || bias->numel() == 1)) return false;
    if (bias->numel() == int64_t(C) && bias->rank() > 1 && bias->dim(-1) != int64_t(C)) return false;
    std::vector<double> bv = bias->toDoubleVector();
    double beta = gemm ? p.attrFloat("beta", 1.0f) : 1.0;
    for (size_t c = 0; c < C; ++c) b[c] = beta * bv[bv.size() == 1 ? 0 : c];
  }

  std::vector<double> bv(C);
  for (size_t c = 0; c < C; ++c) bv[c] = b[c] * a.s[c] + a.t[c];
  DType dt = w->dtype();
  for (size_t i = 1; i < 5; ++i) oldParams.insert(bn.input(i));
  oldParams.insert(p.input(1));
  p.setInput(1, g.addInitializer(g.freshName(p.input(1)->name() + ".bnfolded"), scaleWeight(*w, channel, a.s)));
  Value* bias = g.addInitializer(g.freshName(bn.name() + ".folded_bias"), fromDoubles(bv, {int64_t(C)}, dt));
  if (p.op() == "MatMul") {
    becomeAdd(bn, bn.input(0), bias);
  } else {
    p.padInputs(3);
    if (p.input(2)) oldParams.insert(p.input(2));
    p.setInput(2, bias);
    if (gemm) p.setAttr("beta", 1.0f);
    replace[bn.output(0)] = p.output(0);
  }
  inferNode(p);
  return true;
}

// A BatchNormalization with no producer to fold into (DenseNet's, after a Concat) becomes y = x·s + t as a
// per-channel Mul and Add, constants of shape [C, 1, ...] in x's dtype: fuse-elementwise then merges them with
// the activation that follows (one pass over x where BatchNormalization and Relu took two).
void toScaleAndShift(Graph& g, Node& bn, const Affine& a, std::unordered_set<const Value*>& oldParams) {
  const Value* x = bn.input(0);
  std::vector<int64_t> shape(x->shape().rank() - 1, 1);
  shape[0] = int64_t(a.s.size());
  Value* s = g.addInitializer(g.freshName(bn.name() + ".scale"), fromDoubles(a.s, shape, x->dtype()));
  Value* t = g.addInitializer(g.freshName(bn.name() + ".shift"), fromDoubles(a.t, shape, x->dtype()));
  for (size_t i = 1; i < 5; ++i) oldParams.insert(bn.input(i));
  const size_t mark = g.nodes().size();
  Node* mul =
      g.addNode("Mul", {bn.input(0), s}, {g.freshName(bn.output(0)->name() + ".scaled")}, {}, bn.name() + "/scale");
  inferNode(*mul);
  g.moveNodesBefore(mark, &bn);
  becomeAdd(bn, mul->output(0), t);
}

}  // namespace

void foldBatchnorm(Graph& g, PassContext& ctx) {
  UseIndex u(g);
  std::unordered_map<const Value*, Value*> replace;  // BN output -> producer output
  std::unordered_set<const Value*> oldParams;
  std::vector<std::pair<Node*, Affine>> unfolded;  // rewritten after the walk, which adding nodes would upset
  ctx.count("batchnorms folded", 0);                // reported even when 0
  for (const auto& node : g.nodes()) {
    Node& bn = *node;
    if (bn.op() != "BatchNormalization") continue;
    bool extraOutputsUsed = false;
    for (size_t i = 1; i < bn.numOutputs(); ++i)
      extraOutputsUsed |= !u.users(bn.output(i)).empty() || u.isGraphOutput(bn.output(i));
    std::optional<Affine> a = bnAffine(bn);
    const Value* x = bn.input(0);
    if (extraOutputsUsed || !a || !isFloat(x->dtype()) || x->shape().rank() < 2) continue;
    Node* p = x->producer();
    if (p && u.soleUser(x) == &bn && p->numOutputs() == 1 && foldIntoProducer(g, *p, bn, *a, replace, oldParams)) {
      ctx.count("batchnorms folded");
    } else {
      unfolded.emplace_back(&bn, std::move(*a));
    }
  }
  for (auto& [bn, a] : unfolded) {
    toScaleAndShift(g, *bn, a, oldParams);
    ctx.count("batchnorms as channel scale and shift");
  }
  if (oldParams.empty()) return;

  replaceAllUses(g, replace);
  // The BNs folded into their producer's bias (replace's keys are their outputs).
  g.eraseNodes([&](const Node& n) { return n.op() == "BatchNormalization" && replace.count(n.output(0)) > 0; });
  // The replaced weights and BN parameters, unless something else still uses them.
  UseIndex after(g);
  g.eraseInitializers([&](const Value* v) {
    return oldParams.count(v) && after.users(v).empty() && !after.isGraphOutput(v);
  });
}

}  // namespace friction
