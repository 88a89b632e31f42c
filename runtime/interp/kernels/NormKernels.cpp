// Interpreter kernels of normalizations: the softmax family, LpNormalization,
// BatchNormalization, LayerNormalization, InstanceNormalization, LRN.
#include <algorithm>
#include <cmath>
#include <limits>


#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

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
    // A zero vector stays zero (the ONNX reference; 0/0 would be NaN).
    for (int64_t i = 0; i < len; ++i) py[base + i * s] = norm == 0 ? T(0) : T(px[base + i * s] / norm);
  });
  return {y};
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

}  // namespace

void registerNormKernels(KernelRegistry& r) {
  r.add("BatchNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return batchNorm(t, n, in); }));
  r.add("LayerNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return layerNorm(t, n, in); }));
  r.add("InstanceNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return instanceNorm(t, n, in); }));
  r.add("LpNormalization", floatKernel([](auto t, const Node& n, const Tensors& in) { return lpNormalization(t, n, in); }));
  r.add("LRN", floatKernel([](auto t, const Node& n, const Tensors& in) { return lrn(t, n, in); }));
  r.add("Softmax", softmaxFamily<SoftKind::Softmax>());
  r.add("LogSoftmax", softmaxFamily<SoftKind::LogSoftmax>());
  r.add("Hardmax", softmaxFamily<SoftKind::Hardmax>());
}

}  // namespace friction::interp
