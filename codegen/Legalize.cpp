#include "codegen/Legalize.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/ConvTransposePhases.h"
#include "codegen/KernelAnalysis.h"
#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/Uses.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/Recurrent.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"
#include "passes/Regions.h"

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

// Whether `options`' target has no kernel of its own for ConvTranspose `n`: the GPU targets have none, the cpu
// target its native one where it applies (matchNative: 2-D, microkernels on), the halide target builds its own.
bool lacksConvTransposeKernel(const Node& n, const CodegenOptions& options) {
  if (options.expandsNativeOnlyOps()) return true;
  return options.target == Target::Cpu && !matchNative(n, {}, nullptr, options.ukernels());
}

// A recurrent layer is unrolled over its sequence (the halide and GPU targets) when that takes at most this
// many steps over all its directions: a longer one stays on the interpreter rather than grow the graph.
constexpr int64_t kMaxUnrolledSteps = 1024;

// The most inputs of one Concat an unrolled recurrence joins its steps' states with: Halide's compile time grows
// with the square of a Concat's inputs (7.5 s for 100 of them), so longer sequences are joined in a tree.
constexpr size_t kMaxConcatInputs = 32;

// The spec and extents of RNN, GRU or LSTM `n` when it can be unrolled: f32, static, its sequence_lens absent
// or a constant of whole sequences.
std::optional<std::pair<RecurrentSpec, RecurrentDims>> unrollableRecurrence(const Node& n) {
  if (!isRecurrentOp(n.op()) || n.numInputs() < 3 || !isStaticF32(n.input(RecurrentSpec::kX))) return std::nullopt;
  std::vector<Ints> dims(n.numInputs());
  std::vector<const Ints*> shapes;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    const Value* v = n.input(i);
    if (v && i != RecurrentSpec::kSequenceLens && !isStaticF32(v)) return std::nullopt;
    if (v) dims[i] = v->shape().staticDims();
    shapes.push_back(v ? &dims[i] : nullptr);
  }
  try {
    const RecurrentSpec spec = recurrentSpec(n);
    const RecurrentDims extents = recurrentDims(n, spec, shapes);
    if (extents.seq < 1 || extents.seq * spec.directions > kMaxUnrolledSteps) return std::nullopt;
    if (n.numInputs() > RecurrentSpec::kSequenceLens && n.input(RecurrentSpec::kSequenceLens)) {
      const Tensor* lengths = constantData(n.input(RecurrentSpec::kSequenceLens));
      if (!lengths) return std::nullopt;
      for (int64_t length : lengths->toInt64Vector())
        if (length != extents.seq) return std::nullopt;
    }
    return std::make_pair(spec, extents);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// A Tile's repeats when it is f32 and they are constants that repeat some dim.
std::optional<Ints> tileRepeats(const Node& n) {
  if (n.numInputs() != 2 || !isStaticF32(n.input(0)) || !n.input(1) || !constantData(n.input(1))) return std::nullopt;
  const Ints repeats = constantData(n.input(1))->toInt64Vector();
  if (repeats.size() != n.input(0)->shape().rank() ||
      std::any_of(repeats.begin(), repeats.end(), [](int64_t r) { return r < 1; }) ||
      std::all_of(repeats.begin(), repeats.end(), [](int64_t r) { return r == 1; }))
    return std::nullopt;
  return repeats;
}

bool rewritable(const Node& n, const CodegenOptions& options) {
  if (!allStatic(n)) return false;
  if (n.op() == "Split") return n.numInputs() >= 1 && n.input(0);
  if (n.op() == "Einsum") return n.numInputs() == 2 && matmulForm(n.attrString("equation", "")).has_value();
  if (n.op() == "DepthToSpace" || n.op() == "SpaceToDepth") return n.input(0)->shape().rank() == 4;
  if (options.expandsNativeOnlyOps() && n.op() == "Resize") return resizeAxes(n).has_value();
  if (n.op() == "ConvTranspose") return checkConvTranspose(n) && lacksConvTransposeKernel(n, options);
  if (!options.nativeSteps() && isRecurrentOp(n.op())) return unrollableRecurrence(n).has_value();
  if (!options.nativeSteps() && n.op() == "Tile") return tileRepeats(n).has_value();
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
      const TensorType type = f32(shape);
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
    if (convTransposeByPhases(n)) return;
    Value *x = n.input(0), *w = n.input(1);
    const Ints xs = x->shape().staticDims(), ws = w->shape().staticDims(), ys = n.output(0)->shape().staticDims();
    const size_t d = xs.size() - 2;
    const Window win = resolveConvTranspose(n, {xs.begin() + 2, xs.end()}, {ws.begin() + 2, ws.end()}).window;
    const int64_t G = n.attrInt("group", 1), cg = xs[1] / G, kg = ys[1] / G;
    const std::string name = n.name();
    // Zeros between the elements: [N, C, H, 1, W, 1] padded to [N, C, H, s, W, s], read as [N, C, H * s, W * s].
    Ints apart = {xs[0], xs[1]}, padded = apart, stuffed = apart, pads(2 * (2 + 2 * d), 0);
    for (size_t i = 0; i < d; ++i) {
      apart.insert(apart.end(), {xs[2 + i], 1});
      padded.insert(padded.end(), {xs[2 + i], win.strides[i]});
      stuffed.push_back(xs[2 + i] * win.strides[i]);
      pads[2 + 2 * d + 3 + 2 * i] = win.strides[i] - 1;  // the end of each inserted dim
    }
    if (stuffed != xs) {
      Value* zeros = add("Pad", {reshaped(x, apart, name + "/apart"), ints(pads)}, nullptr, name + "/zeros", f32(padded));
      x = reshaped(zeros, stuffed, name + "/stuffed");
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
    Ints convWeights = {ys[1], cg};
    convWeights.insert(convWeights.end(), ws.begin() + 2, ws.end());
    Value* v = nullptr;
    if (const Tensor* constant = constantData(w)) {  // computed now, not on every run
      // Flipping every spatial dim reverses a tap's flat index.
      const int64_t taps = checkedNumel(Ints(ws.begin() + 2, ws.end()));
      v = g_.addInitializer(g_.freshName(name + "/w_flipped"),
                            convWeightsOf(*constant, G, taps, convWeights, [&](int64_t j) { return taps - 1 - j; }));
    } else {
      Ints grouped = {G, cg, kg}, perm = {0, 2, 1}, flip, flipStarts, flipEnds;
      for (size_t i = 0; i < d; ++i) {
        grouped.push_back(ws[2 + i]), perm.push_back(int64_t(3 + i)), flip.push_back(int64_t(2 + i));
        flipStarts.push_back(-1), flipEnds.push_back(std::numeric_limits<int64_t>::min());
      }
      v = transposed(reshaped(w, grouped, name + "/w_grouped"), perm, name + "/w_swapped");
      v = reshaped(v, convWeights, name + "/w_channels");
      v = add("Slice", {v, ints(flipStarts), ints(flipEnds), ints(flip), ints(Ints(d, -1))}, nullptr, name + "/w_flipped", f32(convWeights));
    }
    std::vector<Value*> operands = {x, v};
    if (n.numInputs() > 2 && n.input(2)) operands.push_back(n.input(2));
    replace_[n.output(0)] = add("Conv", operands, n.output(0), name + "/conv", std::nullopt,
                                {{"group", G}, {"pads", convPads}, {"dilations", win.dilations},
                                 {"strides", Ints(d, 1)}, {"kernel_shape", win.kernel}});
  }

  // Tile: each repeated dim [x] viewed as [1, x], expanded to [repeats, x] and viewed as [repeats * x].
  void tile(const Node& n) {
    const Ints repeats = *tileRepeats(n), xs = shapeOf(n.input(0));
    Ints apart, expanded, ys;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (repeats[i] > 1) apart.push_back(1), expanded.push_back(repeats[i]);
      apart.push_back(xs[i]), expanded.push_back(xs[i]), ys.push_back(repeats[i] * xs[i]);
    }
    Value* copies = add("Expand", {reshaped(n.input(0), apart, n.name() + "/apart"), ints(expanded)}, nullptr,
                        n.name() + "/copies", f32(expanded));
    replace_[n.output(0)] = reshaped(copies, ys, n.name() + "/y");
  }

  // A strided ConvTranspose of constant weights as one Conv per output phase (convTransposePhases), the
  // phases interleaved, innermost dim first, by a Concat along an inserted axis of extent 1 and Reshapes, the
  // result cropped to its extents. s^d times fewer products than the Conv over zeros. False where it does not
  // apply (nothing built).
  bool convTransposeByPhases(const Node& n) {
    const std::optional<PhasePlan> plan = convTransposePhases(n);
    if (!plan) return false;
    const Ints ys = n.output(0)->shape().staticDims();
    const size_t d = ys.size() - 2;
    const std::string name = n.name();
    Ints shape = {ys[0], ys[1]};  // each phase's result
    shape.insert(shape.end(), plan->extents.begin(), plan->extents.end());
    std::vector<Value*> outs;
    std::map<std::vector<Ints>, Value*> crops;  // one Slice per distinct crop: phases along another dim share one
    for (const PhaseConv& c : plan->convs) {
      Value* x = n.input(0);
      if (!c.axes.empty()) {
        Value*& cropped = crops[{c.starts, c.ends, c.axes}];
        if (!cropped) cropped = add("Slice", {x, ints(c.starts), ints(c.ends), ints(c.axes)}, nullptr, name + "/x" + c.tag, f32(c.cropped));
        x = cropped;
      }
      std::vector<Value*> operands = {x, g_.addInitializer(g_.freshName(name + "/w" + c.tag), c.weights)};
      if (n.numInputs() > 2 && n.input(2)) operands.push_back(n.input(2));
      outs.push_back(add("Conv", operands, nullptr, name + "/phase" + c.tag, f32(shape),
                         {{"group", n.attrInt("group", 1)}, {"pads", c.pads}, {"strides", Ints(d, 1)}, {"kernel_shape", c.kernel}}));
    }
    // The s results of a dim's phases (consecutive in `outs`) as one whose extent along the dim is s times theirs.
    for (size_t i = d; i-- > 0;) {
      const int64_t s = plan->strides[i];
      if (s == 1) continue;
      const size_t axis = 2 + i;
      Ints apart = shape, joined = shape;
      apart.insert(apart.begin() + int64_t(axis) + 1, 1);
      joined.insert(joined.begin() + int64_t(axis) + 1, s);
      shape[axis] *= s;
      std::vector<Value*> next;
      for (size_t first = 0; first < outs.size(); first += size_t(s)) {
        std::vector<Value*> parts;
        for (int64_t phi = 0; phi < s; ++phi) parts.push_back(reshaped(outs[first + size_t(phi)], apart, name + "/apart"));
        Value* both = add("Concat", parts, nullptr, name + "/interleaved", f32(joined), {{"axis", int64_t(axis + 1)}});
        next.push_back(reshaped(both, shape, name + "/joined"));
      }
      outs = next;
    }
    Value* y = outs.front();
    if (shape != ys) {
      Ints axes;
      for (size_t i = 0; i < d; ++i) axes.push_back(int64_t(2 + i));
      y = add("Slice", {y, ints(Ints(d, 0)), ints(Ints(ys.begin() + 2, ys.end())), ints(axes)}, nullptr, name + "/cropped", f32(ys));
    }
    replace_[n.output(0)] = y;
    return true;
  }

  // RNN, GRU, LSTM unrolled over the sequence, one step's ops after the other's, as the interpreter computes
  // them (runtime/interp/kernels/RecurrentKernels.cpp): per direction the input products of every element in
  // one Gemm (W's bias in it), then per step a Gemm of the state by R (R's bias in it), the gates as Slices
  // of the sum, clipped and activated (each activation an op of its own), and the new state; Y, Y_h and Y_c
  // are Concats of the steps' states in the layout asked for. Outputs nothing reads are not built.
  // `stepsAsRegions`: each step's cell (all but its slice of the input products, a view on the host) one
  // Fused region, so a target that compiles a region as one kernel (CodegenOptions::compilesWholeRegions)
  // calls one kernel a step, the same one every step; a dozen tiny kernels a step cost 2-12x the mixed program.
  void recurrent(const Node& n, bool stepsAsRegions) {
    const auto [spec, dims] = *unrollableRecurrence(n);
    const int64_t T = dims.seq, B = dims.batch, H = dims.hidden, rows = spec.gates * dims.hidden;
    const std::string& name = n.name();
    auto input = [&](size_t i) { return i < n.numInputs() ? n.input(i) : nullptr; };
    auto slice = [&](Value* v, int64_t axis, int64_t start, int64_t end, const std::string& what) {
      return sliced(v, axis, start, end, name + "/" + what);
    };
    auto reshape = [&](Value* v, const Ints& to, const std::string& what) { return reshaped(v, to, name + "/" + what); };
    // a x b^T (+ c broadcast over rows).
    auto gemm = [&](Value* a, Value* b, Value* c, const std::string& what) {
      std::vector<Value*> in = {a, b};
      if (c) in.push_back(c);
      return add("Gemm", in, nullptr, name + "/" + what, f32({shapeOf(a)[0], shapeOf(b)[0]}), {{"transB", int64_t(1)}});
    };
    auto scalar = [&](float v) { return g_.addInitializer(g_.freshName("legalized"), Tensor::scalarF32(v)); };
    auto binary = [&](const std::string& op, Value* a, Value* b, const Value* like) {
      return add(op, {a, b}, like, name + "/" + op);
    };
    auto unary = [&](const std::string& op, Value* a, std::map<std::string, Attribute> attrs = {}) {
      return add(op, {a}, a, name + "/" + op, std::nullopt, std::move(attrs));
    };
    auto clipped = [&](Value* v) {
      return spec.clip ? add("Clip", {v, scalar(-*spec.clip), scalar(*spec.clip)}, v, name + "/clip") : v;
    };
    auto activate = [&](Value* v, const RecurrentActivation& a) {
      using K = RecurrentActivationKind;
      switch (a.kind) {
        case K::Relu: return unary("Relu", v);
        case K::Tanh: return unary("Tanh", v);
        case K::Sigmoid: return unary("Sigmoid", v);
        case K::Affine: return binary("Add", binary("Mul", v, scalar(a.alpha), v), scalar(a.beta), v);
        case K::LeakyRelu: return unary("LeakyRelu", v, {{"alpha", a.alpha}});
        case K::ThresholdedRelu: return unary("ThresholdedRelu", v, {{"alpha", a.alpha}});
        case K::ScaledTanh: return binary("Mul", unary("Tanh", binary("Mul", v, scalar(a.beta), v)), scalar(a.alpha), v);
        case K::HardSigmoid: return unary("HardSigmoid", v, {{"alpha", a.alpha}, {"beta", a.beta}});
        case K::Elu: return unary("Elu", v, {{"alpha", a.alpha}});
        case K::Softsign: return unary("Softsign", v);
        case K::Softplus: return unary("Softplus", v);
      }
      return v;
    };
    // A direction's initial state [B, H]: its rows of initial_h or initial_c, or zeros.
    auto initial = [&](size_t i, int dir) {
      if (Value* v = input(i))
        return reshape(slice(v, dims.batchMajor ? 1 : 0, dir, dir + 1, "initial"), {B, H}, "initial_rows");
      return g_.addInitializer(g_.freshName("legalized"), Tensor::fromVector<float>(DType::F32, {B, H},
                                                                                   std::vector<float>(size_t(B * H), 0.f)));
    };
    Value* x = input(RecurrentSpec::kX);
    if (dims.batchMajor) x = transposed(x, {1, 0, 2}, name + "/x_time_major");
    x = reshape(x, {T * B, dims.input}, "x_rows");
    std::vector<std::vector<Value*>> states(size_t(spec.directions), std::vector<Value*>(size_t(T)));
    std::vector<Value*> lastH, lastC;
    std::vector<std::vector<Node*>> cells;  // stepsAsRegions: each step's nodes but its slice of xw
    for (int dir = 0; dir < spec.directions; ++dir) {
      Value* w = reshape(slice(input(RecurrentSpec::kW), 0, dir, dir + 1, "w"), {rows, dims.input}, "w_rows");
      Value* r = reshape(slice(input(RecurrentSpec::kR), 0, dir, dir + 1, "r"), {rows, H}, "r_rows");
      Value *wb = nullptr, *rb = nullptr;
      if (Value* b = input(RecurrentSpec::kB)) {
        b = reshape(slice(b, 0, dir, dir + 1, "b"), {2 * rows}, "b_row");
        wb = slice(b, 0, 0, rows, "wb"), rb = slice(b, 0, rows, 2 * rows, "rb");
      }
      Value* xw = gemm(x, w, wb, "xw");  // [T * B, rows]
      // GRU without linear_before_reset: the candidate's recurrent product is of the reset state, apart.
      const bool resetFirst = spec.cell == RecurrentCell::Gru && !spec.linearBeforeReset;
      const int64_t joint = resetFirst ? 2 * H : rows;
      Value *rJoint = resetFirst ? slice(r, 0, 0, joint, "r_zr") : r, *rbJoint = rb && resetFirst ? slice(rb, 0, 0, joint, "rb_zr") : rb;
      Value *rCandidate = resetFirst ? slice(r, 0, joint, rows, "r_h") : nullptr,
            *rbCandidate = rb && resetFirst ? slice(rb, 0, joint, rows, "rb_h") : nullptr;
      Value* peep = spec.cell == RecurrentCell::Lstm && input(RecurrentSpec::kP)
                        ? reshape(slice(input(RecurrentSpec::kP), 0, dir, dir + 1, "p"), {3 * H}, "p_row")
                        : nullptr;
      auto peephole = [&](int k) { return slice(peep, 0, k * H, (k + 1) * H, "peephole"); };
      const RecurrentActivation& f = spec.activation(dir, 0);
      Value* h = initial(RecurrentSpec::kInitialH, dir);
      Value* c = spec.cell == RecurrentCell::Lstm ? initial(RecurrentSpec::kInitialC, dir) : nullptr;
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = spec.reversed(dir) ? T - 1 - step : step;
        Value* xt = slice(xw, 0, t * B, (t + 1) * B, "xw_t");  // [B, rows]
        const size_t cellStart = g_.nodes().size();
        Value* hr = gemm(h, rJoint, rbJoint, "hr");           // [B, joint]
        Value* sum = binary("Add", joint == rows ? xt : slice(xt, 1, 0, joint, "xw_zr"), hr, hr);
        auto gate = [&](int k) { return slice(sum, 1, k * H, (k + 1) * H, "gate"); };
        if (spec.cell == RecurrentCell::Rnn) {
          h = activate(clipped(sum), f);
        } else if (spec.cell == RecurrentCell::Gru) {
          Value* z = activate(clipped(gate(0)), f);
          Value* reset = activate(clipped(gate(1)), f);
          Value* xh = slice(xt, 1, 2 * H, rows, "xw_h");
          Value* recurrentPart = resetFirst ? gemm(binary("Mul", reset, h, h), rCandidate, rbCandidate, "hr_h")
                                            : binary("Mul", reset, slice(hr, 1, 2 * H, rows, "hr_h"), h);
          Value* candidate = activate(clipped(binary("Add", xh, recurrentPart, h)), spec.activation(dir, 1));
          // (1 - z) * candidate + z * h
          Value* keep = binary("Mul", z, h, h);
          h = binary("Add", binary("Mul", add("Sub", {scalar(1.f), z}, z, name + "/Sub"), candidate, h), keep, h);
        } else {  // LSTM: gates i, o, f, c; peepholes i, o, f
          auto withPeephole = [&](Value* g, int k, Value* state) {
            return peep ? binary("Add", g, binary("Mul", peephole(k), state, state), g) : g;
          };
          Value* i = activate(clipped(withPeephole(gate(0), 0, c)), f);
          Value* forget = spec.inputForget ? add("Sub", {scalar(1.f), i}, i, name + "/Sub")
                                           : activate(clipped(withPeephole(gate(2), 2, c)), f);
          Value* cell = binary("Add", binary("Mul", forget, c, c),
                               binary("Mul", i, activate(clipped(gate(3)), spec.activation(dir, 1)), c), c);
          Value* o = activate(clipped(withPeephole(gate(1), 1, cell)), f);
          c = cell;
          h = binary("Mul", o, activate(cell, spec.activation(dir, 2)), cell);
        }
        states[size_t(dir)][size_t(t)] = h;
        if (stepsAsRegions) cells.push_back(nodesFrom(cellStart));
      }
      lastH.push_back(h), lastC.push_back(c);
    }
    const UseIndex uses(static_cast<const Graph&>(g_));
    auto wanted = [&](size_t k) { return k < n.numOutputs() && n.output(k) && !uses.unused(n.output(k)); };
    // Parts of one shape joined along `axis`, at most kMaxConcatInputs at a time (Concats of Concats beyond).
    std::function<Value*(const std::vector<Value*>&, int64_t, const std::string&)> concat =
        [&](const std::vector<Value*>& parts, int64_t axis, const std::string& what) {
          if (parts.size() == 1) return parts[0];
          if (parts.size() > kMaxConcatInputs) {
            std::vector<Value*> groups;
            for (size_t i = 0; i < parts.size(); i += kMaxConcatInputs)
              groups.push_back(concat({parts.begin() + i, parts.begin() + std::min(parts.size(), i + kMaxConcatInputs)},
                                      axis, what));
            return concat(groups, axis, what);
          }
          Ints s = shapeOf(parts[0]);
          s[size_t(axis)] = 0;
          for (const Value* part : parts) s[size_t(axis)] += shapeOf(part)[size_t(axis)];
          return add("Concat", parts, nullptr, name + "/" + what, f32(s), {{"axis", axis}});
        };
    const int64_t D = spec.directions;
    if (wanted(RecurrentSpec::kY)) {  // [T, D, B, H], or [B, T, D, H]
      std::vector<Value*> directions;
      for (int dir = 0; dir < D; ++dir) {
        std::vector<Value*> steps;
        for (Value* state : states[size_t(dir)]) steps.push_back(reshape(state, {1, 1, B, H}, "y_t"));
        directions.push_back(concat(steps, 0, "y_steps"));
      }
      Value* y = concat(directions, 1, "y");
      replace_[n.output(RecurrentSpec::kY)] = dims.batchMajor ? transposed(y, {2, 0, 1, 3}, name + "/y_batch_major") : y;
    }
    for (auto [k, last] : {std::make_pair(RecurrentSpec::kYh, &lastH), std::make_pair(RecurrentSpec::kYc, &lastC)}) {
      if (!wanted(k) || !(*last)[0]) continue;
      std::vector<Value*> parts;
      for (Value* state : *last) parts.push_back(reshape(state, {1, B, H}, "state"));
      Value* state = concat(parts, 0, "states");  // [D, B, H], or [B, D, H]
      replace_[n.output(k)] = dims.batchMajor ? transposed(state, {1, 0, 2}, name + "/state_batch_major") : state;
    }
    // Now that the steps' readers exist, a region's outputs are what they read. All at once, in the order they
    // were built, so every cell's operands come in the same order (one kernel); only the new nodes, the graph's
    // last ones, move.
    PassContext unused;
    fuseRegionsInOrder(g_, cells, RegionKind::Generic, unused, StructuralConstants::CopiedIn);
  }

  // Redirects the rewritten nodes' readers to their replacements and removes them.
  void finish(const std::vector<const Node*>& rewritten) {
    replaceAllUses(g_, replace_);
    const std::unordered_set<const Node*> gone(rewritten.begin(), rewritten.end());
    std::unordered_set<const Value*> operands;
    for (const Node* n : rewritten)
      for (const Value* v : n->inputs())
        if (v && v->isConstant()) operands.insert(v);
    g_.eraseNodes([&](const Node& n) { return gone.count(&n) > 0; });
    // The constants only they read (ConvTranspose's weights, now rearranged into another): no copy left behind.
    UseIndex uses(g_);
    g_.eraseInitializers([&](const Value* v) { return operands.count(v) > 0 && uses.unused(v); });
  }

 private:
  // The nodes added since the graph had `start` of them.
  std::vector<Node*> nodesFrom(size_t start) {
    std::vector<Node*> added;
    for (size_t i = start; i < g_.nodes().size(); ++i) added.push_back(g_.nodes()[i].get());
    return added;
  }
  Value* ints(const Ints& v) { return g_.addInitializer(g_.freshName("legalized"), Tensor::vectorI64(v)); }
  static TensorType f32(const Ints& shape) { return TensorType{DType::F32, Shape::fromStatic(shape)}; }
  static Ints shapeOf(const Value* v) { return v->shape().staticDims(); }

  // v[start:end] along `axis`.
  Value* sliced(Value* v, int64_t axis, int64_t start, int64_t end, const std::string& name) {
    Ints s = shapeOf(v);
    s[size_t(axis)] = end - start;
    return add("Slice", {v, ints({start}), ints({end}), ints({axis})}, nullptr, name, f32(s));
  }
  // v as shape `to` (v itself when it has it).
  Value* reshaped(Value* v, const Ints& to, const std::string& name) {
    return shapeOf(v) == to ? v : add("Reshape", {v, ints(to)}, nullptr, name, f32(to));
  }

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
    else if (isRecurrentOp(n->op())) r.recurrent(*n, options.compilesWholeRegions());
    else if (n->op() == "Tile") r.tile(*n);
    else r.depthSpace(*n);
    g.moveNodesBefore(mark, n);  // the program runs in the order plan-memory planned
  }
  r.finish(nodes);
  return rewritten + int64_t(nodes.size());
}

}  // namespace friction::codegen
