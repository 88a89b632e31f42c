// Interpreter kernels of convolutions: im2col/col2im around the shared
// blocked GEMM (Gemm.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/ops/NnShapes.h"
#include "ir/ops/ShapeHelpers.h"
#include "runtime/interp/kernels/Gemm.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {
namespace {

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

}  // namespace

void registerConvKernels(KernelRegistry& r) {
  r.add("Conv", floatKernel([](auto t, const Node& n, const Tensors& in) { return conv(t, n, in); }));
  r.add("ConvTranspose", floatKernel([](auto t, const Node& n, const Tensors& in) { return convTranspose(t, n, in); }));
}

}  // namespace friction::interp
