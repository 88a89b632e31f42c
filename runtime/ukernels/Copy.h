// Data movement for the compiled `cpu` backend: one strided copy that Slice,
// Pad, Gather and Expand reduce to (each a view of the source with other
// strides written into a region of the destination), Concat's row copy, plus the two
// per-channel and per-axis loops that BatchNormalization and the Reduce ops
// need. f32 (but for Gather's rows, of any element size); rows of the copy spread over OpenMP threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace friction::ukernels {

// y[i] = x[i] for every index i of `shape`, where x's element i lies at
// x + sum(i_d * xStrides[d]) and y's at y + sum(i_d * yStrides[d]) (strides in
// elements; 0 repeats an element, negative walks backwards). Dimensions that
// are contiguous in both are merged; contiguous innermost rows are memcpy'd.
void copyStrided(const float* x, const std::vector<int64_t>& xStrides, float* y, const std::vector<int64_t>& yStrides,
                 const std::vector<int64_t>& shape);

// A part of each row of a concatenation: `width` contiguous floats a row from x, written at `offset` in y's rows.
struct RowPiece {
  const float* x;
  int64_t width, offset;
};
// For each of `rows` rows of y (yRow floats apart) and each piece: y[r * yRow + offset, + width) = x[r * width, +
// width). A Concat of dense inputs (NHWC along channels: rows are pixels), row by row: piece by piece, the
// writes crossed y at a stride the prefetchers did not follow. Rows spread over OpenMP threads.
void concatRows(int64_t rows, const std::vector<RowPiece>& pieces, float* y, int64_t yRow);

// y[o, j, :] = x[o, indices[j], :] over x as [outer, axis, inner] and y as
// [outer, count, inner] (Gather with indices known only at run time, already
// checked and made non-negative by the caller), of elements of any size.
void gatherRows(const void* x, int64_t outer, int64_t axis, int64_t inner, const int64_t* indices, int64_t count,
                size_t elementBytes, void* y);

// Row-major strides of a dense tensor of `shape`.
std::vector<int64_t> denseStrides(const std::vector<int64_t>& shape);

// y[o, c, i] = x[o, c, i] * scale[c] + shift[c] over [outer, channels, inner]
// (BatchNormalization at inference, with scale and shift precomputed).
void channelAffine(int64_t outer, int64_t channels, int64_t inner, const float* x, const float* scale,
                   const float* shift, float* y);

// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
// ReduceProd.
enum class ReduceKind { Sum, Mean, Max, Min, SumSquare, L1, L2, LogSum, LogSumExp, Prod };
// y[o, i] = reduce over r of x[o, r, i], x viewed as [outer, reduced, inner]
// (sums in double, like the interpreter).
void reduceMiddle(ReduceKind kind, int64_t outer, int64_t reduced, int64_t inner, const float* x, float* y);

}  // namespace friction::ukernels
