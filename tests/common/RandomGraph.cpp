#include "tests/common/RandomGraph.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::test {
namespace {

using Ints = std::vector<int64_t>;

class Generator {
 public:
  explicit Generator(uint64_t seed, Graph& g) : rng_(seed), b_(g) {}

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  T pick(const std::vector<T>& v) { return v[size_t(uniform(0, int64_t(v.size()) - 1))]; }

  Tensor randomData(const Ints& shape, float lo, float hi) {
    Tensor t(DType::F32, shape);
    std::uniform_real_distribution<float> d(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng_);
    return t;
  }
  Value* constant(const Ints& shape, float lo = -1, float hi = 1) { return b_.constant(randomData(shape, lo, hi)); }
  Value* ints(const Ints& v) { return b_.constant(Tensor::vectorI64(v)); }
  Value* op(const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {}) {
    return b_.op(op, std::move(in), std::move(attrs));
  }

  // A value of the pool, most often one of the newest (so ops chain).
  Value* operand() {
    size_t n = pool_.size();
    return coin(0.7) ? pool_[n - 1 - size_t(uniform(0, std::min<int64_t>(2, int64_t(n) - 1)))] : pick(pool_);
  }
  // Another pool value of exactly `shape`, if any.
  Value* sameShape(const Ints& shape, const Value* not_) {
    std::vector<Value*> same;
    for (Value* v : pool_)
      if (v != not_ && v->shape().staticDims() == shape) same.push_back(v);
    return same.empty() ? nullptr : pick(same);
  }

  std::vector<Value*> pool_;
  std::mt19937_64 rng_;
  GraphBuilder b_;
};

Ints dims(const Value* v) { return v->shape().staticDims(); }

// An op family: makes one op on `x` (and whatever else it draws), or returns
// nullptr when x does not suit it.
using Family = std::function<Value*(Generator&, Value*)>;

Value* activation(Generator& g, Value* x) {
  static const std::vector<std::string> ops = opsWithTrait(OpTrait::Activation);
  if (g.coin(0.15)) {  // SiLU as exporters write it (a pattern, not an op), its Mul's operands either way
    Value* s = g.op("Sigmoid", {x});
    return g.coin() ? g.op("Mul", {x, s}) : g.op("Mul", {s, x});
  }
  if (g.coin(0.1)) {  // Erf-GELU as exporters write it: x * 0.5 * (1 + erf(x / sqrt 2)), the halving either side
    auto scalar = [&](float v) { return g.b_.constant(Tensor::scalarF32(v)); };
    Value* erf1 = g.op("Add", {g.op("Erf", {g.op("Div", {x, scalar(1.4142135f)})}), scalar(1.f)});
    return g.coin() ? g.op("Mul", {g.op("Mul", {x, erf1}), scalar(0.5f)})
                    : g.op("Mul", {g.op("Mul", {x, scalar(0.5f)}), erf1});
  }
  const std::string& op = g.pick(ops);
  if (op == "Clip" && g.coin())
    return g.op(op, {x, g.b_.constant(Tensor::scalarF32(-0.5f)), g.b_.constant(Tensor::scalarF32(0.75f))});
  return g.op(op, {x});
}

Value* binary(Generator& g, Value* x) {
  static const std::vector<std::string> ops = {"Add", "Sub", "Mul", "Max", "Min", "Div"};
  const std::string& op = g.pick(ops);
  Ints s = dims(x);
  Value* other = op == "Div" ? nullptr : g.sameShape(s, x);
  if (!other || g.coin(0.4)) {
    // A constant that broadcasts: the whole shape, the last dim, one per channel, or a scalar.
    std::vector<Ints> shapes = {s, {s.back()}, {}};
    if (s.size() == 4) shapes.push_back({s[1], 1, 1});
    other = op == "Div" ? g.constant(g.pick(shapes), 0.5f, 2.f) : g.constant(g.pick(shapes));
  }
  return op == "Div" || g.coin() ? g.op(op, {x, other}) : g.op(op, {other, x});
}

// PRelu: a slope per channel, per last-dim element, or one.
Value* prelu(Generator& g, Value* x) {
  Ints s = dims(x);
  std::vector<Ints> slopes = {{s.back()}, {1}};
  if (s.size() == 4) slopes.push_back({s[1], 1, 1});
  return g.op("PRelu", {x, g.constant(g.pick(slopes), 0.05f, 0.5f)});
}

// A mask and a select: Where(x > c, x, d) (comparisons and Where on bool).
Value* mask(Generator& g, Value* x) {
  Ints s = dims(x);
  const std::string& cmp = g.pick(std::vector<std::string>{"Greater", "Less", "GreaterOrEqual"});
  Value* m = g.op(cmp, {x, g.constant({s.back()})});
  if (g.coin(0.3)) m = g.op("Not", {m});
  return g.coin() ? g.op("Where", {m, x, g.b_.constant(Tensor::scalarF32(-1.f))})
                  : g.op("Where", {m, g.constant({s.back()}), x});
}

Value* conv(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() != 4) return nullptr;
  const int64_t c = s[1];
  Ints groups = {1};
  for (int64_t d = 2; d <= c; ++d)
    if (c % d == 0) groups.push_back(d);
  const int64_t group = g.pick(groups), k = g.pick(Ints{1, 3}), stride = g.pick(Ints{1, 2});
  // Dilation 4 over these small images leaves window cells that read only padding (the native conv crops them).
  const int64_t dilation = k == 3 && g.coin(0.2) ? g.pick(Ints{2, 4}) : 1, pad = g.coin(0.7) ? dilation * (k / 2) : 0;
  const int64_t span = dilation * (k - 1) + 1;
  if (s[2] + 2 * pad < span || s[3] + 2 * pad < span) return nullptr;
  const int64_t out = group * g.uniform(1, std::max<int64_t>(1, 12 / group));
  std::vector<Value*> in = {x, g.constant({out, c / group, k, k}, -0.5f, 0.5f)};
  if (g.coin(0.7)) in.push_back(g.constant({out}));
  return g.op("Conv", in,
              {{"kernel_shape", Ints{k, k}}, {"strides", Ints{stride, stride}}, {"pads", Ints{pad, pad, pad, pad}},
               {"dilations", Ints{dilation, dilation}}, {"group", group}});
}

Value* convTranspose(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() != 4) return nullptr;
  const int64_t c = s[1], group = c % 2 == 0 && g.coin(0.3) ? 2 : 1, k = g.pick(Ints{2, 3}), stride = g.pick(Ints{1, 2});
  const int64_t pad = k == 3 && g.coin() ? 1 : 0, outPad = stride == 2 && g.coin(0.3) ? 1 : 0;
  const int64_t out = group * g.uniform(1, 4);
  std::vector<Value*> in = {x, g.constant({c, out / group, k, k}, -0.5f, 0.5f)};
  if (g.coin(0.7)) in.push_back(g.constant({out}));
  return g.op("ConvTranspose", in,
              {{"strides", Ints{stride, stride}}, {"pads", Ints{pad, pad, pad, pad}},
               {"output_padding", Ints{outPad, outPad}}, {"group", group}});
}

Value* resize(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() != 4) return nullptr;
  std::map<std::string, Attribute> attrs = {
      {"mode", g.pick(std::vector<std::string>{"nearest", "linear", "cubic"})},
      {"coordinate_transformation_mode",
       g.pick(std::vector<std::string>{"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"})}};
  if (g.coin()) {  // sizes
    return g.op("Resize", {x, nullptr, nullptr, g.ints({s[0], s[1], g.uniform(1, 2 * s[2]), g.uniform(1, 2 * s[3])})},
                attrs);
  }
  const float scale = g.pick(std::vector<float>{0.5f, 1.5f, 2.f});
  Tensor scales = Tensor::fromVector<float>(DType::F32, {4}, {1.f, 1.f, scale, scale});
  return g.op("Resize", {x, nullptr, g.b_.constant(scales)}, attrs);
}

Value* pool(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() != 4) return nullptr;
  if (g.coin(0.25)) return g.op("GlobalAveragePool", {x});
  const int64_t k = g.pick(Ints{2, 3}), stride = g.pick(Ints{1, 2}), pad = g.coin() ? k / 2 : 0;
  if (s[2] + 2 * pad < k || s[3] + 2 * pad < k) return nullptr;
  std::map<std::string, Attribute> attrs = {
      {"kernel_shape", Ints{k, k}}, {"strides", Ints{stride, stride}}, {"pads", Ints{pad, pad, pad, pad}}};
  bool max = g.coin();
  if (!max && pad > 0 && g.coin()) attrs["count_include_pad"] = int64_t(1);
  return g.op(max ? "MaxPool" : "AveragePool", {x}, attrs);
}

// A Conv, MaxPool or AveragePool over one or three spatial dims: x [N, C, H, W] reshaped to [N, C, H*W] or (H
// even) [N, C, 2, H/2, W], the result reshaped back to 4-D ([N, K, L, 1] or [N, K, OD*OH, OW]) for what follows.
Value* window1d3d(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() != 4) return nullptr;
  const bool volume = s[2] % 2 == 0 && g.coin();
  const Ints shape = volume ? Ints{s[0], s[1], 2, s[2] / 2, s[3]} : Ints{s[0], s[1], s[2] * s[3]};
  const size_t spatial = shape.size() - 2;
  const int64_t k = g.pick(Ints{1, 2, 3}), stride = g.pick(Ints{1, 2});
  const bool padded = k == 3 && g.coin(0.7);
  Ints window, strides(spatial, stride), pads(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    window.push_back(shape[2 + i] + (padded ? 2 : 0) < k ? 1 : k);  // a dim shorter than the window: 1
    pads[i] = pads[i + spatial] = padded && window[i] == 3 ? 1 : 0;
  }
  Value* v = g.op("Reshape", {x, g.ints(shape)});
  std::map<std::string, Attribute> attrs = {{"strides", strides}, {"pads", pads}};
  Value* y;
  if (g.coin()) {
    const int64_t c = s[1];
    Ints groups = {1};
    for (int64_t d = 2; d <= c && spatial == 1; ++d)  // a grouped 3-D conv has no microkernel: tried elsewhere
      if (c % d == 0) groups.push_back(d);
    const int64_t group = g.pick(groups), out = group * g.uniform(1, std::max<int64_t>(1, 12 / group));
    Ints w = {out, c / group};
    w.insert(w.end(), window.begin(), window.end());
    std::vector<Value*> in = {v, g.constant(w, -0.5f, 0.5f)};
    if (g.coin(0.7)) in.push_back(g.constant({out}));
    attrs["group"] = group;
    y = g.op("Conv", in, attrs);
  } else {
    attrs["kernel_shape"] = window;
    const bool max = g.coin();
    if (!max && padded && g.coin()) attrs["count_include_pad"] = int64_t(1);
    y = g.op(max ? "MaxPool" : "AveragePool", {v}, attrs);
  }
  const Ints ys = dims(y);
  return g.op("Reshape", {y, g.ints(volume ? Ints{ys[0], ys[1], ys[2] * ys[3], ys[4]} : Ints{ys[0], ys[1], ys[2], 1})});
}

Value* batchNorm(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() < 2) return nullptr;
  const int64_t c = s[1];
  return g.op("BatchNormalization",
              {x, g.constant({c}, 0.5f, 1.5f), g.constant({c}), g.constant({c}), g.constant({c}, 0.5f, 2.f)});
}

Value* matmul(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() < 2 || s.back() > 64) return nullptr;
  const int64_t n = g.uniform(1, 12);
  if (s.size() == 2 && g.coin()) {
    std::vector<Value*> in = {x, g.constant({n, s.back()}, -0.5f, 0.5f)};
    if (g.coin()) in.push_back(g.constant({n}));
    return g.op("Gemm", in, {{"transB", int64_t(1)}});
  }
  return g.op("MatMul", {x, g.constant({s.back(), n}, -0.5f, 0.5f)});
}

Value* transpose(Generator& g, Value* x) {
  Ints perm(dims(x).size());
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), g.rng_);
  return g.op("Transpose", {x}, {{"perm", perm}});
}

Value* reshape(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() < 2) return g.op("Unsqueeze", {x, g.ints({0})});
  switch (g.uniform(0, 4)) {
    case 0: return g.op("Flatten", {x}, {{"axis", int64_t(1)}});
    case 1: return g.op("Reshape", {x, g.ints({s[0], -1})});
    case 2: {
      Value* u = g.op("Unsqueeze", {x, g.ints({1})});
      return g.op("Squeeze", {u, g.ints({1})});
    }
    case 3: {  // merge the two trailing dims
      Ints t(s.begin(), s.end() - 2);
      t.push_back(s[s.size() - 2] * s.back());
      return g.op("Reshape", {x, g.ints(t)});
    }
    default: {  // split a dim in two (a head split, a window partition)
      const size_t axis = size_t(g.uniform(0, int64_t(s.size()) - 1));
      for (int64_t f : {2, 3})
        if (s[axis] % f == 0 && s[axis] > f) {
          Ints t(s.begin(), s.end());
          t[axis] = s[axis] / f;
          t.insert(t.begin() + long(axis) + 1, f);
          return g.op("Reshape", {x, g.ints(t)});
        }
      return nullptr;
    }
  }
}

// ShuffleNet's channel shuffle: [N, G*K, ...] -> [N, G, K, ...] -> [N, K, G, ...] -> [N, G*K, ...].
Value* shuffle(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t groups = g.pick(Ints{2, 3});
  if (s.size() < 2 || s[1] % groups != 0 || s[1] == groups) return nullptr;
  Ints split = s, perm(s.size() + 1);
  split[1] = groups;
  split.insert(split.begin() + 2, s[1] / groups);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[1], perm[2]);
  Value* t = g.op("Transpose", {g.op("Reshape", {x, g.ints(split)})}, {{"perm", perm}});
  return g.op("Reshape", {t, g.ints(s)});
}

Value* concat(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t axis = g.uniform(0, int64_t(s.size()) - 1);
  Value* other = g.sameShape(s, x);
  if (!other) other = g.op("Relu", {x});
  return g.op("Concat", {x, other, g.coin(0.3) ? x : other}, {{"axis", g.coin(0.3) ? axis - int64_t(s.size()) : axis}});
}

Value* slice(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t axis = g.uniform(0, int64_t(s.size()) - 1), d = s[size_t(axis)];
  if (g.coin(0.25)) return g.op("Slice", {x, g.ints({d - 1}), g.ints({-d - 1}), g.ints({axis}), g.ints({-1})});
  const int64_t start = g.uniform(0, d - 1), end = g.uniform(start + 1, d), step = g.pick(Ints{1, 1, 2});
  return g.op("Slice", {x, g.ints({start}), g.ints({end}), g.ints({axis}), g.ints({step})});
}

// Split into two or three parts along an axis, put back together in reverse.
Value* split(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t axis = g.uniform(0, int64_t(s.size()) - 1), d = s[size_t(axis)];
  if (d < 2) return nullptr;
  const size_t parts = d >= 3 && g.coin() ? 3 : 2;
  Ints sizes(parts, 1);
  sizes[0] = d - int64_t(parts - 1);
  std::shuffle(sizes.begin(), sizes.end(), g.rng_);
  std::vector<Value*> pieces = g.b_.opN("Split", {x, g.ints(sizes)}, parts, {{"axis", axis}});
  std::reverse(pieces.begin(), pieces.end());
  return g.op("Concat", pieces, {{"axis", axis}});
}

// Attention's scores as an Einsum against a constant: x [..., i, d] with k [..., j, d].
Value* einsum(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() < 2 || s.size() > 4 || s.back() > 64) return nullptr;
  const std::string batch = std::string("bh").substr(0, s.size() - 2);
  Ints k(s.begin(), s.end() - 2);
  k.push_back(g.uniform(1, 6));
  k.push_back(s.back());
  return g.op("Einsum", {x, g.constant(k, -0.5f, 0.5f)}, {{"equation", batch + "id," + batch + "jd->" + batch + "ij"}});
}

Value* rows(Generator& g, Value* x) {
  Ints s = dims(x);
  // Mostly over the last axis (rows); now and then over another (across rows), Hardmax at any.
  const int64_t axis = g.coin(0.7) ? -1 : g.uniform(0, int64_t(s.size()) - 1);
  switch (g.uniform(0, 3)) {
    case 0: return g.op("Softmax", {x}, {{"axis", axis}});
    case 1: return g.op("LogSoftmax", {x}, {{"axis", axis}});
    case 2: return g.op("Hardmax", {x}, {{"axis", axis}});
    default:
      return g.op("LayerNormalization", {x, g.constant({s.back()}, 0.5f, 1.5f), g.constant({s.back()})},
                  {{"axis", int64_t(-1)}});
  }
}

Value* reduce(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t rank = int64_t(s.size()), first = g.uniform(0, rank - 1), last = g.uniform(first, rank - 1);
  Ints axes(size_t(last - first + 1));
  std::iota(axes.begin(), axes.end(), first);
  if (rank > 2 && g.coin(0.3)) axes = {0, rank - 1};  // not consecutive
  const int64_t keep = g.coin(0.6) ? 1 : 0;
  const std::string& op = g.pick(std::vector<std::string>{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin",
                                                          "ReduceL2", "ReduceSumSquare", "ReduceProd"});
  if (op == "ReduceSum") return g.op(op, {x, g.ints(axes)}, {{"keepdims", keep}});
  return g.op(op, {x}, {{"axes", axes}, {"keepdims", keep}});
}

Value* pad(Generator& g, Value* x) {
  Ints s = dims(x);
  Ints pads(2 * s.size(), 0);
  // Now and then reflecting, repeating the edge or wrapping (reflect's pads within the axis, as ONNX asks).
  const std::string mode = g.pick(std::vector<std::string>{"constant", "constant", "reflect", "edge", "wrap"});
  for (size_t d = s.size() >= 3 ? s.size() - 2 : 0; d < s.size(); ++d) {
    const int64_t most = mode == "reflect" ? std::min<int64_t>(2, s[d] - 1) : 2;
    pads[d] = g.uniform(0, most), pads[d + s.size()] = g.uniform(0, most);
  }
  if (mode != "constant") return g.op("Pad", {x, g.ints(pads)}, {{"mode", mode}});
  std::vector<Value*> in = {x, g.ints(pads)};
  if (g.coin()) in.push_back(g.b_.constant(Tensor::scalarF32(0.25f)));
  return g.op("Pad", in);
}

Value* gather(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t axis = g.uniform(0, int64_t(s.size()) - 1), d = s[size_t(axis)];
  if (g.coin(0.3)) return g.op("Gather", {x, g.b_.constant(Tensor::scalarI64(g.uniform(-d, d - 1)))}, {{"axis", axis}});
  Ints idx(size_t(g.uniform(1, 4)));
  for (int64_t& i : idx) i = g.uniform(-d, d - 1);
  return g.op("Gather", {x, g.ints(idx)}, {{"axis", axis}});
}

Value* expand(Generator& g, Value* x) {
  Ints s = dims(x), t = s;
  bool any = false;
  for (int64_t& d : t)
    if (d == 1) d = g.uniform(2, 3), any = true;
  if (!any) return nullptr;
  return g.op("Expand", {x, g.ints(t)});
}

// The ops of the ONNX node tests past the families': variadic arithmetic, the trigonometric and rounding ops,
// scans and index ops (their integer results cast back to f32), TopK, Tile, Trilu.
Value* scanAndIndex(Generator& g, Value* x) {
  Ints s = dims(x);
  const int64_t rank = int64_t(s.size()), axis = g.uniform(0, rank - 1);
  auto asF32 = [&](Value* v) { return g.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(DType::F32))}}); };
  switch (g.uniform(0, 8)) {
    case 0: {
      const std::string& op = g.pick(std::vector<std::string>{"Max", "Min", "Sum", "Mean"});
      return g.op(op, {x, g.constant({s.back()}), g.constant(s)});
    }
    case 1: return g.op(g.pick(std::vector<std::string>{"Sin", "Cos", "Atan", "Round", "Sign", "Asinh"}), {x});
    case 2:
      return g.op("CumSum", {x, g.b_.constant(Tensor::scalarI64(axis - (g.coin() ? rank : 0)))},
                  {{"exclusive", int64_t(g.coin())}, {"reverse", int64_t(g.coin())}});
    case 3:
      return asF32(g.op(g.coin() ? "ArgMax" : "ArgMin", {x},
                        {{"axis", axis}, {"keepdims", int64_t(g.coin())}, {"select_last_index", int64_t(g.coin())}}));
    case 4: {  // indices of x's own shape, narrower now and then off the axis
      Ints is = s;
      for (size_t d = 0; d < is.size(); ++d)
        if (int64_t(d) != axis && g.coin(0.3)) is[d] = g.uniform(1, s[d]);
      Tensor idx(DType::I64, is);
      for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = g.uniform(-s[size_t(axis)], s[size_t(axis)] - 1);
      if (g.coin()) return g.op("GatherElements", {x, g.b_.constant(idx)}, {{"axis", axis}});
      return g.op("ScatterElements", {x, g.b_.constant(idx), g.constant(is)},
                  {{"axis", axis}, {"reduction", g.pick(std::vector<std::string>{"none", "add", "max"})}});
    }
    case 5: {
      Ints repeats(s.size(), 1);
      repeats[size_t(axis)] = g.uniform(2, 3);
      return g.op("Tile", {x, g.ints(repeats)});
    }
    case 7: {  // the values, or the indices cast back
      auto topk = g.b_.opN("TopK", {x, g.ints({g.uniform(1, s[size_t(axis)])})}, 2,
                           {{"axis", axis}, {"largest", int64_t(g.coin())}});
      return g.coin() ? topk[0] : asF32(topk[1]);
    }
    default:
      if (rank < 2) return nullptr;
      return g.op("Trilu", {x, g.b_.constant(Tensor::scalarI64(g.uniform(-2, 2)))}, {{"upper", int64_t(g.coin())}});
  }
}

// Normalizations and rearrangements of image tensors: InstanceNormalization, LRN, GlobalMaxPool,
// DepthToSpace / SpaceToDepth where the block divides the channels or the pixels.
Value* imageOps(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() != 4) return nullptr;
  switch (g.uniform(0, 4)) {
    case 0: return g.op("InstanceNormalization", {x, g.constant({s[1]}, 0.5f, 1.5f), g.constant({s[1]})});
    case 1:
      return g.op("LRN", {x}, {{"size", g.uniform(1, 5)}, {"alpha", 0.01f}, {"beta", 0.75f}, {"bias", 1.f}});
    case 2: return g.op("GlobalMaxPool", {x});
    case 3:
      if (s[1] % 4 != 0) return nullptr;
      return g.op("DepthToSpace", {x}, {{"blocksize", int64_t(2)}, {"mode", g.pick(std::vector<std::string>{"DCR", "CRD"})}});
    default:
      if (s[2] % 2 != 0 || s[3] % 2 != 0) return nullptr;
      return g.op("SpaceToDepth", {x}, {{"blocksize", int64_t(2)}});
  }
}

// A recurrent layer (RNN, GRU or LSTM) over x viewed as [seq, batch, input] (or [batch, seq, input], layout 1):
// any direction, with or without biases, initial states, peepholes and sequence lengths; its Y or its Y_h.
Value* recurrent(Generator& g, Value* x) {
  Ints s = dims(x);
  if (s.size() < 3) return nullptr;
  int64_t input = 1;
  for (size_t d = 2; d < s.size(); ++d) input *= s[d];
  if (input > 64) return nullptr;
  if (s.size() > 3) x = g.op("Reshape", {x, g.ints({s[0], s[1], input})});
  const std::string& op = g.pick(std::vector<std::string>{"RNN", "GRU", "LSTM"});
  const std::string& direction = g.pick(std::vector<std::string>{"forward", "reverse", "bidirectional"});
  const int64_t layout = int64_t(g.coin(0.3)), seq = s[size_t(layout)], batch = s[size_t(1 - layout)];
  const int64_t dirs = direction == "bidirectional" ? 2 : 1, hidden = g.uniform(1, 6);
  const int64_t rows = (op == "LSTM" ? 4 : op == "GRU" ? 3 : 1) * hidden;
  const Ints state = layout ? Ints{batch, dirs, hidden} : Ints{dirs, batch, hidden};
  std::vector<Value*> in = {x, g.constant({dirs, rows, input}, -0.5f, 0.5f),
                            g.constant({dirs, rows, hidden}, -0.5f, 0.5f),
                            g.coin(0.7) ? g.constant({dirs, 2 * rows}) : nullptr, nullptr,
                            g.coin() ? g.constant(state) : nullptr};
  if (g.coin(0.3)) {
    std::vector<int32_t> lengths;
    for (int64_t n = 0; n < batch; ++n) lengths.push_back(int32_t(g.uniform(0, seq)));
    in[4] = g.b_.constant(Tensor::fromVector<int32_t>(DType::I32, {batch}, lengths));
  }
  if (op == "LSTM") {
    in.push_back(g.coin() ? g.constant(state) : nullptr);
    in.push_back(g.coin(0.3) ? g.constant({dirs, 3 * hidden}) : nullptr);
  }
  while (!in.back()) in.pop_back();
  std::map<std::string, Attribute> attrs = {{"direction", direction}, {"hidden_size", hidden}, {"layout", layout}};
  if (op == "GRU") attrs["linear_before_reset"] = int64_t(g.coin());
  if (g.coin(0.2)) attrs["clip"] = 1.f;
  auto outs = g.b_.opN(op, in, op == "LSTM" ? 3 : 2, attrs);
  return g.coin() ? outs[0] : outs[1];
}

const std::vector<std::pair<std::string, Family>>& families() {
  static const std::vector<std::pair<std::string, Family>> f = {
      {"activation", activation}, {"binary", binary},   {"conv", conv},     {"pool", pool},
      {"batchnorm", batchNorm},   {"matmul", matmul},   {"transpose", transpose}, {"reshape", reshape},
      {"concat", concat},         {"slice", slice},     {"rows", rows},     {"reduce", reduce},
      {"pad", pad},               {"gather", gather},   {"expand", expand},
      {"prelu", prelu},           {"mask", mask},       {"split", split},   {"einsum", einsum},
      {"shuffle", shuffle},       {"convtranspose", convTranspose}, {"resize", resize},
      {"window1d3d", window1d3d}, {"scan_index", scanAndIndex}, {"image_ops", imageOps}, {"recurrent", recurrent}};
  return f;
}

// Conv and its epilogue patterns are drawn more often: they are what the passes rewrite most; the two families of
// node-test ops pick among many ops each.
const std::vector<int>& weights() {
  static const std::vector<int> w = {4, 4, 4, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 1};
  return w;
}

}  // namespace

std::vector<std::string> randomGraphFamilies() {
  std::vector<std::string> names;
  for (const auto& [name, f] : families()) names.push_back(name);
  return names;
}

std::unique_ptr<Graph> randomGraph(uint64_t seed, const RandomGraphOptions& options) {
  auto graph = std::make_unique<Graph>("random_" + std::to_string(seed));
  Generator g(seed, *graph);
  const Ints input = {g.uniform(1, 2), g.uniform(1, 8), g.uniform(3, 9), g.uniform(3, 9)};
  g.pool_.push_back(g.b_.input("x", {DType::F32, Shape::fromStatic(input)}));
  std::discrete_distribution<size_t> family(weights().begin(), weights().end());
  const int64_t ops = g.uniform(options.minOps, options.maxOps);
  for (int64_t made = 0, tries = 0; made < ops && tries < 20 * ops; ++tries) {
    Value* x = g.operand();
    Value* y = families()[family(g.rng_)].second(g, x);
    if (!y) continue;
    FRICTION_CHECK(y->shape().isStatic() && y->dtype() == DType::F32, "randomGraph: a non-static or non-f32 result");
    // Keep the graph small, and scalars out of the pool (the families index a last dim).
    if (y->shape().rank() == 0 || *y->shape().numel() == 0 || *y->shape().numel() > 4096) continue;
    g.pool_.push_back(y);
    ++made;
  }
  // The newest value is an output; now and then an earlier one too.
  g.b_.output(g.pool_.back());
  if (g.pool_.size() > 2 && g.coin(0.4)) {
    Value* extra = g.pool_[size_t(g.uniform(1, int64_t(g.pool_.size()) - 2))];
    g.b_.output(extra);
  }
  return graph;
}

void toHalfPrecision(Graph& g, DType half) {
  for (Value* v : g.inputs())
    if (v->dtype() == DType::F32) v->setType({half, v->shape()});
  for (Value* v : g.initializers()) {
    if (v->dtype() != DType::F32) continue;
    v->setConstant(v->constant().castTo(half));
    v->setType({half, v->shape()});
  }
  inferGraph(g);
}

}  // namespace friction::test
