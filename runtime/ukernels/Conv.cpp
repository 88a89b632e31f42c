#include "runtime/ukernels/Conv.h"

#include <algorithm>
#include <vector>
#include <cstring>
#include <limits>
#include <memory>
#include <tuple>

#include "runtime/ukernels/Multiversion.h"

namespace friction::ukernels {
namespace {

// Applies a ConvEpilogue to each finished block of the GEMM, while it is in cache.
FRICTION_MULTIVERSION
void epilogueRow(float* __restrict c, const float* __restrict b, const float* __restrict r, int64_t n, float lo, float hi) {
  if (b && r) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(c[j] + b[j] + r[j], lo), hi);
  } else if (b) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(c[j] + b[j], lo), hi);
  } else if (r) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(c[j] + r[j], lo), hi);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(c[j], lo), hi);
  }
}

void gemmEpilogue(void* ctx, float* C, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
  const auto& e = *static_cast<const ConvEpilogue*>(ctx);
  for (int64_t i = i0; i < i0 + rows; ++i)
    epilogueRow(C + i * ldc + j0, e.bias ? e.bias + j0 : nullptr, e.residual ? e.residual + i * ldc + j0 : nullptr, cols,
                e.lo, e.hi);
}

// One row of the NHWC im2col matrix: the (kh, kw, c) patch of output pixel
// (n, oh, ow), zeros outside the input. An undilated window row inside the
// input is S*C contiguous floats: one copy.
void gatherPatch(const Conv2d& g, const float* x, int64_t n, int64_t oh, int64_t ow, float* row) {
  const int64_t iw0 = ow * g.strideW - g.padLeft, span = g.S * g.C;
  const bool rowInside = g.dilW == 1 && iw0 >= 0 && iw0 + g.S <= g.W;
  for (int64_t r = 0; r < g.R; ++r, row += span) {
    int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
    if (ih < 0 || ih >= g.H) {
      std::fill(row, row + span, 0.f);
      continue;
    }
    const float* in = x + (n * g.H + ih) * g.W * g.C;
    if (rowInside) {
      std::copy(in + iw0 * g.C, in + iw0 * g.C + span, row);
      continue;
    }
    for (int64_t s = 0; s < g.S; ++s) {
      int64_t iw = iw0 + s * g.dilW;
      float* cell = row + s * g.C;
      if (iw < 0 || iw >= g.W)
        std::fill(cell, cell + g.C, 0.f);
      else
        std::copy(in + iw * g.C, in + iw * g.C + g.C, cell);
    }
  }
}

// The output columns of a window column (shift = s * dilW - padLeft) whose input lies inside the row.
void insideColumns(const Conv2d& g, int64_t shift, int64_t& lo, int64_t& hi) {
  std::tie(lo, hi) = insideOutputs(shift, g.strideW, g.W, g.OW);
}

// Rows of the NCHW im2col matrix [C/g*R*S, P] for the output pixels [p0, p0 + np)
// of image n, group gi: row (c, r, s) holds x[n, c, ih, iw] of each pixel, zeros
// outside the input. Walked one output row at a time: zeros, the inside run
// (one copy at stride 1), zeros.
void gatherColumns(const Conv2d& g, const float* x, int64_t n, int64_t gi, int64_t p0, int64_t np, float* cols) {
  const int64_t cg = g.C / g.group, rows = cg * g.R * g.S;
#pragma omp parallel for schedule(static) if (rows * np > (1 << 16))
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t c = row / (g.R * g.S), r = row / g.S % g.R, s = row % g.S;
    const float* plane = x + (n * g.C + gi * cg + c) * g.H * g.W;
    const int64_t shift = s * g.dilW - g.padLeft;
    int64_t lo, hi;
    insideColumns(g, shift, lo, hi);
    float* out = cols + row * np;
    for (int64_t p = p0; p < p0 + np;) {
      const int64_t oh = p / g.OW, ow0 = p % g.OW, ow1 = std::min(g.OW, ow0 + (p0 + np - p));
      const int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
      float* o = out + (p - p0);  // o[k] is pixel (oh, ow0 + k)
      if (ih < 0 || ih >= g.H) {
        std::fill(o, o + (ow1 - ow0), 0.f);
      } else {
        const float* src = plane + ih * g.W + shift;  // src[ow * strideW] is the input under (oh, ow)
        const int64_t a = std::clamp(lo, ow0, ow1), b = std::clamp(hi, a, ow1);
        std::fill(o, o + (a - ow0), 0.f);
        if (g.strideW == 1) {
          std::copy(src + a, src + b, o + (a - ow0));
        } else {
          for (int64_t ow = a; ow < b; ++ow) o[ow - ow0] = src[ow * g.strideW];
        }
        std::fill(o + (b - ow0), o + (ow1 - ow0), 0.f);
      }
      p += ow1 - ow0;
    }
  }
}

// The NCHW GEMM's epilogue: rows are output channels, so the bias is one
// number per row; `residual` is laid out like C (same leading dimension).
FRICTION_MULTIVERSION
void epilogueChannelRow(float* __restrict c, float bias, const float* __restrict r, int64_t n, float lo, float hi) {
  if (r) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(c[j] + bias + r[j], lo), hi);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(c[j] + bias, lo), hi);
  }
}

void gemmEpilogueNchw(void* ctx, float* C, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
  const auto& e = *static_cast<const ConvEpilogue*>(ctx);
  for (int64_t i = i0; i < i0 + rows; ++i)
    epilogueChannelRow(C + i * ldc + j0, e.bias ? e.bias[i] : 0.f, e.residual ? e.residual + i * ldc + j0 : nullptr,
                       cols, e.lo, e.hi);
}

bool clamps(const ConvEpilogue& e) {
  return e.lo != -std::numeric_limits<float>::infinity() || e.hi != std::numeric_limits<float>::infinity();
}

// `e` moved to the block of channels [k0, ...) and the output elements from `offset` (a group's GEMM).
ConvEpilogue shifted(const ConvEpilogue& e, int64_t k0, int64_t offset) {
  ConvEpilogue s = e;
  if (s.bias) s.bias += k0;
  if (s.residual) s.residual += offset;
  return s;
}

// Multiply-adds (or compares) of a windowed op over C channels, and the
// amount below which waking a second thread costs more than it saves.
int64_t windowWork(const Conv2d& g, int64_t C) { return g.N * g.OH * g.OW * C * g.R * g.S; }
constexpr int64_t kParallelWork = int64_t(1) << 15;

// Runs `cell(out, in, r, s)` for every in-bounds window cell of every output
// pixel (NHWC rows of C channels), pixels spread over threads; `start(out)`
// initializes a pixel, `finish(out, cells)` completes it.
template <typename Start, typename Cell, typename Finish>
void forEachWindow(const Conv2d& g, const float* x, float* y, int64_t C, Start start, Cell cell, Finish finish) {
#pragma omp parallel for collapse(2) schedule(static) if (windowWork(g, C) > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        float* out = y + ((n * g.OH + oh) * g.OW + ow) * C;
        start(out);
        int64_t cells = 0;
        for (int64_t r = 0; r < g.R; ++r) {
          int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t s = 0; s < g.S; ++s) {
            int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
            if (iw < 0 || iw >= g.W) continue;
            cell(out, x + ((n * g.H + ih) * g.W + iw) * C, r, s);
            ++cells;
          }
        }
        finish(out, cells);
      }
}

// Direct NHWC convolution for depthwise and grouped convolutions (no im2col):
// one output row (n, oh) and one block of output channels (a vector) at a time; the
// pixels whose window lies inside the input row in blocks of 8, 4, 2, 1
// (accumulators in vector registers, no bounds checks), the border pixels one
// by one with checks. Outputs start from the bias and leave with the residual
// added and clamped to [lo, hi] (a fused Relu/Clip), so each is written once.
// The helpers below pass vectors by value; they are forced inline into each
// ISA's clone of directRow, so no vector ever crosses a call between ISAs.
#pragma GCC diagnostic ignored "-Wpsabi"
constexpr int64_t kLanes = 16;
// W floats in one vector: 16 (a zmm, 2 ymm or 4 xmm), and 8, 4, 1 for the
// channels left after the 16-wide blocks of a depthwise conv.
template <int W>
struct Lanes {
  typedef float V __attribute__((vector_size(W * sizeof(float))));
};
using v16f = Lanes<kLanes>::V;

// The first `lanes` floats at p, zeros above (lanes == the width: one load).
template <typename V>
FRICTION_INLINE V loadLanes(const float* p, int64_t lanes) {
  V v{};
  if (lanes * int64_t(sizeof(float)) == int64_t(sizeof(V)))
    std::memcpy(&v, p, sizeof v);
  else
    std::memcpy(&v, p, size_t(lanes) * sizeof(float));
  return v;
}

// Depthwise: lane c reads input channel k0 + c; weights [R*S, C]. Blocks are
// exactly one vector wide (16, then 8, 4, 1 for what is left), so no load in
// the loop is partial.
template <typename V>
struct DepthwiseCells {
  static constexpr bool kWholeVectors = true;  // every block is exactly one V wide
  template <int P>
  FRICTION_INLINE void accumulate(V* acc, const float* x, int64_t pixelStride, const float* w) const {
    constexpr int64_t width = sizeof(V) / sizeof(float);
    const V wv = loadLanes<V>(w, width);
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[p] += loadLanes<V>(x + p * pixelStride, width) * wv;
  }
};

// Grouped: the block's 16 output channels read the input channels of their
// groups (`inputs` of them from the block's first); each is broadcast and
// multiplied by a 16-lane weight vector that is zero in the lanes of other
// groups (and past K, so in the last block only the store may be partial).
// Group widths below 16 waste lanes (8: half), which still beats a GEMM per
// group whose 8 columns waste as many and pay an im2col besides.
struct GroupedCells {
  static constexpr bool kWholeVectors = false;  // the last block may be partial
  int64_t inputs;
  template <int P>
  FRICTION_INLINE void accumulate(v16f* acc, const float* x, int64_t pixelStride, const float* w) const {
    for (int64_t ci = 0; ci < inputs; ++ci) {
      const v16f wv = loadLanes<v16f>(w + ci * kLanes, kLanes);
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) acc[p] += x[p * pixelStride + ci] * wv;
    }
  }
};

template <class Cells, typename V, bool HasResidual>
struct DirectRow {
  const Conv2d& g;
  Cells cells;
  const float* x;        // input at (n, 0, 0, the block's first input channel)
  const float* w;        // the block's weights; window cell (r, s) at w + (r * S + s) * cellStride
  int64_t cellStride;
  int64_t oh, rLo, rHi;  // the window rows [rLo, rHi) lie inside the input
  V bias, lo, hi;
  const float* residual;  // at (n, oh, 0, k0), or null
  float* y;               // output at (n, oh, 0, k0)
  int64_t lanes;          // output channels in this block

  FRICTION_INLINE const float* inputRow(int64_t r) const { return x + (oh * g.strideH - g.padTop + r * g.dilH) * g.W * g.C; }
  FRICTION_INLINE void store(int64_t ow, V v) const {
    if constexpr (HasResidual) v += loadLanes<V>(residual + ow * g.K, Cells::kWholeVectors ? sizeof(V) / sizeof(float) : lanes);
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    if (Cells::kWholeVectors || lanes * int64_t(sizeof(float)) == int64_t(sizeof(V)))
      std::memcpy(y + ow * g.K, &v, sizeof v);
    else
      std::memcpy(y + ow * g.K, &v, size_t(lanes) * sizeof(float));
  }
  // P pixels from ow0, every window cell inside the row.
  template <int P>
  FRICTION_INLINE void interior(int64_t ow0) const {
    V acc[P];
    for (int p = 0; p < P; ++p) acc[p] = bias;
    for (int64_t r = rLo; r < rHi; ++r) {
      const float* xrow = inputRow(r);
      for (int64_t s = 0; s < g.S; ++s)
        cells.template accumulate<P>(acc, xrow + (ow0 * g.strideW - g.padLeft + s * g.dilW) * g.C, g.strideW * g.C,
                                     w + (r * g.S + s) * cellStride);
    }
    for (int p = 0; p < P; ++p) store(ow0 + p, acc[p]);
  }
  FRICTION_INLINE void border(int64_t ow) const {
    V acc = bias;
    for (int64_t r = rLo; r < rHi; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
        if (iw >= 0 && iw < g.W) cells.template accumulate<1>(&acc, inputRow(r) + iw * g.C, 0, w + (r * g.S + s) * cellStride);
      }
    store(ow, acc);
  }
  FRICTION_INLINE void run() const {
    // Output columns [owA, owB) read only inside the input row.
    int64_t owA = std::min(g.OW, (g.padLeft + g.strideW - 1) / g.strideW);
    int64_t owB = std::max(owA, std::min(g.OW, (g.W - 1 + g.padLeft - (g.S - 1) * g.dilW) / g.strideW + 1));
    if (g.W - 1 + g.padLeft - (g.S - 1) * g.dilW < 0) owB = owA;
    for (int64_t ow = 0; ow < owA; ++ow) border(ow);
    int64_t ow = owA;
    for (; ow + 8 <= owB; ow += 8) interior<8>(ow);
    if (ow + 4 <= owB) interior<4>(ow), ow += 4;
    if (ow + 2 <= owB) interior<2>(ow), ow += 2;
    if (ow < owB) interior<1>(ow), ow += 1;
    for (; ow < g.OW; ++ow) border(ow);
  }
};

// Grouped and depthwise convolutions run direct, and so do dense ones over at
// most 4 input channels (a network's first conv on an RGB image: im2col there
// makes a GEMM of depth 27-147; direct, in the models' profiles, MobileNetV3's
// 3x3 to 16 channels 0.30 -> 0.11 ms, EfficientNet's to 32 0.37 -> 0.21 ms,
// ResNet's 7x7 to 64 1.9 -> 1.45 ms). Wider dense convolutions keep im2col +
// GEMM: with few output channels they gain 1.1-1.9x in isolation, but nothing
// measurable on DenseNet-121 or ResNet-18.
bool runsDirect(const Conv2d& g) { return g.group > 1 || g.C <= 4; }

// Output channels [k0, k0 + lanes), computed together.
struct Block {
  int64_t k0, lanes;
};
// Grouped: blocks of 16 (the packed weights' blocks; the last may be partial).
// Depthwise: blocks of 16, then of 8, 4 and 1 for the rest, each one whole
// vector (72 channels took 3.3x the time of 64 with a partial last block).
std::vector<Block> blocksOf(const Conv2d& g) {
  std::vector<Block> blocks;
  for (int64_t k0 = 0; k0 < g.K; k0 += blocks.back().lanes) {
    int64_t w = kLanes;
    if (g.depthwise())
      while (w > g.K - k0) w = w == kLanes ? 8 : w == 8 ? 4 : 1;
    blocks.push_back({k0, std::min(w, g.K - k0)});
  }
  return blocks;
}

// The input channels a grouped block's output channels [k0, k0 + 16) read: [first, first + count).
struct BlockInputs {
  int64_t first, count;
};
BlockInputs blockInputs(const Conv2d& g, int64_t k0) {
  const int64_t cg = g.C / g.group, kg = g.K / g.group, k1 = std::min(g.K, k0 + kLanes);
  return {k0 / kg * cg, ((k1 - 1) / kg - k0 / kg + 1) * cg};
}
// Grouped weights: per 16-channel block, R*S cells of `maxBlockInputs` x 16 lanes.
int64_t maxBlockInputs(const Conv2d& g) {
  int64_t m = 0;
  for (int64_t k0 = 0; k0 < g.K; k0 += kLanes) m = std::max(m, blockInputs(g, k0).count);
  return m;
}

// DirectRow<Cells, V, residual or not>{...}.run(): the residual test is made once per row, not per store.
template <class Cells, typename V, typename... Args>
FRICTION_INLINE void runRow(const float* residual, Args... args) {
  if (residual)
    DirectRow<Cells, V, true>{args...}.run();
  else
    DirectRow<Cells, V, false>{args...}.run();
}

// One output row of a depthwise block, V as wide as the block.
template <typename V>
FRICTION_INLINE void depthwiseRow(const Conv2d& g, const float* x, const float* packed, const ConvEpilogue& e,
                                  int64_t oh, int64_t rLo, int64_t rHi, Block blk, const float* res, float* y) {
  const V bias = e.bias ? loadLanes<V>(e.bias + blk.k0, blk.lanes) : V{};
  runRow<DepthwiseCells<V>, V>(res, g, DepthwiseCells<V>{}, x + blk.k0, packed + blk.k0, g.C, oh, rLo, rHi, bias,
                               V{} + e.lo, V{} + e.hi, res, y, blk.lanes);
}

// Output row (n, oh) of block `blk`; `cellStride`: the grouped weights' (maxBlockInputs * 16).
FRICTION_MULTIVERSION
void directRow(const Conv2d& g, const float* x, const float* packed, const ConvEpilogue& e, int64_t n, int64_t oh,
               Block blk, int64_t cellStride, float* y) {
  // Window rows inside the input: r with 0 <= oh * strideH - padTop + r * dilH < H.
  const int64_t top = oh * g.strideH - g.padTop;
  const int64_t rLo = top >= 0 ? 0 : (-top + g.dilH - 1) / g.dilH;
  const int64_t rHi = std::max(rLo, std::min(g.R, g.H - 1 - top < 0 ? 0 : (g.H - 1 - top) / g.dilH + 1));
  const int64_t pixel = (n * g.OH + oh) * g.OW * g.K + blk.k0;
  const float* res = e.residual ? e.residual + pixel : nullptr;
  const float* xn = x + n * g.H * g.W * g.C;
  switch (g.depthwise() ? blk.lanes : 0) {
    case 16: return depthwiseRow<Lanes<16>::V>(g, xn, packed, e, oh, rLo, rHi, blk, res, y + pixel);
    case 8: return depthwiseRow<Lanes<8>::V>(g, xn, packed, e, oh, rLo, rHi, blk, res, y + pixel);
    case 4: return depthwiseRow<Lanes<4>::V>(g, xn, packed, e, oh, rLo, rHi, blk, res, y + pixel);
    case 1: return depthwiseRow<Lanes<1>::V>(g, xn, packed, e, oh, rLo, rHi, blk, res, y + pixel);
    default: break;
  }
  const BlockInputs in = blockInputs(g, blk.k0);
  const v16f bias = e.bias ? loadLanes<v16f>(e.bias + blk.k0, blk.lanes) : v16f{};
  runRow<GroupedCells, v16f>(res, g, GroupedCells{in.count}, xn + in.first,
                             packed + blk.k0 / kLanes * g.R * g.S * cellStride, cellStride, oh, rLo, rHi, bias,
                             v16f{} + e.lo, v16f{} + e.hi, res, y + pixel, blk.lanes);
}

void direct(const Conv2d& g, const float* x, const float* packed, const ConvEpilogue& e, float* y) {
  const std::vector<Block> blocks = blocksOf(g);
  const int64_t nb = int64_t(blocks.size()), cellStride = g.depthwise() ? 0 : maxBlockInputs(g) * kLanes;
#pragma omp parallel for collapse(3) schedule(static) if (windowWork(g, g.K * (g.C / g.group)) > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t b = 0; b < nb; ++b) directRow(g, x, packed, e, n, oh, blocks[size_t(b)], cellStride, y);
}

}  // namespace

std::pair<int64_t, int64_t> insideOutputs(int64_t shift, int64_t stride, int64_t extent, int64_t outputs) {
  const int64_t lo = std::min(outputs, shift >= 0 ? 0 : (-shift + stride - 1) / stride);
  return {lo, std::max(lo, std::min(outputs, extent - 1 - shift < 0 ? 0 : (extent - 1 - shift) / stride + 1))};
}

std::vector<float> packConvWeights(const Conv2d& g, const float* oihw) {
  if (g.depthwise()) {
    std::vector<float> p(size_t(g.R * g.S * g.C));
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t rs = 0; rs < g.R * g.S; ++rs) p[size_t(rs * g.C + c)] = oihw[c * g.R * g.S + rs];
    return p;
  }
  const int64_t cg = g.C / g.group, kg = g.K / g.group;
  if (runsDirect(g)) {
    // Per block of 16 output channels: R*S cells of [maxBlockInputs, 16], zero
    // where an input channel is outside the lane's group (or the lane past K).
    const int64_t inputs = maxBlockInputs(g), cell = inputs * kLanes, nb = (g.K + kLanes - 1) / kLanes;
    std::vector<float> p(size_t(nb * g.R * g.S * cell), 0.f);
    for (int64_t b = 0; b < nb; ++b) {
      const BlockInputs in = blockInputs(g, b * kLanes);
      for (int64_t lane = 0; lane < kLanes && b * kLanes + lane < g.K; ++lane) {
        const int64_t k = b * kLanes + lane, c0 = k / kg * cg - in.first;  // the lane's group, from the block's first input
        for (int64_t rs = 0; rs < g.R * g.S; ++rs)
          for (int64_t c = 0; c < cg; ++c)
            p[size_t((b * g.R * g.S + rs) * cell + (c0 + c) * kLanes + lane)] = oihw[(k * cg + c) * g.R * g.S + rs];
      }
    }
    return p;
  }
  std::vector<float> p(size_t(g.R * g.S * g.C * g.K));  // [R*S*C, K]
  for (int64_t rs = 0; rs < g.R * g.S; ++rs)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t k = 0; k < g.K; ++k) p[size_t((rs * g.C + c) * g.K + k)] = oihw[(k * g.C + c) * g.R * g.S + rs];
  return p;
}

const char* convMethod(const Conv2d& g, bool nhwc) {
  if (nhwc ? runsDirect(g) : g.depthwise()) return "direct";
  if (!nhwc && g.group > 1) return "sgemm per group";
  return g.unitWindow() ? "sgemm" : "im2col + sgemm";
}

void convNhwc(const Conv2d& g, const float* x, const float* packedW, const ConvEpilogue& e, float* y) {
  if (runsDirect(g)) return direct(g, x, packedW, e, y);
  // One GEMM: rows are output pixels, columns output channels.
  const int64_t rows = g.N * g.OH * g.OW, depth = g.R * g.S * g.C;
  const bool anyEpilogue = e.bias || e.residual || clamps(e);
  auto gemm = [&](int64_t r0, int64_t nr, const float* a, int64_t lda) {
    ConvEpilogue ge = shifted(e, 0, r0 * g.K);
    GemmEpilogue ep{&gemmEpilogue, &ge};
    sgemm(false, false, nr, g.K, depth, 1.f, a, lda, packedW, g.K, 0.f, y + r0 * g.K, g.K, anyEpilogue ? &ep : nullptr);
  };
  if (g.unitWindow()) return gemm(0, rows, x, g.C);
  // im2col in bands of output rows, so the gathered matrix stays bounded (and in cache for small layers).
  const int64_t band = std::max<int64_t>(1, std::min<int64_t>(rows, (int64_t(1) << 22) / std::max<int64_t>(depth, 1)));
  std::unique_ptr<float[]> cols(new float[size_t(band * depth)]);
  for (int64_t r0 = 0; r0 < rows; r0 += band) {
    const int64_t nr = std::min(band, rows - r0);
#pragma omp parallel for schedule(static) if (nr * depth > (1 << 16))
    for (int64_t i = 0; i < nr; ++i) {
      int64_t p = r0 + i, n = p / (g.OH * g.OW), oh = p / g.OW % g.OH, ow = p % g.OW;
      gatherPatch(g, x, n, oh, ow, cols.get() + i * depth);
    }
    gemm(r0, nr, cols.get(), depth);
  }
}

namespace {

// One depthwise NCHW plane (image n, channel c): each output row starts from
// the bias, accumulates R*S shifted input rows (vectorized along the row),
// then takes the residual and the clamp.
FRICTION_MULTIVERSION
void depthwisePlane(const Conv2d& g, const float* x, const float* w, const ConvEpilogue& e, int64_t n, int64_t c,
                    float* y) {
  const float* in = x + (n * g.C + c) * g.H * g.W;
  const float* wc = w + c * g.R * g.S;
  const float bias = e.bias ? e.bias[c] : 0.f;
  float* out = y + (n * g.K + c) * g.OH * g.OW;
  const float* res = e.residual ? e.residual + (n * g.K + c) * g.OH * g.OW : nullptr;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    float* __restrict row = out + oh * g.OW;
    std::fill(row, row + g.OW, bias);
    for (int64_t r = 0; r < g.R; ++r) {
      const int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
      if (ih < 0 || ih >= g.H) continue;
      const float* __restrict src = in + ih * g.W;
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t shift = s * g.dilW - g.padLeft;
        int64_t lo, hi;
        insideColumns(g, shift, lo, hi);
        const float wv = wc[r * g.S + s];
        if (g.strideW == 1) {
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * src[ow + shift];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * src[ow * g.strideW + shift];
        }
      }
    }
    epilogueChannelRow(row, 0.f, res ? res + oh * g.OW : nullptr, g.OW, e.lo, e.hi);
  }
}

}  // namespace

void convNchw(const Conv2d& g, const float* x, const float* oihw, const ConvEpilogue& e, float* y) {
  if (g.depthwise()) {
#pragma omp parallel for collapse(2) schedule(static) if (windowWork(g, g.C) > kParallelWork)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t c = 0; c < g.C; ++c) depthwisePlane(g, x, oihw, e, n, c, y);
    return;
  }
  const bool anyEpilogue = e.bias || e.residual || clamps(e);
  const int64_t cg = g.C / g.group, kg = g.K / g.group, depth = cg * g.R * g.S, pixels = g.OH * g.OW;
  // Per image and group: y_g [K/g, pixels] = W_g [K/g, depth] * im2col [depth, pixels].
  auto gemm = [&](int64_t n, int64_t gi, int64_t p0, int64_t np, const float* b, int64_t ldb) {
    const int64_t offset = (n * g.K + gi * kg) * pixels + p0;
    ConvEpilogue ge = shifted(e, gi * kg, offset);
    GemmEpilogue ep{&gemmEpilogueNchw, &ge};
    sgemm(false, false, kg, np, depth, 1.f, oihw + gi * kg * depth, depth, b, ldb, 0.f, y + offset, pixels,
          anyEpilogue ? &ep : nullptr);
  };
  if (g.unitWindow()) {
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t gi = 0; gi < g.group; ++gi) gemm(n, gi, 0, pixels, x + (n * g.C + gi * cg) * pixels, pixels);
    return;
  }
  // im2col in bands of output pixels, so the gathered matrix stays bounded.
  const int64_t band =
      std::max<int64_t>(1, std::min<int64_t>(pixels, (int64_t(1) << 22) / std::max<int64_t>(depth, 1)));
  std::unique_ptr<float[]> cols(new float[size_t(band * depth)]);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < g.group; ++gi)
      for (int64_t p0 = 0; p0 < pixels; p0 += band) {
        const int64_t np = std::min(band, pixels - p0);
        gatherColumns(g, x, n, gi, p0, np, cols.get());
        gemm(n, gi, p0, np, cols.get(), np);
      }
}

void poolNhwc(const Conv2d& g, PoolKind kind, const float* x, float* y) {
  const int64_t C = g.C;
  const float init = kind == PoolKind::Max ? -std::numeric_limits<float>::infinity() : 0.f;
  forEachWindow(
      g, x, y, C, [&](float* out) { std::fill(out, out + C, init); },
      [&](float* out, const float* in, int64_t, int64_t) {
        if (kind == PoolKind::Max) {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) out[c] = std::max(out[c], in[c]);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) out[c] += in[c];
        }
      },
      [&](float* out, int64_t cells) {
        if (kind == PoolKind::Max) return;
        float inv = 1.f / float(kind == PoolKind::Average ? std::max<int64_t>(cells, 1) : g.R * g.S);
        for (int64_t c = 0; c < C; ++c) out[c] *= inv;
      });
}

void globalAveragePoolNhwc(int64_t N, int64_t HW, int64_t C, const float* x, float* y) {
  for (int64_t n = 0; n < N; ++n) {
    float* out = y + n * C;
    std::fill(out, out + C, 0.f);
    for (int64_t p = 0; p < HW; ++p) {
      const float* in = x + (n * HW + p) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) out[c] += in[c];
    }
    for (int64_t c = 0; c < C; ++c) out[c] /= float(HW);
  }
}

void poolNchw(const Conv2d& g, PoolKind kind, const float* x, float* y) {
#pragma omp parallel for collapse(2) schedule(static) if (windowWork(g, g.C) > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t c = 0; c < g.C; ++c) {
      const float* in = x + (n * g.C + c) * g.H * g.W;
      float* out = y + (n * g.C + c) * g.OH * g.OW;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          float acc = kind == PoolKind::Max ? -std::numeric_limits<float>::infinity() : 0.f;
          int64_t cells = 0;
          for (int64_t r = 0; r < g.R; ++r) {
            const int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
            if (ih < 0 || ih >= g.H) continue;
            for (int64_t s = 0; s < g.S; ++s) {
              const int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
              if (iw < 0 || iw >= g.W) continue;
              const float v = in[ih * g.W + iw];
              acc = kind == PoolKind::Max ? std::max(acc, v) : acc + v;
              ++cells;
            }
          }
          if (kind != PoolKind::Max) acc /= float(kind == PoolKind::Average ? std::max<int64_t>(cells, 1) : g.R * g.S);
          out[oh * g.OW + ow] = acc;
        }
    }
}

void globalAveragePoolNchw(int64_t N, int64_t C, int64_t HW, const float* x, float* y) {
#pragma omp parallel for schedule(static) if (N * C * HW > kParallelWork)
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const float* in = x + nc * HW;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t p = 0; p < HW; ++p) sum += in[p];
    y[nc] = sum / float(HW);
  }
}

}  // namespace friction::ukernels
