// The Structured ops' algorithms (FuncHelpers.h): one build function per row
// of codegen/StructuredOps.def, each following the interpreter's kernel
// (runtime/interp/kernels/) and the MLIR builder's (codegen/mlir/
// StructuredKernels.cpp), NaN handling included: max and min as compare +
// select, a NaN tap never taken by a max pool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "codegen/KernelAnalysis.h"
#include "codegen/NativeKernels.h"
#include "codegen/halide/FuncHelpers.h"
#include "ir/Error.h"
#include "ir/ops/NnShapes.h"
#include "ir/ops/TensorShapes.h"

namespace friction::codegen::halide {

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
  const Ints xs = s.shapeOf(0);
  const ConstantPad pad = constantPad(s.n);
  const Ints& all = pad.pads;
  const double value = pad.value;
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
// updated over an RDom of the reduced dims, then the finishing map. A global
// pool of a channels-last input is computed channels last, as buildPool.
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
  // A global pool of a channels-last input reads it in place, channels in lanes.
  const bool inPlace = global && s.channelsLastInput.defined();
  ShapedFunc acc = s.reduce("acc", ys, f32(isMax ? -inf : isMin ? inf : 0.0), extents, target,
                            [&](HL::Expr a, const Exprs& y, const HL::RDom& rd) {
                              HL::Expr x = inPlace ? at(s.channelsLastInput, channelsLastIndex(xIndex(y, rd)))
                                                   : s.read(0, xIndex(y, rd));
                              // std::max(a, x) and std::min(a, x), as the interpreter reduces: x only when it compares.
                              if (isMax) return HL::select(a < x, x, a);
                              if (isMin) return HL::select(x < a, x, a);
                              if (op == "ReduceSumSquare" || op == "ReduceL2") return a + x * x;
                              if (op == "ReduceL1") return a + HL::abs(x);
                              return a + x;
                            });
  if (inPlace) s.producers.back() = channelsLast(s.producers.back());
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
  s.constants.push_back(rowAt);
  return s.result([&](const Exprs& y) {
    // Clamped reads: a schedule may compute past the outputs (the table is no clamped input), and bounds
    // inference cannot see through the table to the update row.
    HL::Expr row = rowAt(HL::clamp(flatten(Exprs(y.begin(), y.begin() + m), lead), 0, positions - 1));
    Exprs ui = unflatten(HL::clamp(row, 0, int(rows - 1)) * i32(inner) + flatten(Exprs(y.begin() + m, y.end()), rest), us);
    if (!ui.empty()) ui[0] = clampIndex(ui[0], us[0]);  // scalar updates: no index
    return HL::select(row >= 0, s.read(2, ui), s.read(0, y));
  });
}

// Resize through its tap tables (resizeTables, shared with the cpu target's gather): each output element the
// sum, over one tap of every interpolated axis, of the taps' weights' product times x at their positions.
// Tables and the input are read at clamped positions, as a schedule may compute past the outputs and bounds
// inference cannot see through a table.
ShapedFunc buildResize(Structured& s) {
  const Ints xs = s.shapeOf(0), ys = s.resultShape();
  const auto axes = resizeTables(s.n, {s.n.inputs().begin(), s.n.inputs().end()}, xs, ys);
  FRICTION_CHECK(axes, s.n.describe() + ": a Resize the analysis should have refused");
  std::vector<HL::Buffer<int32_t>> index(axes->size());
  std::vector<HL::Buffer<float>> weight(axes->size());
  std::vector<bool> kept, weighted;  // an axis that keeps every position; one with a weight other than 1
  for (size_t d = 0; d < axes->size(); ++d) {
    const ukernels::ResizeAxis& a = (*axes)[d];
    kept.push_back(a.identity());
    weighted.push_back(std::any_of(a.weight.begin(), a.weight.end(), [](float w) { return w != 1.f; }));
    if (kept.back()) continue;
    index[d] = HL::Buffer<int32_t>(int(a.index.size()));
    weight[d] = HL::Buffer<float>(int(a.weight.size()));
    // Laid out a tap's positions at a time (tap t of position o at t * out + o), so a vector of output positions
    // reads each tap's entries densely: read strided (o * taps + t), friction's schedule and Mullapudi2016 crashed
    // on an aligned vector load where the vector did not start at a multiple of the lanes (a width of 18).
    for (int64_t o = 0; o < a.out; ++o)
      for (int64_t t = 0; t < a.taps; ++t) {
        const size_t from = size_t(o * a.taps + t);
        const int to = int(t * a.out + o);
        index[d](to) = int32_t(a.index[from]), weight[d](to) = a.weight[from];
      }
    s.constants.push_back(index[d]), s.constants.push_back(weight[d]);
  }
  return s.result([&](const Exprs& y) {
    HL::Expr sum;
    std::vector<int64_t> tap(xs.size(), 0);  // one tap of every resized axis, counted like digits
    for (bool more = true; more;) {
      Exprs x;
      HL::Expr w;
      for (size_t d = 0; d < xs.size(); ++d) {
        if (kept[d]) {
          x.push_back(y[d]);
          continue;
        }
        HL::Expr k = HL::clamp(y[d], 0, int((*axes)[d].out - 1)) + int(tap[d] * (*axes)[d].out);
        x.push_back(clampIndex(index[d](k), xs[d]));  // in range already: for bounds inference
        if (weighted[d]) w = w.defined() ? w * weight[d](k) : weight[d](k);
      }
      HL::Expr term = w.defined() ? w * s.read(0, x) : s.read(0, x);
      sum = sum.defined() ? sum + term : term;
      more = false;
      for (size_t d = xs.size(); d-- > 0 && !more;)
        if (!kept[d] && ++tap[d] < (*axes)[d].taps) more = true;
        else tap[d] = 0;
    }
    return sum;
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

// The means, the (biased) variances, then (x - mean) / sqrt(var + epsilon) *
// scale + B, scale and B read at `param`'s index of x's index.
ShapedFunc normalize(Structured& s, const std::function<Exprs(int, const Exprs&)>& param) {
  Statistics st(s);
  FRICTION_CHECK(s.args.size() >= 2 && s.args[1].defined(), s.n.describe() + ": " + s.n.op() + " without a scale");
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
    HL::Expr v = (s.read(0, y) - mean(y)) / sd * s.read(1, param(1, y));
    return hasB ? v + s.read(2, param(2, y)) : v;
  });
}

// LayerNormalization over `axis` to the last dim, scale and B broadcast over
// the normalized dims.
ShapedFunc buildLayerNorm(Structured& s) {
  const Ints xs = s.shapeOf(0);
  return normalize(s, [&](int k, const Exprs& y) { return broadcastIndex(s.shapeOf(k), xs, y); });
}

// InstanceNormalization over each image plane, scale and B one per channel.
ShapedFunc buildInstanceNorm(Structured& s) {
  return normalize(s, [](int, const Exprs& y) { return Exprs{y[1]}; });
}

}  // namespace friction::codegen::halide
