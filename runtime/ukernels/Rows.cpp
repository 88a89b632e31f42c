#include "runtime/ukernels/Rows.h"

#include "runtime/ukernels/Copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/ukernels/Multiversion.h"
#include "runtime/ukernels/Parallel.h"

namespace friction::ukernels {

namespace {
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors stay inside each ISA's copy

// One row of softmax (or log-softmax) in W-lane vectors: the max, e = exp(x - max) with its sum accumulated in
// double (W double lanes: no long dependency chain, no float rounding), then the scaling. A row that does not
// end on a whole vector ends on the vector of its last W elements, the lanes done before left out of the sum;
// rows shorter than W run scalar. ViT-B's rows of 197 took 2.1 ns an element with a scalar max loop (a chain of
// maxss) and scalar exponentials at the end of each row; 0.8 here.
template <int W>
FRICTION_INLINE void softmaxRowOf(const float* x, float* y, int64_t n, bool logSoftmax) {
  using VF = typename Vec<float, W>::V;
  using VI = typename Vec<int32_t, W>::V;
  using VH = typename Vec<float, W / 2>::V;  // half a vector
  using VD = typename Vec<double, W / 2>::V;
  const float inf = __builtin_inff();
  float mx = -inf;
  double sum = 0;
  auto finish = [&] FRICTION_LAMBDA_INLINE {
    if (logSoftmax) {
      const float shift = float(std::log(sum));
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) y[j] = x[j] - mx - shift;
    } else {
      const float inv = float(1.0 / sum);
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) y[j] *= inv;
    }
  };
  if (n < W) {
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j]);
    for (int64_t j = 0; j < n; ++j) sum += y[j] = std::exp(x[j] - mx);
    return finish();
  }
  auto load = [&](int64_t i) FRICTION_LAMBDA_INLINE {
    VF v;
    std::memcpy(&v, x + i, sizeof v);
    return v;
  };
  const int64_t last = n - W;  // the last vector's start
  VF m0 = load(last), m1 = m0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const VF a = load(i), b = load(i + W);
    m0 = a > m0 ? a : m0;  // a NaN is passed over, as std::max(m, x) does; exp(NaN) then spreads it
    m1 = b > m1 ? b : m1;
  }
  if (i + W <= n) m1 = load(i) > m1 ? load(i) : m1;
  m0 = m1 > m0 ? m1 : m0;
  for (int l = 0; l < W; ++l) mx = std::max(mx, m0[l]);
  VD acc0{}, acc1{};
  auto accumulate = [&](VF e) FRICTION_LAMBDA_INLINE {
    VH half[2];
    std::memcpy(half, &e, sizeof e);
    acc0 += __builtin_convertvector(half[0], VD);
    acc1 += __builtin_convertvector(half[1], VD);
  };
  for (i = 0; i <= last; i += W) {
    const VF e = expOf<W>(load(i) - mx);
    if (!logSoftmax) std::memcpy(y + i, &e, sizeof e);
    accumulate(e);
  }
  if (i < n) {  // the last vector's lanes below i were summed already
    VI lane;
    for (int l = 0; l < W; ++l) lane[l] = l;
    const VF e = expOf<W>(load(last) - mx);
    if (!logSoftmax) std::memcpy(y + last, &e, sizeof e);
    accumulate(lane + int32_t(last) >= int32_t(i) ? e : VF{});
  }
  for (int l = 0; l < W / 2; ++l) sum += acc0[l] + acc1[l];
  finish();
}
}  // namespace

void softmaxRows(int64_t rows, int64_t cols, const float* x, float* y, bool logSoftmax) {
  // Blocks of rows, each one call of the machine's copy: rows of a few elements cost their call otherwise.
  const int64_t blockRows = std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1));
  const int64_t blocks = (rows + blockRows - 1) / blockRows;
  affineFor(blocks, rows * cols > (1 << 15) ? omp_get_max_threads() : 1, [&](int64_t b) {
    withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {
      for (int64_t r = b * blockRows; r < std::min(rows, (b + 1) * blockRows); ++r)
        softmaxRowOf<W>(x + r * cols, y + r * cols, cols, logSoftmax);
    });
  });
}

void gateRow(GateFunction f, float clip, float* v, int64_t n) {
  withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {
    using VF = typename Vec<float, W>::V;
    auto gate = [&](VF x) FRICTION_LAMBDA_INLINE {
      x = x < -clip ? VF{} - clip : x;
      x = x > clip ? VF{} + clip : x;
      return f == GateFunction::Sigmoid ? 1.f / (1.f + expOf<W>(-x)) : tanhOf<W>(x);
    };
    int64_t i = 0;
    for (; i + W <= n; i += W) {  // whole vectors: loads and stores of a constant size
      VF x;
      std::memcpy(&x, v + i, sizeof x);
      x = gate(x);
      std::memcpy(v + i, &x, sizeof x);
    }
    if (i < n) {
      VF x{};
      std::memcpy(&x, v + i, size_t(n - i) * sizeof(float));
      x = gate(x);
      std::memcpy(v + i, &x, size_t(n - i) * sizeof(float));
    }
  });
}

void softmaxAcross(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner, const float* x, float* y) {
  if (len == 0) return;
#pragma omp parallel if (outer * len * inner > (1 << 15))
  {
    std::vector<float> mx(static_cast<size_t>(inner));
    std::vector<double> sum(static_cast<size_t>(inner));
    std::vector<int64_t> arg(static_cast<size_t>(inner));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const float* in = x + o * len * inner;
      float* out = y + o * len * inner;
      if (kind == SoftmaxKind::Hardmax) {  // the interpreter's scan: a later element wins only when larger
        std::fill(arg.begin(), arg.end(), 0);
        for (int64_t r = 1; r < len; ++r)
          for (int64_t i = 0; i < inner; ++i)
            if (in[r * inner + i] > in[arg[size_t(i)] * inner + i]) arg[size_t(i)] = r;
        std::fill(out, out + len * inner, 0.f);
        for (int64_t i = 0; i < inner; ++i) out[arg[size_t(i)] * inner + i] = 1.f;
        continue;
      }
      std::copy(in, in + inner, mx.begin());
      for (int64_t r = 1; r < len; ++r)
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i) mx[size_t(i)] = std::max(mx[size_t(i)], in[r * inner + i]);
      std::fill(sum.begin(), sum.end(), 0.0);
      for (int64_t r = 0; r < len; ++r)
        for (int64_t i = 0; i < inner; ++i) {
          const float e = std::exp(in[r * inner + i] - mx[size_t(i)]);
          sum[size_t(i)] += e;
          if (kind == SoftmaxKind::Softmax) out[r * inner + i] = e;
        }
      for (int64_t i = 0; i < inner; ++i)
        sum[size_t(i)] = kind == SoftmaxKind::Softmax ? 1.0 / sum[size_t(i)] : std::log(sum[size_t(i)]);
      for (int64_t r = 0; r < len; ++r)
#pragma omp simd
        for (int64_t i = 0; i < inner; ++i)
          out[r * inner + i] = kind == SoftmaxKind::Softmax ? out[r * inner + i] * float(sum[size_t(i)])
                                                             : in[r * inner + i] - mx[size_t(i)] - float(sum[size_t(i)]);
    }
  }
}

namespace {
// A row's mean and 1 / sqrt(variance + eps) in two passes (mean, then squared deviations), as the interpreter
// computes them: no cancellation. (Returned as a pair and passed on as two floats: clang's OpenMP simd loops
// cannot capture a structured binding.)
FRICTION_INLINE std::pair<float, float> rowMoments(const float* in, int64_t cols, float eps) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < cols; ++i) s += in[i];
  double mean = s / double(cols), v = 0;
#pragma omp simd reduction(+ : v)
  for (int64_t i = 0; i < cols; ++i) v += (in[i] - mean) * (in[i] - mean);
  return {float(mean), float(1.0 / std::sqrt(v / double(cols) + double(eps)))};
}

// Each of `rows` rows of `cols` normalized by `write(r, in, out, mean, invStd)`, rows over the threads.
template <typename F>
void normalizeRows(int64_t rows, int64_t cols, const float* x, float eps, float* y, F&& write) {
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const std::pair<float, float> moments = rowMoments(x + r * cols, cols, eps);
    write(r, x + r * cols, y + r * cols, moments.first, moments.second);
  }
}
}  // namespace

void instanceNormRows(int64_t rows, int64_t cols, int64_t channels, const float* x, const float* scale,
                      const float* bias, float eps, float* y) {
  normalizeRows(rows, cols, x, eps, y, [&](int64_t r, const float* in, float* out, float m, float inv) {
    const float a = inv * scale[r % channels], b = bias[r % channels];
#pragma omp simd
    for (int64_t i = 0; i < cols; ++i) out[i] = (in[i] - m) * a + b;
  });
}

void layerNormRows(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias, float eps,
                   float* y) {
  normalizeRows(rows, cols, x, eps, y, [&](int64_t, const float* in, float* out, float m, float inv) {
    if (bias) {
#pragma omp simd
      for (int64_t i = 0; i < cols; ++i) out[i] = (in[i] - m) * inv * scale[i] + bias[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < cols; ++i) out[i] = (in[i] - m) * inv * scale[i];
    }
  });
}

}  // namespace friction::ukernels

namespace friction::ukernels {

namespace {
// y[b][j][i] = x[b][i][j] for x of [batch, rows, cols], in cache-sized tiles.
// At most 4 rows (an RGB image taken to NHWC) go to copyStrided, whose loop
// for short output rows ran 8 images of 3 x 224 x 224 in half the time of
// these tiles (their inner loop 3 long).
void transposeBatched2d(const float* x, float* y, int64_t batch, int64_t rows, int64_t cols) {
  if (rows <= 4) return copyStrided(x, {rows * cols, 1, cols}, y, {rows * cols, rows, 1}, {batch, cols, rows});
  constexpr int64_t T = 32;
  const int64_t rowTiles = (rows + T - 1) / T, colTiles = (cols + T - 1) / T;
#pragma omp parallel for collapse(2) schedule(static) if (batch * rows * cols > (1 << 16))
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t ct = 0; ct < colTiles; ++ct) {
      const float* in = x + b * rows * cols;
      float* out = y + b * rows * cols;
      const int64_t j0 = ct * T, j1 = std::min(cols, j0 + T);
      for (int64_t rt = 0; rt < rowTiles; ++rt) {
        const int64_t i0 = rt * T, i1 = std::min(rows, i0 + T);
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) out[j * rows + i] = in[i * cols + j];
      }
    }
}


// The same transpose on fewer dims: unit dims dropped, and input dims that
// stay adjacent and in order in the output merged into one. NCHW -> NHWC
// becomes [N, C, HW] -> [N, HW, C].
void coalesce(const std::vector<int64_t>& shape, const std::vector<int64_t>& permutation, std::vector<int64_t>& inShape,
              std::vector<int64_t>& perm) {
  std::vector<int64_t> newIndex(shape.size(), -1), dims, order;  // order: kept input dims in output order
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) newIndex[i] = int64_t(dims.size()), dims.push_back(shape[i]);
  for (int64_t p : permutation)
    if (newIndex[size_t(p)] >= 0) order.push_back(newIndex[size_t(p)]);
  // Runs of consecutive input dims in the output order: each becomes one dim.
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first input dim, size), output order
  for (size_t i = 0; i < order.size(); ++i) {
    if (i > 0 && order[i] == order[i - 1] + 1)
      runs.back().second *= dims[size_t(order[i])];
    else
      runs.push_back({order[i], dims[size_t(order[i])]});
  }
  std::vector<std::pair<int64_t, int64_t>> byInput = runs;
  std::sort(byInput.begin(), byInput.end());
  inShape.clear(), perm.clear();
  for (const auto& run : byInput) inShape.push_back(run.second);
  for (const auto& run : runs)
    perm.push_back(int64_t(std::lower_bound(byInput.begin(), byInput.end(), run) - byInput.begin()));
}
}  // namespace

void transposeF32(const float* x, float* y, const std::vector<int64_t>& shape, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> inShape, perm;
  coalesce(shape, permutation, inShape, perm);
  size_t r = inShape.size();
  if (r <= 1) {  // nothing moves
    int64_t n = r == 0 ? 1 : inShape[0];
    std::copy(x, x + n, y);
    return;
  }
  if (r == 2) return transposeBatched2d(x, y, 1, inShape[0], inShape[1]);
  if (r == 3 && perm == std::vector<int64_t>{0, 2, 1}) return transposeBatched2d(x, y, inShape[0], inShape[1], inShape[2]);
  std::vector<int64_t> inStride = denseStrides(inShape), outShape(r), stride(r);
  for (size_t i = 0; i < r; ++i) outShape[i] = inShape[size_t(perm[i])], stride[i] = inStride[size_t(perm[i])];
  int64_t inner = outShape[r - 1], innerStride = stride[r - 1], rows = 1;
  for (size_t i = 0; i + 1 < r; ++i) rows *= outShape[i];
#pragma omp parallel for schedule(static) if (rows * inner > (1 << 16))
  for (int64_t row = 0; row < rows; ++row) {
    // The input offset of this output row: its index digits times the permuted strides.
    int64_t base = 0;
    for (int64_t rem = row, i = int64_t(r) - 2; i >= 0; --i) {
      base += rem % outShape[size_t(i)] * stride[size_t(i)];
      rem /= outShape[size_t(i)];
    }
    float* out = y + row * inner;
    if (innerStride == 1) {
      std::copy(x + base, x + base + inner, out);
    } else {
      for (int64_t j = 0; j < inner; ++j) out[j] = x[base + j * innerStride];
    }
  }
}

}  // namespace friction::ukernels
