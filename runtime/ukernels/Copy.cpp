#include "runtime/ukernels/Copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace friction::ukernels {
namespace {

constexpr int64_t kParallelElements = int64_t(1) << 16;

// A transpose: y is contiguous along the innermost dim, x along dim `a`.
// Copies tiles of kTile x kTile elements of those two dims, so that both the
// reads and the writes of a tile stay within kTile cache lines each.
void transposeTiles(const float* x, const std::vector<int64_t>& xs, float* y, const std::vector<int64_t>& ys,
                    const std::vector<int64_t>& dims, size_t a) {
  constexpr int64_t kTile = 16;
  const size_t r = dims.size(), b = r - 1;
  const int64_t na = dims[a], nb = dims[b], ya = ys[a], xb = xs[b];
  const int64_t tilesA = (na + kTile - 1) / kTile;
  int64_t outer = 1;
  for (size_t d = 0; d < b; ++d)
    if (d != a) outer *= dims[d];
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
#pragma omp parallel for schedule(static) if (total > kParallelElements)
  for (int64_t task = 0; task < outer * tilesA; ++task) {
    int64_t xo = 0, yo = 0;
    for (int64_t rem = task / tilesA, d = int64_t(b) - 1; d >= 0; --d) {
      if (size_t(d) == a) continue;
      const int64_t i = rem % dims[size_t(d)];
      rem /= dims[size_t(d)];
      xo += i * xs[size_t(d)], yo += i * ys[size_t(d)];
    }
    const int64_t i0 = task % tilesA * kTile, i1 = std::min(na, i0 + kTile);
    for (int64_t j0 = 0; j0 < nb; j0 += kTile) {
      const int64_t j1 = std::min(nb, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) y[yo + i * ya + j] = x[xo + i + j * xb];
    }
  }
}

}  // namespace

std::vector<int64_t> denseStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

void copyStrided(const float* x, const std::vector<int64_t>& xStrides, float* y, const std::vector<int64_t>& yStrides,
                 const std::vector<int64_t>& shape) {
  // Drop unit dims, then merge each dim into the next when both sides step over it contiguously.
  std::vector<int64_t> dims, xs, ys;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    if (!dims.empty() && xs.back() == xStrides[d] * shape[d] && ys.back() == yStrides[d] * shape[d]) {
      dims.back() *= shape[d], xs.back() = xStrides[d], ys.back() = yStrides[d];
      continue;
    }
    dims.push_back(shape[d]), xs.push_back(xStrides[d]), ys.push_back(yStrides[d]);
  }
  if (dims.empty()) {
    *y = *x;
    return;
  }
  const size_t r = dims.size();
  const int64_t inner = dims[r - 1], xInner = xs[r - 1], yInner = ys[r - 1];
  if (yInner == 1 && xInner != 1) {
    for (size_t d = 0; d + 1 < r; ++d)
      if (xs[d] == 1) return transposeTiles(x, xs, y, ys, dims, d);
  }
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < r; ++d) rows *= dims[d];
#pragma omp parallel for schedule(static) if (rows * inner > kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t xo = 0, yo = 0;
    for (int64_t rem = row, d = int64_t(r) - 2; d >= 0; --d) {
      const int64_t i = rem % dims[size_t(d)];
      rem /= dims[size_t(d)];
      xo += i * xs[size_t(d)], yo += i * ys[size_t(d)];
    }
    const float* in = x + xo;
    float* out = y + yo;
    if (xInner == 1 && yInner == 1) {
      std::memcpy(out, in, size_t(inner) * sizeof(float));
    } else {
      for (int64_t j = 0; j < inner; ++j) out[j * yInner] = in[j * xInner];
    }
  }
}

void gatherRows(const float* x, int64_t outer, int64_t axis, int64_t inner, const int64_t* indices, int64_t count,
                float* y) {
#pragma omp parallel for collapse(2) schedule(static) if (outer * count * inner > kParallelElements)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(y + (o * count + j) * inner, x + (o * axis + indices[j]) * inner, size_t(inner) * sizeof(float));
}

void channelAffine(int64_t outer, int64_t channels, int64_t inner, const float* x, const float* scale,
                   const float* shift, float* y) {
  if (inner == 1) {  // channels innermost (NHWC): vectorized across channels
#pragma omp parallel for schedule(static) if (outer * channels > kParallelElements)
    for (int64_t o = 0; o < outer; ++o) {
      const float* in = x + o * channels;
      float* out = y + o * channels;
#pragma omp simd
      for (int64_t c = 0; c < channels; ++c) out[c] = in[c] * scale[c] + shift[c];
    }
    return;
  }
#pragma omp parallel for collapse(2) schedule(static) if (outer * channels * inner > kParallelElements)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const float a = scale[c], b = shift[c];
      const float* in = x + (o * channels + c) * inner;
      float* out = y + (o * channels + c) * inner;
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) out[i] = in[i] * a + b;
    }
}

void reduceMiddle(ReduceKind kind, int64_t outer, int64_t reduced, int64_t inner, const float* x, float* y) {
#pragma omp parallel if (outer * reduced * inner > kParallelElements)
  {
  std::vector<double> acc;  // one per thread, not per row: NCHW reductions have many rows of one element
#pragma omp for schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    const float* in = x + o * reduced * inner;
    float* out = y + o * inner;
    if (kind == ReduceKind::Max || kind == ReduceKind::Min) {
      const bool max = kind == ReduceKind::Max;
      std::fill(out, out + inner, max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
      for (int64_t r = 0; r < reduced; ++r)
        for (int64_t i = 0; i < inner; ++i) {
          const float v = in[r * inner + i];
          out[i] = max ? std::max(out[i], v) : std::min(out[i], v);
        }
      continue;
    }
    // A sum of a function of x, then a function of the sum.
    acc.assign(size_t(inner), 0.0);
    auto sum = [&](auto term) {
      for (int64_t r = 0; r < reduced; ++r)
        for (int64_t i = 0; i < inner; ++i) acc[size_t(i)] += term(double(in[r * inner + i]));
    };
    switch (kind) {
      case ReduceKind::SumSquare:
      case ReduceKind::L2: sum([](double v) { return v * v; }); break;
      case ReduceKind::L1: sum([](double v) { return std::abs(v); }); break;
      case ReduceKind::LogSumExp: sum([](double v) { return std::exp(v); }); break;
      default: sum([](double v) { return v; }); break;
    }
    const double count = double(std::max<int64_t>(reduced, 1));
    for (int64_t i = 0; i < inner; ++i) {
      const double a = acc[size_t(i)];
      out[i] = float(kind == ReduceKind::Mean ? a / count
                     : kind == ReduceKind::L2 ? std::sqrt(a)
                     : kind == ReduceKind::LogSum || kind == ReduceKind::LogSumExp ? std::log(a)
                                                                                      : a);
    }
  }
  }
}

}  // namespace friction::ukernels
