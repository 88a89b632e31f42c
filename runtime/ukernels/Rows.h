// Row-wise microkernels for the compiled `cpu` backend: transpose, softmax, log-softmax
// and layer normalization over the innermost `cols` elements of `rows` rows,
// one pass to reduce and one to write, rows spread over OpenMP threads.
// Sums accumulate in double, like the interpreter, so results agree to f32
// rounding.
#pragma once
#include <cstdint>
#include <vector>

namespace friction::ukernels {

void softmaxRows(int64_t rows, int64_t cols, const float* x, float* y, bool logSoftmax);

// Softmax, LogSoftmax or Hardmax along the middle dim of x viewed as [outer, len, inner]: an axis that is not
// the innermost (a segmentation map's channels), lanes of `inner` consecutive elements at a time; Hardmax at
// any axis (inner 1 too): 1 at the first largest element of each lane (NaN never the largest), 0 elsewhere.
enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };
void softmaxAcross(SoftmaxKind kind, int64_t outer, int64_t len, int64_t inner, const float* x, float* y);

// y = (x - mean) / sqrt(var + eps) * scale + bias; scale/bias have `cols`
// elements (bias may be null).
void layerNormRows(int64_t rows, int64_t cols, const float* x, const float* scale, const float* bias, float eps,
                   float* y);

// InstanceNormalization: rows of `cols` (an image plane each, rows = N x channels), each normalized, then scaled
// and shifted by its channel's scale[r % channels] and bias[r % channels].
void instanceNormRows(int64_t rows, int64_t cols, int64_t channels, const float* x, const float* scale,
                      const float* bias, float eps, float* y);

// A recurrent layer's gate functions over a row of n values in place, in the machine's vectors: each value
// first bounded to [-clip, clip] (clip +inf: not bounded), then the logistic sigmoid (expOf) or tanh (tanhOf).
enum class GateFunction { Sigmoid, Tanh };
void gateRow(GateFunction f, float clip, float* v, int64_t n);

}  // namespace friction::ukernels

namespace friction::ukernels {

// y = x transposed by `perm` (y's dim i is x's dim perm[i]), f32, rows of the
// output spread over threads; a permutation that keeps the innermost dim
// copies whole rows.
void transposeF32(const float* x, float* y, const std::vector<int64_t>& inShape, const std::vector<int64_t>& perm);

}  // namespace friction::ukernels
