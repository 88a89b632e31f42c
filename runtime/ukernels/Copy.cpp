#include "runtime/ukernels/Copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <omp.h>

#include "runtime/ukernels/Multiversion.h"

namespace friction::ukernels {
namespace {

constexpr int64_t kParallelElements = int64_t(1) << 16;
// The least a thread copies of a contiguous run cut into chunks (64 KB).
constexpr int64_t kChunkElements = int64_t(1) << 14;

// The x and y offsets of element `index` of the row-major space of dims [0, end), dim `skip` left out.
std::pair<int64_t, int64_t> offsetsOf(int64_t index, const std::vector<int64_t>& dims, const std::vector<int64_t>& xs,
                                      const std::vector<int64_t>& ys, size_t end, size_t skip = SIZE_MAX) {
  int64_t xo = 0, yo = 0;
  for (size_t d = end; d-- > 0;) {
    if (d == skip) continue;
    const int64_t i = index % dims[d];
    index /= dims[d];
    xo += i * xs[d], yo += i * ys[d];
  }
  return {xo, yo};
}

// A transpose whose y rows hold NB elements (2-4: an RGB image taken to NHWC):
// each task interleaves a run of kRun elements of each of the NB x rows, the
// row length fixed at compile time. Tiles of 16 made the inner loop 3 long
// and scalar: 8 images of 3 x 224 x 224 took 0.4-0.9 ms, this 0.2-0.3.
template <int NB>
void interleaveRows(const float* x, const std::vector<int64_t>& xs, float* y, const std::vector<int64_t>& ys,
                    const std::vector<int64_t>& dims, size_t a, int64_t outer, bool parallel) {
  constexpr int64_t kRun = 1024;
  const size_t b = dims.size() - 1;
  const int64_t na = dims[a], ya = ys[a], xb = xs[b], runs = (na + kRun - 1) / kRun;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t task = 0; task < outer * runs; ++task) {
    const auto [xo, yo] = offsetsOf(task / runs, dims, xs, ys, b, a);
    const float* __restrict xt = x + xo;
    float* __restrict yt = y + yo;
    const int64_t i0 = task % runs * kRun, i1 = std::min(na, i0 + kRun);
    for (int64_t i = i0; i < i1; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) yt[i * ya + j] = xt[i + j * xb];
  }
}

// A transpose: y is contiguous along the innermost dim, x along dim `a`.
// Copies tiles of kTile x kTile elements of those two dims, so that both the
// reads and the writes of a tile stay within kTile cache lines each; y rows
// of 2-4 elements go to interleaveRows instead.
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
  const bool parallel = total > kParallelElements;
  switch (nb) {
    case 2: return interleaveRows<2>(x, xs, y, ys, dims, a, outer, parallel);
    case 3: return interleaveRows<3>(x, xs, y, ys, dims, a, outer, parallel);
    case 4: return interleaveRows<4>(x, xs, y, ys, dims, a, outer, parallel);
    default: break;
  }
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t task = 0; task < outer * tilesA; ++task) {
    const auto [xo, yo] = offsetsOf(task / tilesA, dims, xs, ys, b, a);
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
  if (xInner == 1 && yInner == 1) {
    // Contiguous runs. With fewer runs than threads (an NCHW Concat input at batch 1 is one run of up to
    // megabytes) each run is cut into chunks of at least kChunkElements, so every thread copies.
    const int64_t threads = omp_get_max_threads();
    const int64_t chunks = rows >= threads ? 1 : std::clamp<int64_t>(inner / kChunkElements, 1, threads);
    const int64_t chunk = (inner + chunks - 1) / chunks;
#pragma omp parallel for schedule(static) if (rows * chunks > 1 && rows * inner > kChunkElements)
    for (int64_t task = 0; task < rows * chunks; ++task) {
      const auto [xo, yo] = offsetsOf(task / chunks, dims, xs, ys, r - 1);
      const int64_t j0 = task % chunks * chunk, j1 = std::min(inner, j0 + chunk);
      std::memcpy(y + yo + j0, x + xo + j0, size_t(j1 - j0) * sizeof(float));
    }
    return;
  }
#pragma omp parallel for schedule(static) if (rows * inner > kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    const auto [xo, yo] = offsetsOf(row, dims, xs, ys, r - 1);
    for (int64_t j = 0; j < inner; ++j) y[yo + j * yInner] = x[xo + j * xInner];
  }
}

namespace {
// Rows [r0, r1) of concatRows. Narrow pieces (NHWC channel groups of 16-256 floats) copy in a vector loop of the
// machine's width: a memcpy call for each took longer than its bytes.
FRICTION_MULTIVERSION
void concatRowRange(int64_t r0, int64_t r1, const RowPiece* pieces, size_t count, float* y, int64_t yRow) {
  constexpr int64_t kNarrow = 256;
  for (int64_t r = r0; r < r1; ++r)
    for (size_t p = 0; p < count; ++p) {
      const int64_t width = pieces[p].width;
      const float* __restrict x = pieces[p].x + r * width;
      float* __restrict yr = y + r * yRow + pieces[p].offset;
      if (width > kNarrow) {
        std::memcpy(yr, x, size_t(width) * sizeof(float));
        continue;
      }
#pragma omp simd
      for (int64_t j = 0; j < width; ++j) yr[j] = x[j];
    }
}
}  // namespace

void concatRows(int64_t rows, const std::vector<RowPiece>& pieces, float* y, int64_t yRow) {
  int64_t copied = 0;
  for (const RowPiece& p : pieces) copied += p.width;
  const int threads = rows * copied > kParallelElements ? std::min<int64_t>(rows, omp_get_max_threads()) : 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    concatRowRange(rows * t / n, rows * (t + 1) / n, pieces.data(), pieces.size(), y, yRow);
  }
}

void gatherRows(const void* x, int64_t outer, int64_t axis, int64_t inner, const int64_t* indices, int64_t count,
                size_t elementBytes, void* y) {
  const size_t row = size_t(inner) * elementBytes;
  const char* from = static_cast<const char*>(x);
  char* to = static_cast<char*>(y);
#pragma omp parallel for collapse(2) schedule(static) if (outer * count * inner > kParallelElements)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      std::memcpy(to + size_t(o * count + j) * row, from + size_t(o * axis + indices[j]) * row, row);
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

namespace {

// One Reduce* kind as a fold over doubles (like the interpreter): a start
// value, one step per element, how two partial results combine, and the final map.
template <ReduceKind Kind>
struct Fold {
  static constexpr bool kMax = Kind == ReduceKind::Max, kMin = Kind == ReduceKind::Min,
                        kProd = Kind == ReduceKind::Prod;
  static double start() {
    return kMax   ? -std::numeric_limits<double>::infinity()
           : kMin ? std::numeric_limits<double>::infinity()
                  : kProd ? 1.0 : 0.0;
  }
  static double step(double acc, double v) {
    switch (Kind) {
      case ReduceKind::Max: return std::max(acc, v);
      case ReduceKind::Min: return std::min(acc, v);
      case ReduceKind::SumSquare:
      case ReduceKind::L2: return acc + v * v;
      case ReduceKind::L1: return acc + std::abs(v);
      case ReduceKind::LogSumExp: return acc + std::exp(v);
      case ReduceKind::Prod: return acc * v;
      default: return acc + v;
    }
  }
  static double combine(double a, double b) {
    return kMax ? std::max(a, b) : kMin ? std::min(a, b) : kProd ? a * b : a + b;
  }
  static float finish(double acc, int64_t count) {
    switch (Kind) {
      case ReduceKind::Mean: return float(acc / double(std::max<int64_t>(count, 1)));
      case ReduceKind::L2: return float(std::sqrt(acc));
      case ReduceKind::LogSum:
      case ReduceKind::LogSumExp: return float(std::log(acc));
      default: return float(acc);
    }
  }
};

// acc[i] = fold of x[r * inner + i] over r in [r0, r1), onto acc's values.
// With inner == 1 the span is contiguous: 8 independent chains (vectorizable,
// and no add waits for the one before), combined at the end.
template <class F>
void foldRows(const float* x, int64_t r0, int64_t r1, int64_t inner, double* acc) {
  if (inner == 1) {
    double lanes[8];
    std::fill(lanes, lanes + 8, F::start());
    int64_t r = r0;
    for (; r + 8 <= r1; r += 8)
#pragma omp simd
      for (int l = 0; l < 8; ++l) lanes[l] = F::step(lanes[l], double(x[r + l]));
    for (; r < r1; ++r) acc[0] = F::step(acc[0], double(x[r]));
    for (double l : lanes) acc[0] = F::combine(acc[0], l);
    return;
  }
  for (int64_t r = r0; r < r1; ++r)
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) acc[i] = F::step(acc[i], double(x[r * inner + i]));
}

template <class F>
void reduceWith(int64_t outer, int64_t reduced, int64_t inner, const float* x, float* y) {
  const bool parallel = outer * reduced * inner > kParallelElements;
  const int threads = parallel ? omp_get_max_threads() : 1;
  if (outer * inner >= 16 * threads || threads == 1) {  // enough outputs: threads take rows of them
#pragma omp parallel if (parallel)
    {
      std::vector<double> acc(static_cast<size_t>(inner));  // one per thread: NCHW reductions have many rows of one element
#pragma omp for schedule(static)
      for (int64_t o = 0; o < outer; ++o) {
        std::fill(acc.begin(), acc.end(), F::start());
        foldRows<F>(x + o * reduced * inner, 0, reduced, inner, acc.data());
        for (int64_t i = 0; i < inner; ++i) y[o * inner + i] = F::finish(acc[size_t(i)], reduced);
      }
    }
    return;
  }
  // Few outputs over a long axis (a whole-tensor reduction): threads take
  // stretches of the reduced axis, then their partial results combine.
  std::vector<double> partial(size_t(threads * outer * inner), F::start());
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int64_t r0 = reduced * t / threads, r1 = reduced * (t + 1) / threads;
    std::vector<double> mine(static_cast<size_t>(outer * inner), F::start());  // not `partial`: no shared cache lines
    for (int64_t o = 0; o < outer; ++o) foldRows<F>(x + o * reduced * inner, r0, r1, inner, mine.data() + o * inner);
    std::copy(mine.begin(), mine.end(), partial.begin() + t * outer * inner);
  }
  for (int64_t k = 0; k < outer * inner; ++k) {
    double acc = partial[size_t(k)];
    for (int t = 1; t < threads; ++t) acc = F::combine(acc, partial[size_t(t * outer * inner + k)]);
    y[k] = F::finish(acc, reduced);
  }
}

}  // namespace

void reduceMiddle(ReduceKind kind, int64_t outer, int64_t reduced, int64_t inner, const float* x, float* y) {
  switch (kind) {
    case ReduceKind::Sum: return reduceWith<Fold<ReduceKind::Sum>>(outer, reduced, inner, x, y);
    case ReduceKind::Mean: return reduceWith<Fold<ReduceKind::Mean>>(outer, reduced, inner, x, y);
    case ReduceKind::Max: return reduceWith<Fold<ReduceKind::Max>>(outer, reduced, inner, x, y);
    case ReduceKind::Min: return reduceWith<Fold<ReduceKind::Min>>(outer, reduced, inner, x, y);
    case ReduceKind::SumSquare: return reduceWith<Fold<ReduceKind::SumSquare>>(outer, reduced, inner, x, y);
    case ReduceKind::L1: return reduceWith<Fold<ReduceKind::L1>>(outer, reduced, inner, x, y);
    case ReduceKind::L2: return reduceWith<Fold<ReduceKind::L2>>(outer, reduced, inner, x, y);
    case ReduceKind::LogSum: return reduceWith<Fold<ReduceKind::LogSum>>(outer, reduced, inner, x, y);
    case ReduceKind::LogSumExp: return reduceWith<Fold<ReduceKind::LogSumExp>>(outer, reduced, inner, x, y);
    case ReduceKind::Prod: return reduceWith<Fold<ReduceKind::Prod>>(outer, reduced, inner, x, y);
  }
}

}  // namespace friction::ukernels
