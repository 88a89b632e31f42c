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
