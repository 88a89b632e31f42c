// Row-wise microkernels for the compiled `cpu` backend: softmax, log-softmax
// and layer normalization over the innermost `cols` elements of `rows` rows,
// one pass to reduce and one to write, rows spread over OpenMP threads.
// Sums accumulate in double, like the interpreter, so results agree to f32
// rounding.
#pragma once
#include <cstdint>

namespace friction::ukernels {

void softmaxRows(int64_t rows, int64_t cols, const float* x, float* y, bool logSoftmax);

// y = (x - mean) / sqrt(var + eps) * scale + bias; scale/bias have `cols`
// elements (bias may be null).
void layerNormRows(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias, float eps,
                   float* y);

}  // namespace friction::ukernels
