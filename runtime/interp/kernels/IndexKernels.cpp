// Interpreter kernels of the indexing ops: joining and slicing, gather and
// scatter, numeric ops along an axis (CumSum, TopK), Resize.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ir/ops/TensorShapes.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/DataMovement.h"

namespace friction::interp {
namespace {


// ---------------------------------------------------------------- joining and slicing

std::vector<Tensor> concat(const Node& node, const std::vector<Tensor>& in) {
  Shape64 out = in[0].shape();
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", 0), int64_t(out.size())));
  out[a] = 0;
  for (const Tensor& t : in) {
    Shape64 s = t.shape();
    FRICTION_CHECK(t.dtype() == in[0].dtype() && s.size() == out.size(), node.describe() + ": inputs do not match");
    out[a] += s[a];
    for (size_t d = 0; d < s.size(); ++d)
      FRICTION_CHECK(d == a || s[d] == out[d], node.describe() + ": input shape " + t.type().shape.str() +
                                                   " differs off the concat axis");
  }
  Tensor r(in[0].dtype(), out);
  Lines lo(out, a);
  size_t es = dtypeSize(r.dtype());
  int64_t offset = 0;  // along the axis
  for (const Tensor& t : in) {
    Lines li(t.shape(), a);
    for (int64_t o = 0; o < lo.outer; ++o)
      std::memcpy(static_cast<char*>(r.rawData()) + size_t(lo.at(o, 0, offset)) * es,
                  static_cast<const char*>(t.rawData()) + size_t(li.at(o, 0, 0)) * es, size_t(li.n * li.inner) * es);
    offset += li.n;
  }
  return {r};
}

// Elements [start, start + count) along `axis`, stepping by `step`.
Tensor sliceAxis(const Tensor& x, size_t axis, int64_t start, int64_t count, int64_t step) {
  Shape64 out = x.shape();
  out[axis] = count;
  Shape64 strides = stridesOf(x.shape());
  int64_t base = start * strides[axis];
  strides[axis] *= step;
  return gatherBy(x, out, [&](const Shape64& idx, int64_t) { return base + dot(idx, strides); });
}

std::vector<Tensor> split(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", 0), int64_t(x.rank())));
  Shape64 sizes = splitSizes(x.shape()[a], optionalInts(in, 1), node.numOutputs());
  std::vector<Tensor> outs;
  int64_t start = 0;
  for (int64_t s : sizes) {
    outs.push_back(sliceAxis(x, a, start, s, 1));
    start += s;
  }
  return outs;
}

std::vector<Tensor> slice(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Shape64 out = x.shape(), strides = stridesOf(x.shape());
  Shape64 starts(x.rank(), 0), steps(x.rank(), 1);
  for (SliceAxis s : sliceAxes(int64_t(x.rank()), in[1].toInt64Vector(), in[2].toInt64Vector(), optionalInts(in, 3),
                               optionalInts(in, 4))) {
    size_t a = size_t(s.axis);
    out[a] = clampSlice(out[a], s);
    starts[a] = s.start;
    steps[a] = s.step;
  }
  int64_t base = dot(starts, strides);
  for (size_t d = 0; d < strides.size(); ++d) strides[d] *= steps[d];
  return {gatherBy(x, out, [&](const Shape64& idx, int64_t) { return base + dot(idx, strides); })};
}

std::vector<Tensor> compress(const Node& node, const std::vector<Tensor>& in) {
  Tensor x = node.hasAttr("axis") ? in[0] : in[0].reshaped({in[0].numel()});
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", 0), int64_t(x.rank())));
  FRICTION_CHECK(in[1].numel() <= x.shape()[a], node.describe() + ": condition is longer than the axis");
  Shape64 keep;
  for (int64_t i = 0; i < in[1].numel(); ++i)
    if (in[1].elementAsDouble(i) != 0) keep.push_back(i);
  Shape64 out = x.shape(), strides = stridesOf(x.shape());
  out[a] = int64_t(keep.size());
  return {gatherBy(x, out, [&](const Shape64& idx, int64_t) {
    return dot(idx, strides) + (keep[size_t(idx[a])] - idx[a]) * strides[a];
  })};
}

// ---------------------------------------------------------------- gather and scatter

std::vector<Tensor> gather(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &indices = in[1];
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", 0), int64_t(x.rank())));
  size_t q = indices.rank();
  Shape64 out(x.shape().begin(), x.shape().begin() + long(a));
  out.insert(out.end(), indices.shape().begin(), indices.shape().end());
  out.insert(out.end(), x.shape().begin() + long(a) + 1, x.shape().end());
  Shape64 xs = stridesOf(x.shape()), is = stridesOf(indices.shape());
  return {gatherBy(x, out, [&](const Shape64& idx, int64_t) {
    int64_t src = 0, flatIndex = 0;
    for (size_t d = 0; d < a; ++d) src += idx[d] * xs[d];
    for (size_t d = 0; d < q; ++d) flatIndex += idx[a + d] * is[d];
    src += wrapIndex(indices.elementAsInt(flatIndex), x.shape()[a]) * xs[a];
    for (size_t d = a + 1; d < x.rank(); ++d) src += idx[d + q - 1] * xs[d];
    return src;
  })};
}

std::vector<Tensor> gatherElements(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &indices = in[1];
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", 0), int64_t(x.rank())));
  FRICTION_CHECK(indices.rank() == x.rank(), node.describe() + ": indices rank differs from data rank");
  Shape64 xs = stridesOf(x.shape());
  return {gatherBy(x, indices.shape(), [&](const Shape64& idx, int64_t k) {
    return dot(idx, xs) + (wrapIndex(indices.elementAsInt(k), x.shape()[a]) - idx[a]) * xs[a];
  })};
}

// Applies ScatterElements/ScatterND's reduction: dst[di] (op)= src[si].
void scatterOne(Tensor& dst, int64_t di, const Tensor& src, int64_t si, const std::string& reduction) {
  if (reduction == "none") return copyElem(dst.rawData(), di, src.rawData(), si, dtypeSize(dst.dtype()));
  dispatchNumeric(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    T& d = dst.data<T>()[di];
    T s = src.data<T>()[si];
    d = reduction == "add" ? T(d + s) : reduction == "mul" ? T(d * s) : reduction == "max" ? std::max(d, s) : std::min(d, s);
  });
}

std::string reductionOf(const Node& node) {
  std::string r = node.attrString("reduction", "none");
  FRICTION_CHECK(r == "none" || r == "add" || r == "mul" || r == "max" || r == "min",
                 node.describe() + ": unsupported reduction '" + r + "'");
  return r;
}

std::vector<Tensor> scatterElements(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &indices = in[1], &updates = in[2];
  Tensor out = in[0].clone();
  std::string red = reductionOf(node);
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", 0), int64_t(out.rank())));
  FRICTION_CHECK(indices.shape() == updates.shape() && indices.rank() == out.rank(),
                 node.describe() + ": indices and updates must have data's rank and the same shape");
  Shape64 os = stridesOf(out.shape());
  forEachIndex(indices.shape(), [&](const Shape64& idx, int64_t k) {
    int64_t dst = dot(idx, os) + (wrapIndex(indices.elementAsInt(k), out.shape()[a]) - idx[a]) * os[a];
    scatterOne(out, dst, updates, k, red);
  });
  return {out};
}

// GatherND and ScatterND: for every index tuple (the last axis of `indices`),
// the flat offset into `data` of the slice it addresses and that slice's size.
template <typename Fn>
void forEachNdSlice(const Node& node, const Shape64& data, const Tensor& indices, int64_t batchDims, Fn&& fn) {
  FRICTION_CHECK(indices.rank() >= 1, node.describe() + ": indices must have rank >= 1");
  int64_t m = indices.dim(-1), b = batchDims;
  FRICTION_CHECK(b >= 0 && b < int64_t(indices.rank()) && b + m <= int64_t(data.size()),
                 node.describe() + ": indices do not fit the data");
  Shape64 ds = stridesOf(data);
  int64_t sliceSize = std::accumulate(data.begin() + b + m, data.end(), int64_t(1), std::multiplies<>());
  int64_t batches = std::accumulate(data.begin(), data.begin() + b, int64_t(1), std::multiplies<>());
  int64_t tuples = m ? indices.numel() / m : indices.numel();
  int64_t perBatch = tuples / std::max<int64_t>(batches, 1);
  int64_t batchStride = b ? ds[size_t(b - 1)] : 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (t / std::max<int64_t>(perBatch, 1)) * batchStride;
    for (int64_t j = 0; j < m; ++j)
      offset += wrapIndex(indices.elementAsInt(t * m + j), data[size_t(b + j)]) * ds[size_t(b + j)];
    fn(t, offset, sliceSize);
  }
}

std::vector<Tensor> gatherND(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &indices = in[1];
  int64_t b = node.attrInt("batch_dims", 0), m = indices.dim(-1);
  Shape64 out(indices.shape().begin(), indices.shape().end() - 1);
  out.insert(out.end(), x.shape().begin() + b + m, x.shape().end());
  Tensor r(x.dtype(), out);
  size_t es = dtypeSize(x.dtype());
  forEachNdSlice(node, x.shape(), indices, b, [&](int64_t t, int64_t offset, int64_t size) {
    std::memcpy(static_cast<char*>(r.rawData()) + size_t(t * size) * es,
                static_cast<const char*>(x.rawData()) + size_t(offset) * es, size_t(size) * es);
  });
  return {r};
}

std::vector<Tensor> scatterND(const Node& node, const std::vector<Tensor>& in) {
  Tensor out = in[0].clone();
  std::string red = reductionOf(node);
  forEachNdSlice(node, out.shape(), in[1], 0, [&](int64_t t, int64_t offset, int64_t size) {
    for (int64_t e = 0; e < size; ++e) scatterOne(out, offset + e, in[2], t * size + e, red);
  });
  return {out};
}

// ---------------------------------------------------------------- numeric ops along an axis

std::vector<Tensor> cumSum(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  Tensor out(x.dtype(), x.shape());
  size_t a = size_t(normalizeAxis(node, in[1].elementAsInt(0), int64_t(x.rank())));
  bool exclusive = node.attrInt("exclusive", 0) != 0, reverse = node.attrInt("reverse", 0) != 0;
  Lines l(x.shape(), a);
  dispatchNumeric(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t i = 0; i < l.inner; ++i) {
        T sum = T(0);
        for (int64_t s = 0; s < l.n; ++s) {
          int64_t j = l.at(o, i, reverse ? l.n - 1 - s : s);
          if (exclusive) dst[j] = sum;
          sum = T(sum + src[j]);
          if (!exclusive) dst[j] = sum;
        }
      }
  });
  return {out};
}

std::vector<Tensor> topK(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  size_t a = size_t(normalizeAxis(node, node.attrInt("axis", -1), int64_t(x.rank())));
  int64_t k = in[1].elementAsInt(0);
  FRICTION_CHECK(k >= 0 && k <= x.shape()[a], node.describe() + ": k=" + std::to_string(k) + " exceeds the axis");
  bool largest = node.attrInt("largest", 1) != 0;
  Shape64 outShape = x.shape();
  outShape[a] = k;
  Tensor values(x.dtype(), outShape), indices(DType::I64, outShape);
  Lines l(x.shape(), a), lo(outShape, a);
  dispatchNumeric(x.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* src = x.data<T>();
    Shape64 order(size_t(l.n));
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t i = 0; i < l.inner; ++i) {
        std::iota(order.begin(), order.end(), 0);
        // Stable: equal values keep the lower index first, as ONNX requires.
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
          T vp = src[l.at(o, i, p)], vq = src[l.at(o, i, q)];
          return largest ? vp > vq : vp < vq;
        });
        for (int64_t j = 0; j < k; ++j) {
          values.data<T>()[lo.at(o, i, j)] = src[l.at(o, i, order[size_t(j)])];
          indices.data<int64_t>()[lo.at(o, i, j)] = order[size_t(j)];
        }
      }
  });
  return {values, indices};
}

// ---------------------------------------------------------------- Resize

// Resizes one axis of `data` (shape `shape`, updated) to `out` elements.
std::vector<double> resizeAxis(const ResizeParams& p, const std::vector<double>& data, Shape64& shape, size_t axis,
                               int64_t out, double scale, double roiStart, double roiEnd) {
  Lines li(shape, axis);
  shape[axis] = out;
  Lines lo(shape, axis);
  std::vector<double> r(size_t(checkedNumel(shape)));
  Shape64 idx;
  std::vector<double> w;
  for (int64_t j = 0; j < out; ++j) {
    bool inside = resizeTaps(p, j, li.n, out, scale, roiStart, roiEnd, idx, w);
    for (int64_t o = 0; o < li.outer; ++o)
      for (int64_t i = 0; i < li.inner; ++i) {
        double v = p.extrapolation;
        if (inside) {
          v = 0;
          for (size_t t = 0; t < idx.size(); ++t) v += w[t] * data[size_t(li.at(o, i, idx[t]))];
        }
        r[size_t(lo.at(o, i, j))] = v;
      }
  }
  return r;
}

std::vector<Tensor> resize(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  size_t rank = x.rank();
  auto given = [&](size_t i) { return i < in.size() && in[i].defined() && in[i].numel() > 0; };
  const ResizeParams p = resizeParams(node);
  FRICTION_CHECK(given(2) || given(3), node.describe() + ": scales or sizes must be given");
  std::vector<double> roi = given(1) ? in[1].toDoubleVector() : std::vector<double>{};
  FRICTION_CHECK(roi.empty() || roi.size() == 2 * rank, node.describe() + ": roi must have 2*rank entries");
  FRICTION_CHECK(p.ctm != "tf_crop_and_resize" || !roi.empty(), node.describe() + ": tf_crop_and_resize needs roi");
  Shape64 shape = x.shape(), outSizes;
  std::vector<double> scales;
  if (given(3)) {  // with scales too (keep_aspect_ratio_policy), they map the coordinates
    outSizes = in[3].toInt64Vector();
    FRICTION_CHECK(outSizes.size() == rank, node.describe() + ": sizes must have rank entries");
  }
  if (given(2)) {
    FRICTION_CHECK(size_t(in[2].numel()) == rank, node.describe() + ": scales must have rank entries");
    for (size_t d = 0; d < rank; ++d) {
      float s = float(in[2].elementAsDouble(int64_t(d)));
      if (!given(3)) outSizes.push_back(resizeDim(shape[d], s));
      scales.push_back(double(s));
    }
  } else {
    for (size_t d = 0; d < rank; ++d) scales.push_back(double(outSizes[d]) / double(shape[d]));
  }
  // Interpolation is separable; the reference also resizes the last axis first.
  std::vector<double> data = x.toDoubleVector();
  for (size_t d = rank; d-- > 0;)
    data = resizeAxis(p, data, shape, d, outSizes[d], scales[d], roi.empty() ? 0 : roi[d],
                      roi.empty() ? 1 : roi[d + rank]);
  if (isInteger(x.dtype()) || x.dtype() == DType::Bool)
    for (double& v : data) v = std::nearbyint(v);
  return {Tensor::fromVector<double>(DType::F64, shape, data).castTo(x.dtype())};
}

// ---------------------------------------------------------------- GridSample

// X [N, C, D1..Dr] sampled at grid [N, O1..Or, r]: each output position's taps per spatial dim
// (gridSampleTaps; the grid's first coordinate is the last dim's), summed over every combination of them.
std::vector<Tensor> gridSample(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &grid = in[1];
  const GridSampleParams p = gridSampleParams(node);
  const size_t rank = x.rank(), r = rank - 2;
  FRICTION_CHECK(rank >= 3 && grid.rank() == rank && grid.dim(-1) == int64_t(r) && grid.dim(0) == x.dim(0),
                 node.describe() + ": X " + x.type().shape.str() + " and grid " + grid.type().shape.str() + " do not match");
  const int64_t batch = x.dim(0), channels = x.dim(1);
  Shape64 outShape = {batch, channels}, spatial(x.shape().begin() + 2, x.shape().end());
  int64_t positions = 1;
  for (size_t d = 1; d <= r; ++d) outShape.push_back(grid.dim(int(d))), positions *= grid.dim(int(d));
  const Shape64 strides = stridesOf(spatial);
  const int64_t pixels = checkedNumel(spatial);
  const std::vector<double> xv = x.toDoubleVector(), gv = grid.toDoubleVector();
  std::vector<double> y(size_t(batch * channels * positions));
  std::vector<std::vector<int64_t>> idx(r);
  std::vector<std::vector<float>> w(r);
  std::vector<size_t> k(r);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t pos = 0; pos < positions; ++pos) {
      for (size_t d = 0; d < r; ++d)
        gridSampleTaps(p, float(gv[size_t((n * positions + pos) * int64_t(r)) + (r - 1 - d)]), spatial[d], idx[d], w[d]);
      for (int64_t c = 0; c < channels; ++c) {
        const double* plane = xv.data() + (n * channels + c) * pixels;
        double sum = 0;
        std::fill(k.begin(), k.end(), 0);
        for (bool more = true; more;) {  // every combination of the dims' taps
          double weight = 1;
          int64_t offset = 0;
          for (size_t d = 0; d < r && offset >= 0; ++d) {
            const int64_t i = idx[d][k[d]];
            offset = i < 0 ? -1 : offset + i * strides[d];
            weight *= double(w[d][k[d]]);
          }
          if (offset >= 0) sum += weight * plane[offset];
          more = false;
          for (size_t d = r; d-- > 0 && !more;) more = ++k[d] < idx[d].size() || (k[d] = 0, false);
        }
        y[size_t((n * channels + c) * positions + pos)] = sum;
      }
    }
  return {Tensor::fromVector<double>(DType::F64, outShape, y).castTo(x.dtype())};
}

}  // namespace

void registerIndexKernels(KernelRegistry& r) {
  r.add("Concat", concat);
  r.add("Split", split);
  r.add("Slice", slice);
  r.add("Compress", compress);
  r.add("Gather", gather);
  r.add("GatherElements", gatherElements);
  r.add("GatherND", gatherND);
  r.add("ScatterElements", [](const Node& n, const std::vector<Tensor>& in) { return upcastHalf(n, in, scatterElements); });
  r.add("ScatterND", [](const Node& n, const std::vector<Tensor>& in) { return upcastHalf(n, in, scatterND); });
  r.add("CumSum", [](const Node& n, const std::vector<Tensor>& in) { return upcastHalf(n, in, cumSum); });
  r.add("TopK", [](const Node& n, const std::vector<Tensor>& in) { return upcastHalf(n, in, topK); });
  r.add("Resize", resize);
  r.add("GridSample", gridSample);
}

}  // namespace friction::interp
