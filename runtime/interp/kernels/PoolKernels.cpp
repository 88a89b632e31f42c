// Interpreter kernels of pools: max, average and Lp, windowed and global.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/NnShapes.h"
#include "ir/ops/ShapeHelpers.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

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

}  // namespace

void registerPoolKernels(KernelRegistry& r) {
  r.add("MaxPool", maxPool<false>());
  r.add("GlobalMaxPool", maxPool<true>());
  r.add("AveragePool", averagePool<false>());
  r.add("GlobalAveragePool", averagePool<true>());
  r.add("LpPool", lpPool<false>());
  r.add("GlobalLpPool", lpPool<true>());
}

}  // namespace friction::interp
