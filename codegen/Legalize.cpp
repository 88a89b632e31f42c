#include "codegen/Legalize.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/ops/NnShapes.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction::codegen {
namespace {

using Ints = std::vector<int64_t>;

// Permutations that turn `a,b->y` into Transpose(a) @ Transpose(b), transposed to y.
struct MatmulForm {
  Ints permA, permB, permY;
};

// An Einsum equation of batched-matmul form, or nullopt.
std::optional<MatmulForm> matmulForm(std::string equation) {
  equation.erase(std::remove_if(equation.begin(), equation.end(), [](unsigned char c) { return std::isspace(c); }),
                 equation.end());
  const size_t arrow = equation.find("->"), comma = equation.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return std::nullopt;
  const std::string a = equation.substr(0, comma), b = equation.substr(comma + 1, arrow - comma - 1),
                    y = equation.substr(arrow + 2);
  for (const std::string* t : {&a, &b, &y}) {
    std::unordered_set<char> seen;
    for (char c : *t)
      if (!std::isalpha(static_cast<unsigned char>(c)) || !seen.insert(c).second) return std::nullopt;
  }
  auto in = [](const std::string& t, char c) { return t.find(c) != std::string::npos; };
  std::string batch, m, n, k;
  for (char c : y) {
    if (in(a, c) && in(b, c)) batch += c;
    else if (in(a, c)) m += c;
    else if (in(b, c)) n += c;
    else return std::nullopt;  // an output letter of neither input
  }
  for (char c : a)
    if (in(b, c) && !in(y, c)) k += c;
    else if (!in(y, c)) return std::nullopt;  // summed over one input alone
  for (char c : b)
    if (!in(a, c) && !in(y, c)) return std::nullopt;
  if (m.size() != 1 || n.size() != 1 || k.size() != 1) return std::nullopt;
  auto positions = [](const std::string& term, const std::string& letters) {
    Ints p;
    for (char c : letters) p.push_back(int64_t(term.find(c)));
    return p;
  };
  const std::string result = batch + m + n;  // the MatMul's letters
  return MatmulForm{positions(a, batch + m + k), positions(b, batch + k + n), positions(result, y)};
}

bool isIdentity(const Ints& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

bool allStatic(const Node& n) {
  for (const Value* v : n.inputs())
    if (v && !v->shape().isStatic()) return false;
  for (const Value* v : n.outputs())
    if (!v->shape().isStatic()) return false;
  return true;
}

// Resize's tap tables (as the cpu target's gather takes them), when an f32 Resize has them and resizes an axis.
std::optional<std::vector<ukernels::ResizeAxis>> resizeAxes(const Node& n) {
  if (n.numInputs() < 1 || !n.input(0) || n.input(0)->dtype() != DType::F32) return std::nullopt;
  auto axes = resizeTables(n, {n.inputs().begin(), n.inputs().end()}, n.input(0)->shape().staticDims(),
                           n.output(0)->shape().staticDims());
  if (!axes || std::all_of(axes->begin(), axes->end(), [](const auto& a) { return a.identity(); })) return std::nullopt;
  return axes;
}

// A 1-D to 3-D f32 ConvTranspose whose geometry resolves to its result's shape.
bool expandableConvTranspose(const Node& n) {
  if (n.numInputs() < 2 || !n.input(0) || !n.input(1) || n.input(0)->dtype() != DType::F32) return false;
  const Ints xs = n.input(0)->shape().staticDims(), ws = n.input(1)->shape().staticDims(),
             ys = n.output(0)->shape().staticDims();
  const int64_t group = n.attrInt("group", 1);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size() || ys.size() != xs.size() || group < 1 ||
      xs[1] % group || ws[0] != xs[1] || ws[1] * group != ys[1])
    return false;
  try {
    return resolveConvTranspose(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}).outSpatial ==
           Ints(ys.begin() + 2, ys.end());
  } catch (const Error&) {
    return false;
  }
}

// Whether `options`' target has no kernel of its own for ConvTranspose `n`: the GPU targets have none, the cpu
// target's native one is 2-D and runs as a microkernel (matchConvTranspose), the halide target builds its own.
bool lacksConvTransposeKernel(const Node& n, const CodegenOptions& options) {
  if (options.expandsNativeOnlyOps()) return true;
  return options.target == Target::Cpu && (n.input(0)->shape().rank() != 4 || !options.ukernels());
}

bool rewritable(const Node& n, const CodegenOptions& options) {
  if (!allStatic(n)) return false;
  if (n.op() == "Split") return n.numInputs() >= 1 && n.input(0);
  if (n.op() == "Einsum") return n.numInputs() == 2 && matmulForm(n.attrString("equation", "")).has_value();
  if (n.op() == "DepthToSpace" || n.op() == "SpaceToDepth") return n.input(0)->shape().rank() == 4;
  if (options.expandsNativeOnlyOps() && n.op() == "Resize") return resizeAxes(n).has_value();
  if (n.op() == "ConvTranspose") return expandableConvTranspose(n) && lacksConvTransposeKernel(n, options);
  return false;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g) : g_(g) {}

  // Split: output i is input[offset_i : offset_i + size_i] along the axis.
  void split(const Node& n) {
    Value* x = n.input(0);
    const int64_t rank = int64_t(x->shape().rank());
    int64_t axis = n.attrInt("axis", 0);
    if (axis < 0) axis += rank;
    int64_t offset = 0;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      Value* y = n.output(i);
      const int64_t size = y->shape().staticDims()[size_t(axis)];
      Value* slice =
          add("Slice", {x, ints({offset}), ints({offset + size}), ints({axis})}, y, n.name() + "/" + std::to_string(i));
      replace_[y] = slice;
      offset += size;
    }
  }

  void einsum(const Node& n) {
    const MatmulForm form = *matmulForm(n.attrString("equation", ""));
    Value* a = transposed(n.input(0), form.permA, n.name() + "/a");
    Value* b = transposed(n.input(1), form.permB, n.name() + "/b");
    Ints as = a->shape().staticDims(), bs = b->shape().staticDims();
    Ints ys(as.begin(), as.end() - 1);
    ys.push_back(bs.back());
    Value* y = n.output(0);
    Value* product = add("MatMul", {a, b}, nullptr, n.name() + "/matmul", TensorType{y->dtype(), Shape::fromStatic(ys)});
    if (!isIdentity(form.permY)) product = add("Transpose", {product}, y, n.name() + "/y", {}, {{"perm", form.permY}});
    replace_[y] = product;
  }

  // DepthToSpace and SpaceToDepth (NCHW, block b): the channels' b x b blocks moved to or from the pixels, as
  // the ONNX reference defines them: Reshape to 6-D, one Transpose, Reshape back (both reshapes zero-copy views).
  void depthSpace(const Node& n) {
    Value* x = n.input(0);
    const Ints xs = x->shape().staticDims();
    const int64_t b = n.attrInt("blocksize", 1), N = xs[0], C = xs[1], H = xs[2], W = xs[3];
    Ints six, perm;
    if (n.op() == "SpaceToDepth") {
      six = {N, C, H / b, b, W / b, b}, perm = {0, 3, 5, 1, 2, 4};
    } else if (n.attrString("mode", "DCR") == "DCR") {
      six = {N, b, b, C / (b * b), H, W}, perm = {0, 3, 4, 1, 5, 2};
    } else {  // CRD
      six = {N, C / (b * b), b, b, H, W}, perm = {0, 1, 4, 2, 5, 3};
    }
    Value* y = n.output(0);
    Value* blocks = add("Reshape", {x, ints(six)}, nullptr, n.name() + "/blocks",
                        TensorType{x->dtype(), Shape::fromStatic(six)});
    Value* moved = transposed(blocks, perm, n.name() + "/moved");
    replace_[y] = add("Reshape", {moved, ints(y->shape().staticDims())}, y, n.name() + "/y");
  }

  // Resize: separable, as its taps are a table per axis (resizeTables). Each resized axis in turn becomes the
  // sum over its taps of a Gather of the tap's source positions along the axis, times the tap's weights
  // (broadcast along the axis) unless they are all 1 (nearest). The interpreter sums the taps' products over
  // all axes at once: the same terms, added in another order.
  void resize(const Node& n) {
    const std::vector<ukernels::ResizeAxis> axes = *resizeAxes(n);
    Value* y = n.input(0);
    Ints shape = y->shape().staticDims();
    for (size_t d = 0; d < axes.size(); ++d) {
      const ukernels::ResizeAxis& a = axes[d];
      if (a.identity()) continue;
      shape[d] = a.out;
      const TensorType type{DType::F32, Shape::fromStatic(shape)};
      const std::string name = n.name() + "/axis" + std::to_string(d);
      Value* sum = nullptr;
      for (int64_t t = 0; t < a.taps; ++t) {
        Ints index;
        std::vector<float> weight;
        for (int64_t o = 0; o < a.out; ++o)
          index.push_back(a.index[size_t(o * a.taps + t)]), weight.push_back(a.weight[size_t(o * a.taps + t)]);
        Value* tap = add("Gather", {y, ints(index)}, nullptr, name + "/tap", type, {{"axis", int64_t(d)}});
        if (std::any_of(weight.begin(), weight.end(), [](float w) { return w != 1.f; })) {
          Ints along(shape.size() - d, 1);  // [out, 1, ...]: broadcast over the dims after the axis
          along[0] = a.out;
          Value* w = g_.addInitializer(g_.freshName("legalized"), Tensor::fromVector<float>(DType::F32, along, weight));
          tap = add("Mul", {tap, w}, nullptr, name + "/weighted", type);
        }
        sum = sum ? add("Add", {sum, tap}, nullptr, name + "/sum", type) : tap;
      }
      y = sum;
    }
    replace_[n.output(0)] = y;
  }

  // ConvTranspose (d spatial dims, stride s, dilation e, window k, begin pads p): output q takes x[i] where
  // q = i * s - p + r * e. That is a Conv at stride 1 and dilation e, of the weights flipped in space with
  // their two channel dims swapped per group, over x with s - 1 zeros after each element (Reshape to a
  // trailing 1 per spatial dim, Pad, Reshape back) padded by (k - 1) * e - p in front and what makes the
  // result's extent behind; a negative pad is a Slice. The zeros cost s^d times a gathered kernel's products.
  void convTranspose(const Node& n) {
    Value *x = n.input(0), *w = n.input(1);
    const Ints xs = x->shape().staticDims(), ws = w->shape().staticDims(), ys = n.output(0)->shape().staticDims();
    const size_t d = xs.size() - 2;
    const Window win = resolveConvTranspose(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}).window;
    const int64_t G = n.attrInt("group", 1), cg = xs[1] / G, kg = ys[1] / G;
    const std::string name = n.name();
    auto f32 = [](const Ints& shape) { return TensorType{DType::F32, Shape::fromStatic(shape)}; };
    // Zeros between the elements: [N, C, H, 1, W, 1] padded to [N, C, H, s, W, s], read as [N, C, H * s, W * s].
    Ints apart = {xs[0], xs[1]}, padded = apart, stuffed = apart, pads(2 * (2 + 2 * d), 0);
    for (size_t i = 0; i < d; ++i) {
      apart.insert(apart.end(), {xs[2 + i], 1});
      padded.insert(padded.end(), {xs[2 + i], win.strides[i]});
      stuffed.push_back(xs[2 + i] * win.strides[i]);
      pads[2 + 2 * d + 3 + 2 * i] = win.strides[i] - 1;  // the end of each inserted dim
    }
    if (stuffed != xs) {
      Value* split = add("Reshape", {x, ints(apart)}, nullptr, name + "/apart", f32(apart));
      Value* zeros = add("Pad", {split, ints(pads)}, nullptr, name + "/zeros", f32(padded));
      x = add("Reshape", {zeros, ints(stuffed)}, nullptr, name + "/stuffed", f32(stuffed));
    }
    // The pads of the Conv: front (k - 1) * e - p, back what gives the result's extent; negatives cropped first.
    Ints convPads(2 * d, 0), starts, ends, axes, cropped = stuffed;
    for (size_t i = 0; i < d; ++i) {
      const int64_t reach = (win.kernel[i] - 1) * win.dilations[i], front = reach - win.pads[i];
      const int64_t back = ys[2 + i] + reach - stuffed[2 + i] - front;
      if (front < 0 || back < 0) {
        starts.push_back(std::max<int64_t>(0, -front)), ends.push_back(stuffed[2 + i] - std::max<int64_t>(0, -back));
        axes.push_back(int64_t(2 + i));
        cropped[2 + i] = ends.back() - starts.back();
      }
      convPads[i] = std::max<int64_t>(0, front), convPads[d + i] = std::max<int64_t>(0, back);
    }
    if (!axes.empty())
      x = add("Slice", {x, ints(starts), ints(ends), ints(axes)}, nullptr, name + "/cropped", f32(cropped));
    // Weights [C, K / G, window...] = [G, C / G, K / G, window...] -> [G, K / G, C / G, window...] = [K, C / G, window...], flipped.
    Ints grouped = {G, cg, kg}, perm = {0, 2, 1}, convWeights = {ys[1], cg}, flip, flipStarts, flipEnds;
    for (size_t i = 0; i < d; ++i) {
      grouped.push_back(ws[2 + i]), perm.push_back(int64_t(3 + i));
      convWeights.push_back(ws[2 + i]), flip.push_back(int64_t(2 + i)), flipStarts.push_back(-1);
      flipEnds.push_back(std::numeric_limits<int64_t>::min());
    }
    Value* v = add("Reshape", {w, ints(grouped)}, nullptr, name + "/w_grouped", f32(grouped));
    v = transposed(v, perm, name + "/w_swapped");
    v = add("Reshape", {v, ints(convWeights)}, nullptr, name + "/w_channels", f32(convWeights));
    v = add("Slice", {v, ints(flipStarts), ints(flipEnds), ints(flip), ints(Ints(d, -1))}, nullptr, name + "/w_flipped", f32(convWeights));
    std::vector<Value*> operands = {x, v};
    if (n.numInputs() > 2 && n.input(2)) operands.push_back(n.input(2));
    replace_[n.output(0)] = add("Conv", operands, n.output(0), name + "/conv", std::nullopt,
                                {{"group", G}, {"pads", convPads}, {"dilations", win.dilations},
                                 {"strides", Ints(d, 1)}, {"kernel_shape", win.kernel}});
  }

  void finish() {
    replaceAllUses(g_, replace_);
    g_.eraseNodes([&](const Node& n) { return replace_.count(n.numOutputs() ? n.output(0) : nullptr) > 0; });
  }

 private:
  Value* ints(const Ints& v) { return g_.addInitializer(g_.freshName("legalized"), Tensor::vectorI64(v)); }

  Value* transposed(Value* x, const Ints& perm, const std::string& name) {
    if (isIdentity(perm)) return x;
    Ints xs = x->shape().staticDims(), ys;
    for (int64_t p : perm) ys.push_back(xs[size_t(p)]);
    return add("Transpose", {x}, nullptr, name, TensorType{x->dtype(), Shape::fromStatic(ys)}, {{"perm", perm}});
  }

  // A node whose one output takes `like`'s type (or `type`), named after the node it replaces.
  Value* add(const std::string& op, std::vector<Value*> in, const Value* like, const std::string& name,
             std::optional<TensorType> type = std::nullopt, std::map<std::string, Attribute> attrs = {}) {
    Node* n = g_.addNode(op, std::move(in), {g_.freshName(name)}, std::move(attrs), g_.freshName(name));
    n->output(0)->setType(type ? *type : like->type());
    return n->output(0);
  }

  Graph& g_;
  std::unordered_map<const Value*, Value*> replace_;
};

}  // namespace

bool needsLegalizing(const Graph& g, const CodegenOptions& options) {
  return hasHalfArithmetic(g) ||
         std::any_of(g.nodes().begin(), g.nodes().end(), [&](const auto& n) { return rewritable(*n, options); });
}

int64_t legalize(Graph& g, const CodegenOptions& options) {
  // Half-precision ops first (what widen-half left, with the passes off or inside region bodies): the ops
  // below are then f32 ones.
  int64_t rewritten = widenHalfPrecision(g);
  std::vector<const Node*> nodes;
  for (const auto& n : g.nodes())
    if (rewritable(*n, options)) nodes.push_back(n.get());
  if (nodes.empty()) return rewritten;
  Rewriter r(g);
  for (const Node* n : nodes) {
    const size_t mark = g.nodes().size();
    if (n->op() == "Split") r.split(*n);
    else if (n->op() == "Einsum") r.einsum(*n);
    else if (n->op() == "Resize") r.resize(*n);
    else if (n->op() == "ConvTranspose") r.convTranspose(*n);
    else r.depthSpace(*n);
    g.moveNodesBefore(mark, n);  // the program runs in the order plan-memory planned
  }
  r.finish();
  return rewritten + int64_t(nodes.size());
}

}  // namespace friction::codegen
