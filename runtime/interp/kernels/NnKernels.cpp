// Interpreter kernels of the NN ops. Conv/ConvTranspose/MatMul/Gemm go
// through the shared blocked GEMM (Gemm.h); the rest are plain loops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/ops/NnShapes.h"
#include "ir/ops/ShapeHelpers.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/Gemm.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

using Tensors = std::vector<Tensor>;

// Arithmetic dtypes (numeric without Bool).
template <typename Fn>
auto dispatchArith(DType t, Fn&& fn) {
  if (t == DType::Bool) throw Error("dtype bool is not supported by this kernel");
  return dispatchNumeric(t, [&](auto tag) {
    if constexpr (std::is_same_v<decltype(tag), bool>) return fn(int8_t{});  // unreachable
    else return fn(tag);
  });
}

// Wraps f(tag, node, inputs) as a kernel over float/double (halves upcast).
template <typename F>
Kernel floatKernel(F f) {
  return [f](const Node& node, const Tensors& in) {
    return upcastHalf(node, in, [&](const Node& n, const Tensors& up) {
      return dispatchFloat(up[0].dtype(), [&](auto tag) { return f(tag, n, up); });
    });
  };
}
// Same over every arithmetic dtype.
template <typename F>
Kernel arithKernel(F f) {
  return [f](const Node& node, const Tensors& in) {
    return upcastHalf(node, in, [&](const Node& n, const Tensors& up) {
      return dispatchArith(up[0].dtype(), [&](auto tag) { return f(tag, n, up); });
    });
  };
}

int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

std::vector<int64_t> spatialOf(const std::vector<int64_t>& shape) { return {shape.begin() + 2, shape.end()}; }

// Multi-index of row-major flat index `flat` in `shape`.
void unravel(int64_t flat, const std::vector<int64_t>& shape, std::vector<int64_t>& idx) {
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
}

// Calls fn(pos, inIdx) for every output position `pos` of a sliding window
// whose tap at kernel offset `kofs` (flat) lands inside the input; inIdx is
// the row-major index within one input plane. Shared by im2col/col2im.
template <typename Fn>
void forEachTap(const Window& w, const std::vector<int64_t>& inSp, const std::vector<int64_t>& outSp, int64_t kofs,
                Fn fn) {
  size_t nd = inSp.size();
  std::vector<int64_t> k(nd), o(nd);
  unravel(kofs, w.kernel, k);
  int64_t last = nd ? outSp[nd - 1] : 1, runs = product(outSp) / std::max<int64_t>(last, 1);
  if (last == 0) return;
  for (int64_t run = 0; run < runs; ++run) {
    // Outer dims fixed for the run; the last dim varies contiguously.
    int64_t rem = run, base = 0;
    bool inside = true;
    for (size_t d = nd - 1; d-- > 0;) {
      o[d] = rem % outSp[d];
      rem /= outSp[d];
    }
    for (size_t d = 0; d + 1 < nd; ++d) {
      int64_t p = o[d] * w.strides[d] - w.pads[d] + k[d] * w.dilations[d];
      inside = inside && p >= 0 && p < inSp[d];
      base = base * inSp[d] + p;
    }
    if (!inside) continue;
    size_t L = nd - 1;
    int64_t off = -w.pads[L] + k[L] * w.dilations[L], s = w.strides[L];
    for (int64_t ol = 0; ol < last; ++ol) {
      int64_t p = ol * s + off;
      if (p >= 0 && p < inSp[L]) fn(run * last + ol, base * inSp[L] + p);
    }
  }
}

// col[(c*K + k), pos] = x[c, window tap], zero outside the input.
template <typename T>
void im2col(const T* x, int64_t channels, const Window& w, const std::vector<int64_t>& inSp,
            const std::vector<int64_t>& outSp, T* col) {
  int64_t ks = w.kernelSize(), plane = product(inSp), cols = product(outSp);
#pragma omp parallel for if (channels * ks * cols > 100000)
  for (int64_t row = 0; row < channels * ks; ++row) {
    T* c = col + row * cols;
    const T* xc = x + (row / ks) * plane;
    std::fill(c, c + cols, T(0));
    forEachTap(w, inSp, outSp, row % ks, [&](int64_t pos, int64_t i) { c[pos] = xc[i]; });
  }
}

// The adjoint of im2col: y[c, tap] += col[(c*K + k), pos]; parallel over channels.
template <typename T>
void col2im(const T* col, int64_t channels, const Window& w, const std::vector<int64_t>& ySp,
            const std::vector<int64_t>& colSp, T* y) {
  int64_t ks = w.kernelSize(), plane = product(ySp), cols = product(colSp);
#pragma omp parallel for if (channels * ks * cols > 100000)
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t k = 0; k < ks; ++k) {
      const T* src = col + (c * ks + k) * cols;
      T* yc = y + c * plane;
      forEachTap(w, ySp, colSp, k, [&](int64_t pos, int64_t i) { yc[i] += src[pos]; });
    }
}

template <typename T>
void addBias(Tensor& y, const Tensor& b) {
  if (!b.defined()) return;
  int64_t channels = y.dim(1), plane = product(y.shape(), 2), planes = y.numel() / std::max<int64_t>(plane, 1);
  T* py = y.data<T>();
  const T* pb = b.data<T>();
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < plane; ++i) py[p * plane + i] += pb[p % channels];
}

void checkConvInputs(const Node& node, const Tensor& x, const Tensor& w) {
  FRICTION_CHECK(x.rank() >= 3 && w.rank() == x.rank(), node.describe() + ": input " + x.type().shape.str() +
                                                            " and weight " + w.type().shape.str() + " ranks differ");
}

template <typename T>
Tensors conv(T, const Node& node, const Tensors& in) {
  const Tensor &x = in[0], &w = in[1];
  checkConvInputs(node, x, w);
  int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), cg = w.dim(1), g = node.attrInt("group", 1);
  FRICTION_CHECK(g >= 1 && c == cg * g && m % g == 0,
                 node.describe() + ": channels mismatch (input " + x.type().shape.str() + ", weight " +
                     w.type().shape.str() + ", group " + std::to_string(g) + ")");
  std::vector<int64_t> inSp = spatialOf(x.shape());
  Window win = resolveWindow(node, inSp, spatialOf(w.shape()));
  std::vector<int64_t> outSp = win.outputSpatial(inSp);
  std::vector<int64_t> yShape = {n, m};
  yShape.insert(yShape.end(), outSp.begin(), outSp.end());
  Tensor y(x.dtype(), yShape);
  int64_t mg = m / g, k = cg * win.kernelSize(), cols = product(outSp), plane = product(inSp);
  // A 1x1 stride-1 unpadded conv reads the input as the im2col matrix directly.
  bool pointwise = win.kernelSize() == 1 && product(win.strides) == 1 &&
                   std::all_of(win.pads.begin(), win.pads.end(), [](int64_t p) { return p == 0; });
  std::vector<T> col(pointwise ? 0 : size_t(k * cols));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < g; ++gi) {
      const T* xg = x.data<T>() + (b * c + gi * cg) * plane;
      if (!pointwise) im2col(xg, cg, win, inSp, outSp, col.data());
      gemm<T>(false, false, mg, cols, k, T(1), w.data<T>() + gi * mg * k, k, pointwise ? xg : col.data(), cols, T(0),
              y.data<T>() + (b * m + gi * mg) * cols, cols);
    }
  addBias<T>(y, in.size() > 2 ? in[2] : Tensor());
  return {y};
}

template <typename T>
Tensors convTranspose(T, const Node& node, const Tensors& in) {
  const Tensor &x = in[0], &w = in[1];
  checkConvInputs(node, x, w);
  int64_t n = x.dim(0), c = x.dim(1), g = node.attrInt("group", 1), mg = w.dim(1), m = mg * g;
  FRICTION_CHECK(g >= 1 && w.dim(0) == c && c % g == 0,
                 node.describe() + ": channels mismatch (input " + x.type().shape.str() + ", weight " +
                     w.type().shape.str() + ", group " + std::to_string(g) + ")");
  std::vector<int64_t> inSp = spatialOf(x.shape());
  TransposeGeometry geo = resolveConvTranspose(node, inSp, spatialOf(w.shape()));
  std::vector<int64_t> yShape = {n, m};
  yShape.insert(yShape.end(), geo.outSpatial.begin(), geo.outSpatial.end());
  Tensor y(x.dtype(), yShape);
  int64_t cg = c / g, ks = geo.window.kernelSize(), rows = mg * ks, cols = product(inSp);
  int64_t yPlane = product(geo.outSpatial);
  std::vector<T> col(size_t(rows * cols));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < g; ++gi) {
      // col = W_g^T x_g, then scatter each column's taps into the output.
      gemm<T>(true, false, rows, cols, cg, T(1), w.data<T>() + gi * cg * rows, rows,
              x.data<T>() + (b * c + gi * cg) * cols, cols, T(0), col.data(), cols);
      col2im(col.data(), mg, geo.window, geo.outSpatial, inSp, y.data<T>() + (b * m + gi * mg) * yPlane);
    }
  addBias<T>(y, in.size() > 2 ? in[2] : Tensor());
  return {y};
}

// ---- MatMul / Gemm ----

template <typename T>
Tensors matMul(T, const Node& node, const Tensors& in) {
  std::vector<int64_t> a = in[0].shape(), b = in[1].shape();
  FRICTION_CHECK(!a.empty() && !b.empty(), node.describe() + ": operands must have rank >= 1");
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA) a.insert(a.begin(), 1);
  if (vecB) b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  FRICTION_CHECK(b[b.size() - 2] == K, node.describe() + ": inner dimensions differ: " + in[0].type().shape.str() +
                                           " x " + in[1].type().shape.str());
  std::vector<int64_t> batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  std::vector<int64_t> batch = broadcastStatic(batchA, batchB, node.describe());
  std::vector<int64_t> yShape = batch;
  if (!vecA) yShape.push_back(M);
  if (!vecB) yShape.push_back(N);
  Tensor y(in[0].dtype(), yShape);
  const T *pa = in[0].data<T>(), *pb = in[1].data<T>();
  T* py = y.data<T>();
  int64_t nb = product(batch);
  if (batchB.empty() || product(batchB) == 1) {
    // B is shared by every batch: one tall GEMM over all of A's rows.
    if (product(batchA) == nb) {
      gemm<T>(false, false, nb * M, N, K, T(1), pa, K, pb, N, T(0), py, N);
      return {y};
    }
  }
  std::vector<int64_t> mapA = broadcastIndexMap(batch, batchA), mapB = broadcastIndexMap(batch, batchB);
  for (int64_t i = 0; i < nb; ++i)
    gemm<T>(false, false, M, N, K, T(1), pa + mapA[size_t(i)] * M * K, K, pb + mapB[size_t(i)] * K * N, N, T(0),
            py + i * M * N, N);
  return {y};
}

template <typename T>
Tensors gemmOp(T, const Node& node, const Tensors& in) {
  const Tensor &a = in[0], &b = in[1];
  FRICTION_CHECK(a.rank() == 2 && b.rank() == 2, node.describe() + ": A and B must be 2-D");
  bool ta = node.attrInt("transA", 0) != 0, tb = node.attrInt("transB", 0) != 0;
  int64_t M = a.dim(ta ? 1 : 0), K = a.dim(ta ? 0 : 1), N = b.dim(tb ? 0 : 1);
  FRICTION_CHECK(b.dim(tb ? 1 : 0) == K, node.describe() + ": K mismatch between A " + a.type().shape.str() +
                                             " and B " + b.type().shape.str());
  T alpha = T(node.attrFloat("alpha", 1.0f)), beta = T(node.attrFloat("beta", 1.0f));
  Tensor y(a.dtype(), {M, N});
  T* py = y.data<T>();
  bool hasC = in.size() > 2 && in[2].defined();
  if (hasC) {
    std::vector<int64_t> out = broadcastStatic(in[2].shape(), {M, N}, node.describe());
    FRICTION_CHECK(out == (std::vector<int64_t>{M, N}), node.describe() + ": C does not broadcast to (M, N)");
    std::vector<int64_t> map = broadcastIndexMap({M, N}, in[2].shape());
    const T* pc = in[2].data<T>();
    for (int64_t i = 0; i < M * N; ++i) py[i] = beta * pc[map[size_t(i)]];
  }
  gemm<T>(ta, tb, M, N, K, alpha, a.data<T>(), a.dim(1), b.data<T>(), b.dim(1), T(hasC ? 1 : 0), py, N);
  return {y};
}

// ---- Per-lane ops (softmax family, LpNormalization, ArgMax/ArgMin) ----

// Calls fn(base, stride, len) for every 1-D lane along `axis`.
template <typename Fn>
void forEachLane(const std::vector<int64_t>& shape, int64_t axis, Fn fn) {
  int64_t outer = product(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
  int64_t len = shape.empty() ? 1 : shape[size_t(axis)], inner = product(shape, size_t(axis) + 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) fn(o * len * inner + i, inner, len);
}

enum class SoftKind { Softmax, LogSoftmax, Hardmax };

template <SoftKind kind>
Kernel softmaxFamily() {
  return floatKernel([](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    const Tensor& x = in[0];
    int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), int64_t(x.rank()));
    Tensor y(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* py = y.data<T>();
    forEachLane(x.shape(), axis, [&](int64_t base, int64_t s, int64_t len) {
      int64_t arg = 0;
      for (int64_t i = 1; i < len; ++i)
        if (px[base + i * s] > px[base + arg * s]) arg = i;
      if (len == 0) return;
      T mx = px[base + arg * s];
      if constexpr (kind == SoftKind::Hardmax) {
        py[base + arg * s] = T(1);
      } else {
        double sum = 0;
        for (int64_t i = 0; i < len; ++i) sum += std::exp(double(px[base + i * s] - mx));
        for (int64_t i = 0; i < len; ++i) {
          double v = double(px[base + i * s] - mx);
          py[base + i * s] = T(kind == SoftKind::Softmax ? std::exp(v) / sum : v - std::log(sum));
        }
      }
    });
    return Tensors{y};
  });
}

template <typename T>
Tensors lpNormalization(T, const Node& node, const Tensors& in) {
  const Tensor& x = in[0];
  int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), int64_t(x.rank()));
  int64_t p = node.attrInt("p", 2);
  FRICTION_CHECK(p == 1 || p == 2, node.describe() + ": p must be 1 or 2");
  Tensor y(x.dtype(), x.shape());
  const T* px = x.data<T>();
  T* py = y.data<T>();
  forEachLane(x.shape(), axis, [&](int64_t base, int64_t s, int64_t len) {
    double norm = 0;
    for (int64_t i = 0; i < len; ++i) norm += p == 1 ? std::abs(double(px[base + i * s])) : double(px[base + i * s]) * px[base + i * s];
    if (p == 2) norm = std::sqrt(norm);
    for (int64_t i = 0; i < len; ++i) py[base + i * s] = T(px[base + i * s] / norm);
  });
  return {y};
}

template <bool isMax>
Kernel argReduce() {
  return arithKernel([](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    const Tensor& x = in[0];
    int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), int64_t(x.rank()));
    bool last = node.attrInt("select_last_index", 0) != 0;
    std::vector<int64_t> shape = x.shape();
    if (!shape.empty()) shape[size_t(axis)] = 1;
    Tensor y(DType::I64, shape);
    const T* px = x.data<T>();
    int64_t* py = y.data<int64_t>();
    int64_t out = 0;
    forEachLane(x.shape(), axis, [&](int64_t base, int64_t s, int64_t len) {
      int64_t arg = 0;
      for (int64_t i = 1; i < len; ++i) {
        T v = px[base + i * s], best = px[base + arg * s];
        bool better = isMax ? (v > best || (last && v == best)) : (v < best || (last && v == best));
        if (better) arg = i;
      }
      py[out++] = arg;
    });
    if (!node.attrInt("keepdims", 1) && !shape.empty()) shape.erase(shape.begin() + axis);
    return Tensors{y.reshaped(shape)};
  });
}

// ---- Normalizations ----

template <typename T>
Tensors batchNorm(T, const Node& node, const Tensors& in) {
  const Tensor& x = in[0];
  int64_t c = x.rank() > 1 ? x.dim(1) : 1, plane = product(x.shape(), 2);
  for (size_t i = 1; i < 5; ++i)
    FRICTION_CHECK(in[i].numel() == c, node.describe() + ": input " + std::to_string(i) + " must have " +
                                           std::to_string(c) + " elements");
  double eps = node.attrFloat("epsilon", 1e-5f), momentum = node.attrFloat("momentum", 0.9f);
  bool training = node.attrInt("training_mode", 0) != 0;
  int64_t planes = x.numel() / std::max<int64_t>(plane, 1);
  const T* px = x.data<T>();
  std::vector<double> mean(in[3].toDoubleVector()), var(in[4].toDoubleVector());
  Tensor runMean(in[3].dtype(), {c}), runVar(in[4].dtype(), {c});
  if (training) {
    // Batch statistics (biased variance) over every axis but 1, as ONNX's reference does.
    std::vector<double> sum(static_cast<size_t>(c), 0.0), sq(static_cast<size_t>(c), 0.0);
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < plane; ++i) sum[size_t(p % c)] += px[p * plane + i];
    int64_t count = planes / std::max<int64_t>(c, 1) * plane;
    for (int64_t ch = 0; ch < c; ++ch) sum[size_t(ch)] /= double(count);
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < plane; ++i) sq[size_t(p % c)] += std::pow(px[p * plane + i] - sum[size_t(p % c)], 2);
    for (int64_t ch = 0; ch < c; ++ch) {
      double bv = sq[size_t(ch)] / double(count);
      runMean.data<T>()[ch] = T(mean[size_t(ch)] * momentum + sum[size_t(ch)] * (1 - momentum));
      runVar.data<T>()[ch] = T(var[size_t(ch)] * momentum + bv * (1 - momentum));
      mean[size_t(ch)] = sum[size_t(ch)];
      var[size_t(ch)] = bv;
    }
  }
  Tensor y(x.dtype(), x.shape());
  const T *scale = in[1].data<T>(), *bias = in[2].data<T>();
  T* py = y.data<T>();
  for (int64_t p = 0; p < planes; ++p) {
    size_t ch = size_t(p % c);
    // y = x * s + t with s = scale / sqrt(var + eps), t = B - mean * s.
    double s = scale[ch] / std::sqrt(var[ch] + eps), t = bias[ch] - mean[ch] * s;
    for (int64_t i = 0; i < plane; ++i) py[p * plane + i] = T(px[p * plane + i] * s + t);
  }
  return training ? Tensors{y, runMean, runVar} : Tensors{y};
}

// Normalizes each of `groups` contiguous runs of `len` elements; scale/bias
// come from sIdx(group, i)/bIdx(group, i) (indices, -1 for none).
template <typename T, typename ScaleAt>
void normalizeRuns(const T* px, T* py, int64_t groups, int64_t len, double eps, ScaleAt scaleShift, T* meanOut,
                   T* invStdOut) {
  for (int64_t gi = 0; gi < groups; ++gi) {
    const T* xr = px + gi * len;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < len; ++i) mean += xr[i];
    mean /= double(len);
    for (int64_t i = 0; i < len; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    double inv = 1.0 / std::sqrt(var / double(len) + eps);
    for (int64_t i = 0; i < len; ++i) {
      auto [s, b] = scaleShift(gi, i);
      py[gi * len + i] = T((xr[i] - mean) * inv * s + b);
    }
    if (meanOut) meanOut[gi] = T(mean);
    if (invStdOut) invStdOut[gi] = T(inv);
  }
}

template <typename T>
Tensors layerNorm(T, const Node& node, const Tensors& in) {
  const Tensor& x = in[0];
  int64_t axis = normalizeAxis(node, node.attrInt("axis", -1), int64_t(x.rank()));
  std::vector<int64_t> inner(x.shape().begin() + axis, x.shape().end());
  int64_t len = product(inner), groups = x.numel() / std::max<int64_t>(len, 1);
  // Scale and B broadcast to the normalized dims.
  std::vector<int64_t> sMap = broadcastIndexMap(inner, in[1].shape());
  bool hasB = in.size() > 2 && in[2].defined();
  std::vector<int64_t> bMap = hasB ? broadcastIndexMap(inner, in[2].shape()) : std::vector<int64_t>{};
  std::vector<int64_t> statShape = x.shape();
  for (size_t i = size_t(axis); i < statShape.size(); ++i) statShape[i] = 1;
  Tensor y(x.dtype(), x.shape()), mean(x.dtype(), statShape), inv(x.dtype(), statShape);
  const T* ps = in[1].data<T>();
  const T* pb = hasB ? in[2].data<T>() : nullptr;
  normalizeRuns<T>(x.data<T>(), y.data<T>(), groups, len, node.attrFloat("epsilon", 1e-5f),
                   [&](int64_t, int64_t i) {
                     return std::pair<double, double>(ps[sMap[size_t(i)]], pb ? double(pb[bMap[size_t(i)]]) : 0.0);
                   },
                   mean.data<T>(), inv.data<T>());
  return {y, mean, inv};
}

template <typename T>
Tensors instanceNorm(T, const Node& node, const Tensors& in) {
  const Tensor& x = in[0];
  FRICTION_CHECK(x.rank() >= 3, node.describe() + ": input must have rank >= 3");
  int64_t c = x.dim(1), len = product(x.shape(), 2);
  FRICTION_CHECK(in[1].numel() == c && in[2].numel() == c, node.describe() + ": scale and B must have C elements");
  Tensor y(x.dtype(), x.shape());
  const T *ps = in[1].data<T>(), *pb = in[2].data<T>();
  normalizeRuns<T>(x.data<T>(), y.data<T>(), x.numel() / std::max<int64_t>(len, 1), len,
                   node.attrFloat("epsilon", 1e-5f),
                   [&](int64_t g, int64_t) { return std::pair<double, double>(ps[g % c], pb[g % c]); }, nullptr,
                   nullptr);
  return {y};
}

template <typename T>
Tensors lrn(T, const Node& node, const Tensors& in) {
  const Tensor& x = in[0];
  FRICTION_CHECK(x.rank() >= 2, node.describe() + ": input must have rank >= 2");
  int64_t size = node.attrInt("size", 1), n = x.dim(0), c = x.dim(1), plane = product(x.shape(), 2);
  double alpha = node.attrFloat("alpha", 1e-4f), beta = node.attrFloat("beta", 0.75f),
         bias = node.attrFloat("bias", 1.0f);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // window [ch - floor, ch + ceil] of (size-1)/2
  Tensor y(x.dtype(), x.shape());
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < plane; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
          double v = px[(b * c + k) * plane + i];
          sq += v * v;
        }
        int64_t at = (b * c + ch) * plane + i;
        py[at] = T(px[at] / std::pow(bias + alpha / double(size) * sq, beta));
      }
  return {y};
}

// ---- Pools ----

// For every output position, the in-bounds input taps (row-major plane
// indices, CSR layout) and the number of taps inside the padded input.
struct WindowTable {
  std::vector<int64_t> begin{0}, taps, padded;
};

WindowTable buildWindows(const Window& w, const std::vector<int64_t>& inSp, const std::vector<int64_t>& outSp) {
  size_t nd = inSp.size();
  WindowTable t;
  int64_t outs = product(outSp), ks = w.kernelSize();
  std::vector<int64_t> o(nd), k(nd);
  for (int64_t op = 0; op < outs; ++op) {
    unravel(op, outSp, o);
    int64_t padded = 0;
    for (int64_t kf = 0; kf < ks; ++kf) {
      unravel(kf, w.kernel, k);
      int64_t flat = 0;
      bool inside = true, inPadded = true;
      for (size_t d = 0; d < nd; ++d) {
        int64_t p = o[d] * w.strides[d] - w.pads[d] + k[d] * w.dilations[d];
        inside = inside && p >= 0 && p < inSp[d];
        inPadded = inPadded && p >= -w.pads[d] && p < inSp[d] + w.pads[d + nd];
        flat = flat * inSp[d] + p;
      }
      padded += inPadded;
      if (inside) t.taps.push_back(flat);
    }
    t.padded.push_back(padded);
    t.begin.push_back(int64_t(t.taps.size()));
  }
  return t;
}

// Runs fn(plane, outPos, xPlane, taps, count, padded) -> T for every (N*C) plane and output position.
template <typename T, typename Fn>
Tensor poolPlanes(const Tensor& x, const Window& w, Fn fn) {
  std::vector<int64_t> inSp = spatialOf(x.shape()), outSp = w.outputSpatial(inSp);
  WindowTable t = buildWindows(w, inSp, outSp);
  std::vector<int64_t> yShape = {x.dim(0), x.dim(1)};
  yShape.insert(yShape.end(), outSp.begin(), outSp.end());
  Tensor y(x.dtype(), yShape);
  int64_t planes = x.dim(0) * x.dim(1), inPlane = product(inSp), outPlane = product(outSp);
  const T* px = x.data<T>();
  T* py = y.data<T>();
#pragma omp parallel for if (planes * outPlane > 100000)
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < outPlane; ++o) {
      int64_t b = t.begin[size_t(o)];
      py[p * outPlane + o] =
          fn(p, o, px + p * inPlane, t.taps.data() + b, t.begin[size_t(o) + 1] - b, t.padded[size_t(o)]);
    }
  return y;
}

Window poolWindow(const Node& node, const Tensor& x) {
  FRICTION_CHECK(x.rank() >= 3, node.describe() + ": input must have rank >= 3, got " + x.type().shape.str());
  return resolveWindow(node, spatialOf(x.shape()));
}

// Global pools: a window covering the whole plane.
Window globalWindow(const Tensor& x) {
  Window w;
  w.kernel = spatialOf(x.shape());
  w.strides.assign(w.kernel.size(), 1);
  w.dilations.assign(w.kernel.size(), 1);
  w.pads.assign(2 * w.kernel.size(), 0);
  return w;
}

// Row-major plane index -> column-major (MaxPool storage_order=1).
int64_t columnMajor(int64_t flat, const std::vector<int64_t>& sp) {
  std::vector<int64_t> idx(sp.size());
  unravel(flat, sp, idx);
  int64_t r = 0;
  for (size_t d = sp.size(); d-- > 0;) r = r * sp[d] + idx[d];
  return r;
}

template <bool global>
Kernel maxPool() {
  return arithKernel([](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    const Tensor& x = in[0];
    Window w = global ? globalWindow(x) : poolWindow(node, x);
    std::vector<int64_t> inSp = spatialOf(x.shape()), outSp = w.outputSpatial(inSp);
    Tensor idx(DType::I64, {});
    bool wantIdx = !global && node.numOutputs() > 1;
    bool colMajor = node.attrInt("storage_order", 0) != 0;
    int64_t inPlane = product(inSp), outPlane = product(outSp);
    if (wantIdx) idx = Tensor(DType::I64, [&] {
                     std::vector<int64_t> s = {x.dim(0), x.dim(1)};
                     s.insert(s.end(), outSp.begin(), outSp.end());
                     return s;
                   }());
    int64_t* pi = wantIdx ? idx.data<int64_t>() : nullptr;
    Tensor y = poolPlanes<T>(x, w, [&](int64_t p, int64_t o, const T* xp, const int64_t* taps, int64_t n, int64_t) {
      T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
      int64_t arg = n ? taps[0] : 0;
      for (int64_t i = 0; i < n; ++i)
        if (xp[taps[i]] > best) best = xp[taps[i]], arg = taps[i];
      if (pi) pi[p * outPlane + o] = p * inPlane + (colMajor ? columnMajor(arg, inSp) : arg);
      return best;
    });
    return wantIdx ? Tensors{y, idx} : Tensors{y};
  });
}

template <bool global>
Kernel averagePool() {
  return floatKernel([](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    Window w = global ? globalWindow(in[0]) : poolWindow(node, in[0]);
    bool includePad = node.attrInt("count_include_pad", 0) != 0;
    return Tensors{poolPlanes<T>(in[0], w, [&](int64_t, int64_t, const T* xp, const int64_t* taps, int64_t n, int64_t padded) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += xp[taps[i]];
      return T(s / double(includePad ? padded : n));
    })};
  });
}

template <bool global>
Kernel lpPool() {
  return floatKernel([](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    Window w = global ? globalWindow(in[0]) : poolWindow(node, in[0]);
    double p = double(node.attrInt("p", 2));
    return Tensors{poolPlanes<T>(in[0], w, [&](int64_t, int64_t, const T* xp, const int64_t* taps, int64_t n, int64_t) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::pow(std::abs(double(xp[taps[i]])), p);
      return T(std::pow(s, 1.0 / p));
    })};
  });
}

// ---- Reductions ----

// One reduction kernel for all Reduce* ops: acc = init, acc = step(acc, x)
// over the reduced elements, y = fin(acc, count). Floats accumulate in double.
template <typename Init, typename Step, typename Fin>
Kernel reduceKernel(bool floatOnly, Init init, Step step, Fin fin) {
  auto body = [=](auto tag, const Node& node, const Tensors& in) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const Tensor& x = in[0];
    int64_t rank = int64_t(x.rank());
    std::vector<int64_t> axes = node.op() == "ReduceSum"
                                    ? (in.size() > 1 && in[1].defined() ? in[1].toInt64Vector() : std::vector<int64_t>{})
                                    : node.attrInts("axes");
    if (axes.empty() && node.attrInt("noop_with_empty_axes", 0)) return Tensors{x};
    std::vector<bool> reduced(x.rank(), axes.empty());  // no axes: reduce all
    for (int64_t a : axes) reduced[size_t(normalizeAxis(node, a, rank))] = true;
    std::vector<int64_t> kept = x.shape(), squeezed;
    for (size_t d = 0; d < kept.size(); ++d) {
      if (reduced[d]) kept[d] = 1;
      else squeezed.push_back(kept[d]);
    }
    int64_t count = x.numel() / std::max<int64_t>(checkedNumel(kept), 1);
    std::vector<int64_t> map = broadcastIndexMap(x.shape(), kept);
    std::vector<Acc> acc(size_t(checkedNumel(kept)), init(Acc{}));
    const T* px = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) acc[size_t(map[size_t(i)])] = step(acc[size_t(map[size_t(i)])], Acc(px[i]));
    Tensor y(x.dtype(), kept);
    for (size_t i = 0; i < acc.size(); ++i) y.data<T>()[i] = T(fin(acc[i], count));
    if (!node.attrInt("keepdims", 1)) y = y.reshaped(squeezed);
    return Tensors{y};
  };
  return floatOnly ? floatKernel(body) : arithKernel(body);
}

template <typename A>
A absVal(A a) {
  if constexpr (std::is_unsigned_v<A>) return a;
  else return a < A(0) ? A(-a) : a;
}

void registerReductions(KernelRegistry& r) {
  auto zero = [](auto a) { return decltype(a)(0); };
  auto one = [](auto a) { return decltype(a)(1); };
  auto lowest = [](auto a) {
    using A = decltype(a);
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  };
  auto highest = [](auto a) {
    using A = decltype(a);
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  };
  auto add = [](auto a, auto x) { return decltype(a)(a + x); };
  auto addAbs = [](auto a, auto x) { return decltype(a)(a + absVal(x)); };
  auto addSq = [](auto a, auto x) { return decltype(a)(a + x * x); };
  auto addExp = [](auto a, auto x) { return decltype(a)(a + std::exp(x)); };
  auto same = [](auto a, int64_t) { return a; };
  auto mean = [](auto a, int64_t n) { return decltype(a)(a / decltype(a)(n)); };
  auto root = [](auto a, int64_t) { return decltype(a)(std::sqrt(a)); };
  auto logOf = [](auto a, int64_t) { return decltype(a)(std::log(a)); };
  r.add("ReduceSum", reduceKernel(false, zero, add, same));
  r.add("ReduceMean", reduceKernel(false, zero, add, mean));
  r.add("ReduceMax", reduceKernel(false, lowest, [](auto a, auto x) { return std::max(a, x); }, same));
  r.add("ReduceMin", reduceKernel(false, highest, [](auto a, auto x) { return std::min(a, x); }, same));
  r.add("ReduceProd", reduceKernel(false, one, [](auto a, auto x) { return decltype(a)(a * x); }, same));
  r.add("ReduceL1", reduceKernel(false, zero, addAbs, same));
  r.add("ReduceL2", reduceKernel(true, zero, addSq, root));
  r.add("ReduceSumSquare", reduceKernel(false, zero, addSq, same));
  r.add("ReduceLogSum", reduceKernel(true, zero, add, logOf));
  // Accumulates exp in double; float inputs cannot overflow it.
  r.add("ReduceLogSumExp", reduceKernel(true, zero, addExp, logOf));
}

// ---- Einsum ----

template <typename T>
Tensors einsum(T, const Node& node, const Tensors& in) {
  std::vector<size_t> ranks;
  for (const Tensor& t : in) ranks.push_back(t.rank());
  EinsumSpec spec = parseEinsum(node.attrString("equation", ""), ranks);
  // Extent per label (ellipsis dims broadcast against 1).
  std::vector<int64_t> extent(size_t(52 + spec.ellipsisRank), -1);
  for (size_t i = 0; i < in.size(); ++i)
    for (size_t d = 0; d < ranks[i]; ++d) {
      int64_t& e = extent[size_t(spec.inputs[i][d])];
      int64_t v = in[i].dim(int(d));
      bool bcast = spec.inputs[i][d] >= 52;
      FRICTION_CHECK(e < 0 || e == v || (bcast && (e == 1 || v == 1)),
                     node.describe() + ": label extents differ (" + std::to_string(e) + " vs " + std::to_string(v) + ")");
      if (e < 0 || e == 1) e = v;
    }
  // Loop labels: the output's first, then the summed ones.
  std::vector<int> labels = spec.output;
  for (int l = 0; l < int(extent.size()); ++l)
    if (extent[size_t(l)] >= 0 && std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  size_t nl = labels.size(), no = spec.output.size();
  std::vector<int64_t> ext(nl), yShape;
  for (size_t j = 0; j < nl; ++j) ext[j] = extent[size_t(labels[j])] < 0 ? 1 : extent[size_t(labels[j])];
  yShape.assign(ext.begin(), ext.begin() + long(no));
  // Stride of each loop label in each input (repeated labels add up: diagonals).
  std::vector<std::vector<int64_t>> strides(in.size(), std::vector<int64_t>(nl, 0));
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<int64_t> s = stridesOf(in[i].shape());
    for (size_t d = 0; d < ranks[i]; ++d) {
      size_t j = size_t(std::find(labels.begin(), labels.end(), spec.inputs[i][d]) - labels.begin());
      if (in[i].dim(int(d)) != 1 || ext[j] == 1) strides[i][j] += s[d];
    }
  }
  Tensor y(in[0].dtype(), yShape);
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  std::vector<int64_t> idx(nl, 0);
  int64_t inner = product(std::vector<int64_t>(ext.begin() + long(no), ext.end()));
  int64_t outs = checkedNumel(yShape);
  for (int64_t o = 0; o < outs; ++o) {
    Acc acc = 0;
    for (int64_t s = 0; s < inner; ++s) {
      Acc prod = 1;
      for (size_t i = 0; i < in.size(); ++i) {
        int64_t off = 0;
        for (size_t j = 0; j < nl; ++j) off += idx[j] * strides[i][j];
        prod *= Acc(in[i].data<T>()[off]);
      }
      acc += prod;
      // Advance the odometer (last label fastest; output labels carry into o).
      for (size_t j = nl; j-- > 0;) {
        if (++idx[j] < ext[j]) break;
        idx[j] = 0;
      }
    }
    if (inner == 0) {  // no summed combinations: still step the output labels
      for (size_t j = no; j-- > 0;) {
        if (++idx[j] < ext[j]) break;
        idx[j] = 0;
      }
    }
    y.data<T>()[o] = T(acc);
  }
  return {y};
}

}  // namespace

void registerNnKernels(KernelRegistry& r) {
  r.add("Conv", floatKernel([](auto t, const Node& n, const Tensors& in) { return conv(t, n, in); }));
  r.add("ConvTranspose", floatKernel([](auto t, const Node& n, const Tensors& in) { return convTranspose(t, n, in); }));
  r.add("MatMul", arithKernel([](auto t, const Node& n, const Tensors& in) { return matMul(t, n, in); }));
  r.add("Gemm", arithKernel([](auto t, const Node& n, const Tensors& in) { return gemmOp(t, n, in); }));
  r.add("BatchNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return batchNorm(t, n, in); }));
  r.add("LayerNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return layerNorm(t, n, in); }));
  r.add("InstanceNormalization",
        floatKernel([](auto t, const Node& n, const Tensors& in) { return instanceNorm(t, n, in); }));
  r.add("LpNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return lpNormalization(t, n, in); }));
  r.add("LRN", floatKernel([](auto t, const Node& n, const Tensors& in) { return lrn(t, n, in); }));
  r.add("Softmax", softmaxFamily<SoftKind::Softmax>());
  r.add("LogSoftmax", softmaxFamily<SoftKind::LogSoftmax>());
  r.add("Hardmax", softmaxFamily<SoftKind::Hardmax>());
  r.add("ArgMax", argReduce<true>());
  r.add("ArgMin", argReduce<false>());
  r.add("MaxPool", maxPool<false>());
  r.add("GlobalMaxPool", maxPool<true>());
  r.add("AveragePool", averagePool<false>());
  r.add("GlobalAveragePool", averagePool<true>());
  r.add("LpPool", lpPool<false>());
  r.add("GlobalLpPool", lpPool<true>());
  r.add("Einsum", arithKernel([](auto t, const Node& n, const Tensors& in) { return einsum(t, n, in); }));
  registerReductions(r);
}

}  // namespace friction::interp
