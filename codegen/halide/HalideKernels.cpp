// The algorithms of the halide backend's kernels (HalideKernels.h). Every
// formula follows the interpreter's (runtime/interp/kernels/) and the MLIR
// builder's (codegen/mlir/KernelBuilder.cpp, StructuredKernels.cpp), NaN
// handling included: max and min as compare + select, a NaN tap never taken
// by a max pool.
#include "codegen/halide/HalideKernels.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/TensorShapes.h"

namespace friction::codegen::halide {
namespace {

using Ints = std::vector<int64_t>;
using Exprs = std::vector<HL::Expr>;
using Vars = std::vector<HL::Var>;

HL::Expr f32(double v) { return HL::Expr(float(v)); }
HL::Expr i32(int64_t v) { return HL::Expr(int(v)); }

// f(index), index in friction's (row-major) order.
HL::Expr at(const HL::Func& f, Exprs index) {
  std::reverse(index.begin(), index.end());
  return f(index);
}
HL::FuncRef ref(HL::Func& f, Exprs index) {
  std::reverse(index.begin(), index.end());
  return f(index);
}
Exprs exprs(const Vars& v) { return Exprs(v.begin(), v.end()); }
Vars vars(size_t rank) {
  Vars v;
  for (size_t i = 0; i < rank; ++i) v.emplace_back("d" + std::to_string(i));
  return v;
}
// A Halide name from a node's: letters, digits and '_' only ('.' separates
// Halide's own qualifiers), made unique in the process (a pipeline's Funcs
// must not share one).
std::string halideName(const std::string& name) {
  static std::atomic<uint64_t> next{0};
  std::string s = "f" + std::to_string(next++) + "_";
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}
// f(v) = e over `shape`.
ShapedFunc define(const std::string& name, const Ints& shape, const std::function<HL::Expr(const Exprs&)>& body) {
  HL::Func f(halideName(name));
  Vars v = vars(shape.size());
  Vars reversed(v.rbegin(), v.rend());
  f(reversed) = body(exprs(v));
  return {f, shape};
}
// Declares a buffer's shape and row-major strides as constants (the program
// passes every tensor dense, with the shape the kernel was built for): Halide
// then drops the guards of split loops and indexes with constant strides,
// 3.5x on a 1x1 convolution's inner loop. A call with another shape fails
// Halide's checks on entry, never reads past a buffer.
void denseStatic(HL::OutputImageParam buffer, const Ints& shape) {
  int stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    const int extent = int(shape[shape.size() - 1 - k]);
    buffer.dim(int(k)).set_bounds(0, extent).set_stride(stride);
    stride *= extent;
  }
}
// numpy broadcasting: a value of shape `s` read at the index `index` of a larger domain (right-aligned, size-1 dims at 0).
Exprs broadcastIndex(const Ints& s, const Ints& domain, const Exprs& index) {
  Exprs r;
  for (size_t i = 0, off = domain.size() - s.size(); i < s.size(); ++i)
    r.push_back(s[i] == domain[i + off] ? index[i + off] : i32(0));
  return r;
}
// The row-major flat index of `index` in `shape`, and back.
HL::Expr flatten(const Exprs& index, const Ints& shape) {
  HL::Expr flat = i32(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * i32(shape[d]) + index[d];
  return flat;
}
Exprs unflatten(HL::Expr flat, const Ints& shape) {
  Exprs index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = d == 0 ? flat : flat % i32(shape[d]);
    if (d > 0) flat = flat / i32(shape[d]);
  }
  return index;
}
int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }
HL::Expr clampIndex(HL::Expr i, int64_t extent) { return HL::clamp(i, 0, int(extent - 1)); }
// An [N, C, spatial...] index of the same element in [N, spatial..., C].
Exprs channelsLastIndex(const Exprs& nchw) {
  Exprs i = {nchw[0]};
  i.insert(i.end(), nchw.begin() + 2, nchw.end());
  i.push_back(nchw[1]);
  return i;
}
// A windowed op's hints when it is computed channels last: the channels in
// vector lanes, laid out innermost; the pixels of a row as the rows of its
// register tile (they share the weights).
ShapedFunc channelsLast(ShapedFunc f) {
  f.laneDim = 1;
  f.rowDim = int(f.shape.size()) - 1;
  return f;
}
// `source` read with every index clamped into `shape` (what BoundaryConditions::repeat_edge computes), as a
// Func of a unique name: repeat_edge names every Func it makes "repeat_edge", and with two of them over two
// buffers in one kernel, Adams2019's greedy schedule of a strided conv computed wrong results (off by 100%;
// tests/codegen/TestHalideBackend.cpp); Funcs of unique names do not.
HL::Func clampedRead(const HL::Func& source, const Ints& shape, const std::string& name) {
  return define(name + "_clamped", shape, [&](const Exprs& i) {
    Exprs inside;
    // likely(): as repeat_edge marks it, so Halide's loop partitioning keeps the clamps out of the steady state.
    for (size_t d = 0; d < i.size(); ++d) inside.push_back(clampIndex(HL::likely(i[d]), shape[d]));
    return at(source, inside);
  }).func;
}
// An RDom over `extents` (at least one dim: a size-1 one when there is none).
HL::RDom rdom(const Ints& extents, const std::string& name) {
  std::vector<HL::Range> ranges;
  for (int64_t e : extents) ranges.emplace_back(0, int(e));
  if (ranges.empty()) ranges.emplace_back(0, 1);
  return HL::RDom(ranges, halideName(name));
}

// What the Structured build functions share: the node, the Funcs of its
// arguments (aligned with its inputs; undefined where an input is a
// constant), and where reductions they define go.
struct Structured {
  const Node& n;
  std::vector<HL::Func> args;
  std::vector<ShapedFunc>& producers;
  // Input 0's channels-last source when input 0 is transposed from one in
  // this kernel (channelsLastSource); undefined otherwise. A windowed op
  // reads it in place.
  HL::Func channelsLastInput;

  Ints shapeOf(size_t input) const { return n.input(input)->shape().staticDims(); }
  Ints resultShape() const { return n.output(0)->shape().staticDims(); }
  HL::Expr read(size_t input, const Exprs& index) const { return at(args[input], index); }
  ShapedFunc result(const std::function<HL::Expr(const Exprs&)>& body) const {
    return define(n.name() + "_y", resultShape(), body);
  }
  // A reduction over `shape`: `init` everywhere, then for every point r of
  // an RDom over `extents`, acc[target(y)] = update(acc[target(y)], y, r), y
  // the pure index (`target` keeps each pure var in its place, so the update
  // stays parallel over them; it may set a dim of extent 1 to 0).
  ShapedFunc reduce(const std::string& name, const Ints& shape, HL::Expr init, const Ints& extents,
                    const std::function<Exprs(const Exprs&)>& target,
                    const std::function<HL::Expr(HL::Expr, const Exprs&, const HL::RDom&)>& update) {
    ShapedFunc acc = define(n.name() + "_" + name, shape, [&](const Exprs&) { return init; });
    HL::RDom r = rdom(extents, n.name() + "_r" + name);
    const Exprs y = exprs(vars(shape.size()));
    Exprs where = target(y);
    ref(acc.func, where) = update(at(acc.func, where), y, r);
    producers.push_back(acc);
    return acc;
  }
};

// y = transpose(x, perm): y dim i reads x dim perm[i].
ShapedFunc buildTranspose(Structured& s) {
  const size_t r = s.shapeOf(0).size();
  Ints perm = s.n.attrInts("perm");
  if (perm.empty()) perm.resize(r), std::iota(perm.rbegin(), perm.rend(), 0);  // default: reverse
  FRICTION_CHECK(perm.size() == r, s.n.describe() + ": perm has the wrong length");
  return s.result([&](const Exprs& y) {
    Exprs x(r);
    for (size_t i = 0; i < r; ++i) x[size_t(normalized(perm[i], int64_t(r)))] = y[i];
    return s.read(0, x);
  });
}

// y = x broadcast (numpy, right-aligned) to the result's shape.
ShapedFunc buildExpand(Structured& s) {
  return s.result([&](const Exprs& y) { return s.read(0, broadcastIndex(s.shapeOf(0), s.resultShape(), y)); });
}

// y[i] = x[start + i * step] per sliced axis (backward axes too).
ShapedFunc buildSlice(Structured& s) {
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  auto starts = constantInts(s.n, 1), ends = constantInts(s.n, 2);
  FRICTION_CHECK(starts && ends, s.n.describe() + ": Slice without starts and ends");
  std::vector<SliceAxis> axes = sliceAxes(int64_t(xs.size()), *starts, *ends, constantInts(s.n, 3), constantInts(s.n, 4));
  for (SliceAxis& a : axes)
    FRICTION_CHECK(clampSlice(xs[size_t(a.axis)], a) == ys[size_t(a.axis)],
                   s.n.describe() + ": Slice result disagrees with its type");
  return s.result([&](const Exprs& y) {
    Exprs x = y;
    for (const SliceAxis& a : axes) x[size_t(a.axis)] = i32(a.start) + y[size_t(a.axis)] * i32(a.step);
    return s.read(0, x);
  });
}

// Each input in its slab of the result along `axis` (reads clamped into each input: select evaluates every arm).
ShapedFunc buildConcat(Structured& s) {
  const Ints ys = s.resultShape();
  const size_t axis = size_t(normalized(s.n.attrInt("axis", 0), int64_t(ys.size())));
  FRICTION_CHECK(axis < ys.size(), s.n.describe() + ": Concat axis out of range");
  return s.result([&](const Exprs& y) {
    HL::Expr value;
    int64_t at = 0;
    for (size_t i = 0; i < s.n.numInputs(); ++i) {
      const int64_t extent = s.shapeOf(i)[axis];
      Exprs x = y;
      x[axis] = clampIndex(y[axis] - i32(at), extent);
      HL::Expr piece = s.read(i, x);
      value = value.defined() ? HL::select(y[axis] < i32(at), value, piece) : piece;
      at += extent;
    }
    FRICTION_CHECK(at == ys[axis], s.n.describe() + ": Concat inputs do not add up to the result");
    return value;
  });
}

// The value outside, x inside (constant mode, no crops).
ShapedFunc buildPad(Structured& s) {
  FRICTION_CHECK(s.n.attrString("mode", "constant") == "constant", s.n.describe() + ": Pad mode other than constant");
  const Ints xs = s.shapeOf(0);
  auto pads = constantInts(s.n, 1);
  FRICTION_CHECK(pads, s.n.describe() + ": Pad without pads");
  const Ints all = padsForAllAxes(int64_t(xs.size()), *pads, constantInts(s.n, 3));
  double value = 0;
  if (s.n.numInputs() > 2 && s.n.input(2)) {
    const Tensor* v = constantData(s.n.input(2));
    FRICTION_CHECK(v && v->numel() <= 1, s.n.describe() + ": Pad value is not a constant scalar");
    if (v->numel() == 1) value = v->elementAsDouble(0);
  }
  for (size_t d = 0; d < xs.size(); ++d)
    FRICTION_CHECK(all[d] >= 0 && all[d + xs.size()] >= 0, s.n.describe() + ": Pad with negative pads (a crop)");
  return s.result([&](const Exprs& y) {
    Exprs x;
    HL::Expr inside = HL::Internal::const_true();
    for (size_t d = 0; d < xs.size(); ++d) {
      HL::Expr i = y[d] - i32(all[d]);
      inside = inside && i >= 0 && i < i32(xs[d]);
      x.push_back(clampIndex(i, xs[d]));
    }
    return HL::select(inside, s.read(0, x), f32(value));
  });
}

// y = (x - mean) * scale / sqrt(var + epsilon) + B, per channel (dim 1).
ShapedFunc buildBatchNorm(Structured& s) {
  FRICTION_CHECK(s.n.attrInt("training_mode", 0) == 0, s.n.describe() + ": BatchNormalization in training mode");
  const Ints xs = s.shapeOf(0);
  FRICTION_CHECK(xs.size() >= 2 && s.args.size() == 5, s.n.describe() + ": BatchNormalization without a channel axis or parameters");
  for (size_t i = 1; i < 5; ++i)
    FRICTION_CHECK(s.args[i].defined() && s.shapeOf(i) == Ints{xs[1]}, s.n.describe() + ": parameters are not one per channel");
  const float eps = s.n.attrFloat("epsilon", 1e-5f);
  return s.result([&](const Exprs& y) {
    Exprs c = {y[1]};
    return (s.read(0, y) - s.read(3, c)) * s.read(1, c) / HL::sqrt(s.read(4, c) + f32(eps)) + s.read(2, c);
  });
}

// The Reduce ops and the global pools: an accumulator over the result,
// updated over an RDom of the reduced dims, then the finishing map.
ShapedFunc buildReduce(Structured& s) {
  const std::string& op = s.n.op();
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  const int64_t r = int64_t(xs.size());
  const bool global = op == "GlobalAveragePool" || op == "GlobalMaxPool";
  const std::vector<bool> reduced = reducedDims(s.n);
  Ints extents;
  int64_t count = 1;
  for (int64_t d = 0; d < r; ++d)
    if (reduced[size_t(d)]) extents.push_back(xs[size_t(d)]), count *= xs[size_t(d)];
  const bool keep = global || s.n.attrInt("keepdims", 1) != 0;
  const bool isMax = op == "ReduceMax" || op == "GlobalMaxPool", isMin = op == "ReduceMin";
  const double inf = std::numeric_limits<double>::infinity();
  // The result's index of a kept-dims result: its reduced dims at 0.
  auto target = [&](const Exprs& y) {
    if (!keep) return y;
    Exprs t = y;
    for (int64_t d = 0; d < r; ++d)
      if (reduced[size_t(d)]) t[size_t(d)] = i32(0);
    return t;
  };
  // x's index: the RDom's dims where reduced, the result's elsewhere.
  auto xIndex = [&](const Exprs& y, const HL::RDom& rd) {
    Exprs xi;
    for (int64_t d = 0, j = 0, k = 0; d < r; ++d) {
      if (reduced[size_t(d)]) xi.push_back(rd[int(j++)]), k += keep;
      else xi.push_back(y[size_t(k++)]);
    }
    return xi;
  };
  ShapedFunc acc = s.reduce("acc", ys, f32(isMax ? -inf : isMin ? inf : 0.0), extents, target,
                            [&](HL::Expr a, const Exprs& y, const HL::RDom& rd) {
                              HL::Expr x = s.read(0, xIndex(y, rd));
                              // std::max(a, x) and std::min(a, x), as the interpreter reduces: x only when it compares.
                              if (isMax) return HL::select(a < x, x, a);
                              if (isMin) return HL::select(x < a, x, a);
                              if (op == "ReduceSumSquare" || op == "ReduceL2") return a + x * x;
                              if (op == "ReduceL1") return a + HL::abs(x);
                              return a + x;
                            });
  if (op == "ReduceMean" || op == "GlobalAveragePool")
    return s.result([&](const Exprs& y) { return at(acc.func, y) * f32(1.0 / double(count)); });
  if (op == "ReduceL2") return s.result([&](const Exprs& y) { return HL::sqrt(at(acc.func, y)); });
  if (op == "ReduceLogSum") return s.result([&](const Exprs& y) { return HL::log(at(acc.func, y)); });
  return acc;
}

// MaxPool and AveragePool (NCHW, any number of spatial dims): an RDom over
// the window; taps outside the input are never read (their index clamped,
// their value not taken). AveragePool divides by the taps each output
// counts: inside the input, or inside the padded input (count_include_pad).
// Computed channels last, reading the channels-last input in place, when
// there is one.
ShapedFunc buildPool(Structured& s) {
  const bool isMax = s.n.op() == "MaxPool";
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  FRICTION_CHECK(xs.size() >= 3 && ys.size() == xs.size(), s.n.describe() + ": pooling needs [N, C, spatial...]");
  const size_t d = xs.size() - 2;
  const Window win = resolveWindow(s.n, {xs.begin() + 2, xs.end()});
  FRICTION_CHECK(win.outputSpatial({xs.begin() + 2, xs.end()}) == Ints(ys.begin() + 2, ys.end()),
                 s.n.describe() + ": pooling result disagrees with its type");
  Vars yv = vars(ys.size());
  HL::Func acc(halideName(s.n.name() + "_pool"));
  HL::RDom k = rdom(win.kernel, s.n.name() + "_window");
  Vars reversed(yv.rbegin(), yv.rend());
  acc(reversed) = f32(isMax ? -std::numeric_limits<double>::infinity() : 0.0);
  Exprs xi = {yv[0], yv[1]};
  HL::Expr inside = HL::Internal::const_true();
  for (size_t i = 0; i < d; ++i) {
    HL::Expr p = yv[2 + i] * i32(win.strides[i]) - i32(win.pads[i]) + k[int(i)] * i32(win.dilations[i]);
    inside = inside && p >= 0 && p < i32(xs[2 + i]);
    xi.push_back(clampIndex(p, xs[2 + i]));
  }
  const bool inPlace = s.channelsLastInput.defined();
  HL::Expr x = inPlace ? at(s.channelsLastInput, channelsLastIndex(xi)) : s.read(0, xi), a = acc(reversed);
  acc(reversed) = isMax ? HL::select(inside && x > a, x, a) : a + HL::select(inside, x, f32(0));
  ShapedFunc pooled{acc, ys};
  s.producers.push_back(inPlace ? channelsLast(pooled) : pooled);
  if (isMax) return pooled;
  const bool includePad = s.n.attrInt("count_include_pad", 0) != 0;
  return s.result([&](const Exprs& y) {
    HL::Expr count = i32(1);
    for (size_t i = 0; i < d; ++i) {
      // Taps t in [0, K) with lo <= o * stride - pad + t * dilation < hi.
      const int64_t lo = includePad ? -win.pads[i] : 0, hi = xs[2 + i] + (includePad ? win.pads[i + d] : 0);
      HL::Expr base = y[2 + i] * i32(win.strides[i]) - i32(win.pads[i]);
      auto firstTap = [&](int64_t bound) {  // ceil((bound - base) / dilation), clamped to [0, K]
        HL::Expr t = (i32(bound) - base + i32(win.dilations[i] - 1)) / i32(win.dilations[i]);
        return HL::clamp(t, 0, int(win.kernel[i]));
      };
      count *= HL::max(firstTap(hi) - firstTap(lo), 0);
    }
    return at(acc, y) / HL::cast<float>(count);
  });
}

// y[outer, q, inner] = data[outer, indices[q], inner] along `axis` (negative
// indices count from the end; out of range, which the interpreter rejects, clamped).
ShapedFunc buildGather(Structured& s) {
  const Ints xs = s.shapeOf(0), qs = s.shapeOf(1), ys = s.resultShape();
  const size_t axis = size_t(normalized(s.n.attrInt("axis", 0), int64_t(xs.size())));
  FRICTION_CHECK(axis < xs.size() && ys.size() == xs.size() - 1 + qs.size(), s.n.describe() + ": Gather shapes disagree");
  const int64_t extent = xs[axis];
  return s.result([&](const Exprs& y) {
    Exprs qi(y.begin() + int64_t(axis), y.begin() + int64_t(axis + qs.size()));
    HL::Expr q = HL::cast<int>(s.read(1, qi));
    q = clampIndex(HL::select(q < 0, q + i32(extent), q), extent);
    Exprs xi(y.begin(), y.begin() + int64_t(axis));
    xi.push_back(q);
    xi.insert(xi.end(), y.begin() + int64_t(axis + qs.size()), y.end());
    return s.read(0, xi);
  });
}

// y = x as another element type, as every friction cast does it (ir/DType.h): to bool compares with zero,
// floats to integers truncate, saturate and send NaN to 0, integers wrap.
ShapedFunc buildCast(Structured& s) {
  const DType from = s.n.input(0)->dtype(), to = s.n.output(0)->dtype();
  const HL::Type type = halideType(to);
  return s.result([&](const Exprs& y) {
    HL::Expr x = s.read(0, y);
    if (to == DType::Bool) return HL::cast(type, x != 0);
    if (from == DType::F32 && to != DType::F32) return HL::select(HL::is_nan(x), HL::cast(type, 0), HL::saturating_cast(type, x));
    return HL::cast(type, x);
  });
}

// A mask op (codegen/MaskOps.def): bools are stored as bytes, read as truth values.
ShapedFunc buildMask(Structured& s) {
  const Ints ys = s.resultShape();
  return s.result([&](const Exprs& y) {
    Exprs in;
    for (size_t i = 0; i < s.n.numInputs(); ++i) {
      HL::Expr e = s.read(i, broadcastIndex(s.shapeOf(i), ys, y));
      in.push_back(s.n.input(i)->dtype() == DType::Bool ? e != 0 : e);
    }
    HL::Expr r = maskFormula(s.n.op(), in);
    return s.n.output(0)->dtype() == DType::Bool ? HL::cast<uint8_t>(r) : r;
  });
}

// y = data with the rows named by constant `indices` (tuples over data's
// leading dims) replaced by the updates' rows: a table from each leading
// position to the update row written there (the last one, as the
// interpreter's loop leaves it), -1 where none is (scatterRows, shared with
// the cpu target's row copies).
ShapedFunc buildScatterND(Structured& s) {
  const Ints xs = s.shapeOf(0), us = s.shapeOf(2);
  const Tensor& indices = *constantData(s.n.input(1));
  const auto scatter = scatterRows(xs, indices.shape(), indices.toInt64Vector(), s.n.input(2)->shape().numel().value_or(-1));
  FRICTION_CHECK(scatter, s.n.describe() + ": index tuples the analysis should have refused");
  const int64_t m = indices.shape().back(), rows = int64_t(scatter->rows.size()), inner = scatter->rowElements;
  const Ints lead(xs.begin(), xs.begin() + m), rest(xs.begin() + m, xs.end());
  const int positions = int(std::accumulate(lead.begin(), lead.end(), int64_t(1), std::multiplies<>()));
  HL::Buffer<int32_t> rowAt(positions);
  rowAt.fill(-1);
  for (int64_t k = 0; k < rows; ++k) rowAt(int(scatter->rows[size_t(k)])) = int32_t(k);
  return s.result([&](const Exprs& y) {
    // Clamped reads: a schedule may compute past the outputs (the table is no clamped input), and bounds
    // inference cannot see through the table to the update row.
    HL::Expr row = rowAt(HL::clamp(flatten(Exprs(y.begin(), y.begin() + m), lead), 0, positions - 1));
    Exprs ui = unflatten(HL::clamp(row, 0, int(rows - 1)) * i32(inner) + flatten(Exprs(y.begin() + m, y.end()), rest), us);
    if (!ui.empty()) ui[0] = clampIndex(ui[0], us[0]);  // scalar updates: no index
    return HL::select(row >= 0, s.read(2, ui), s.read(0, y));
  });
}

// What Softmax and LayerNormalization share: a statistic per row (input 0's
// shape with the normalized dims at 1), reduced over an RDom of x's shape.
struct Statistics {
  Ints xs, shape;
  std::vector<bool> dims;
  int64_t count = 1;
  explicit Statistics(Structured& s) : xs(s.shapeOf(0)), shape(xs), dims(normalizedDims(s.n)) {
    for (size_t d = 0; d < xs.size(); ++d)
      if (dims[d]) shape[d] = 1, count *= xs[d];
  }
  // The statistic's index of x's index `x`; x's index at the RDom point
  // `r` of the row `y`.
  Exprs row(const Exprs& x) const {
    Exprs e;
    for (size_t d = 0; d < xs.size(); ++d) e.push_back(dims[d] ? i32(0) : x[d]);
    return e;
  }
  Exprs point(const Exprs& y, const HL::RDom& r) const {
    Exprs e;
    for (size_t d = 0, j = 0; d < xs.size(); ++d) e.push_back(dims[d] ? HL::Expr(r[int(j++)]) : y[d]);
    return e;
  }
  Ints extents() const {
    Ints e;
    for (size_t d = 0; d < xs.size(); ++d)
      if (dims[d]) e.push_back(xs[d]);
    return e;
  }
  ShapedFunc reduce(Structured& s, const std::string& name, HL::Expr init,
                    const std::function<HL::Expr(HL::Expr, const Exprs&)>& combine) const {
    return s.reduce(name, shape, init, extents(), [&](const Exprs& y) { return row(y); },
                    [&](HL::Expr a, const Exprs& y, const HL::RDom& r) { return combine(a, point(y, r)); });
  }
  ShapedFunc sum(Structured& s, const std::string& name, const std::function<HL::Expr(const Exprs&)>& term) const {
    return reduce(s, name, f32(0), [&](HL::Expr a, const Exprs& x) { return a + term(x); });
  }
};

// Softmax and LogSoftmax: the maxima, the sums of exp(x - max), then
// exp(x - max) / sum or x - max - log(sum).
ShapedFunc buildSoftmax(Structured& s) {
  Statistics st(s);
  const bool log = s.n.op() == "LogSoftmax";
  ShapedFunc mx = st.reduce(s, "max", f32(-std::numeric_limits<double>::infinity()), [&](HL::Expr a, const Exprs& xi) {
    HL::Expr x = s.read(0, xi);
    return HL::select(x > a, x, a);
  });
  ShapedFunc sum = st.sum(s, "sum", [&](const Exprs& x) { return HL::exp(s.read(0, x) - at(mx.func, st.row(x))); });
  return s.result([&](const Exprs& y) {
    HL::Expr c = s.read(0, y) - at(mx.func, st.row(y)), total = at(sum.func, st.row(y));
    return log ? c - HL::log(total) : HL::exp(c) / total;
  });
}

// LayerNormalization over `axis` to the last dim: the means, the (biased)
// variances, then (x - mean) / sqrt(var + epsilon) * scale + B, scale and B
// broadcast over the normalized dims.
ShapedFunc buildLayerNorm(Structured& s) {
  Statistics st(s);
  FRICTION_CHECK(s.args.size() >= 2 && s.args[1].defined(), s.n.describe() + ": LayerNormalization without a scale");
  const float eps = s.n.attrFloat("epsilon", 1e-5f);
  const HL::Expr inverse = f32(1.0 / double(st.count));
  ShapedFunc total = st.sum(s, "sum", [&](const Exprs& x) { return s.read(0, x); });
  auto mean = [&](const Exprs& x) { return at(total.func, st.row(x)) * inverse; };
  ShapedFunc squares = st.sum(s, "squares", [&](const Exprs& x) {
    HL::Expr c = s.read(0, x) - mean(x);
    return c * c;
  });
  const bool hasB = s.args.size() > 2 && s.args[2].defined();
  return s.result([&](const Exprs& y) {
    HL::Expr sd = HL::sqrt(at(squares.func, st.row(y)) * inverse + f32(eps));
    HL::Expr v = (s.read(0, y) - mean(y)) / sd * s.read(1, broadcastIndex(s.shapeOf(1), st.xs, y));
    return hasB ? v + s.read(2, broadcastIndex(s.shapeOf(2), st.xs, y)) : v;
  });
}

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
      a.panel = halide::define(n.name() + "_panel", ws, [&](const Exprs& i) { return at(value(n.input(1)), i); }).func;
    }
    HL::Expr x = source ? at(value(source), channelsLastIndex(xi)) : at(value(n.input(0)), xi);
    HL::Expr w = at(source ? a.panel : value(n.input(1)), wi);
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
    acc(reversed) += at(arg(0), operand(as, y[nb], k, ta)) * at(arg(1), operand(bs, k, y[nb + 1], tb));
    out_.producers.push_back({acc, ys});  // the accumulator; defineNode adds the result
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
