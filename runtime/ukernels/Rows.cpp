#include "runtime/ukernels/Rows.h"

#include <algorithm>
#include <cmath>

namespace friction::ukernels {

void softmaxRows(int64_t rows, int64_t cols, const float* x, float* y, bool logSoftmax) {
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    float mx = -INFINITY;
    for (int64_t i = 0; i < cols; ++i) mx = std::max(mx, in[i]);
    double sum = 0;
    if (logSoftmax) {
      for (int64_t i = 0; i < cols; ++i) sum += std::exp(double(in[i] - mx));
      float shift = float(std::log(sum));
      for (int64_t i = 0; i < cols; ++i) out[i] = in[i] - mx - shift;
    } else {
      for (int64_t i = 0; i < cols; ++i) {
        float e = std::exp(in[i] - mx);
        out[i] = e;
        sum += e;
      }
      float inv = float(1.0 / sum);
#pragma omp simd
      for (int64_t i = 0; i < cols; ++i) out[i] *= inv;
    }
  }
}

void layerNormRows(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias, float eps,
                   float* y) {
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    // Two passes (mean, then squared deviations), as the interpreter does: no cancellation.
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < cols; ++i) s += in[i];
    double mean = s / double(cols), v = 0;
#pragma omp simd reduction(+ : v)
    for (int64_t i = 0; i < cols; ++i) v += (in[i] - mean) * (in[i] - mean);
    float m = float(mean), inv = float(1.0 / std::sqrt(v / double(cols) + double(eps)));
    if (bias) {
#pragma omp simd
      for (int64_t i = 0; i < cols; ++i) out[i] = (in[i] - m) * inv * scale[i] + bias[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < cols; ++i) out[i] = (in[i] - m) * inv * scale[i];
    }
  }
}

}  // namespace friction::ukernels

namespace friction::ukernels {

void transposeF32(const float* x, float* y, const std::vector<int64_t>& inShape, const std::vector<int64_t>& perm) {
  size_t r = inShape.size();
  if (r == 0) {
    y[0] = x[0];
    return;
  }
  std::vector<int64_t> inStride(r, 1), outShape(r), stride(r);
  for (size_t i = r - 1; i-- > 0;) inStride[i] = inStride[i + 1] * inShape[i + 1];
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
