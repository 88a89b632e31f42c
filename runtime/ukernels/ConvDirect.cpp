// The direct convolution kernels (no im2col), in both layouts: see ConvDirect.h.
#include "runtime/ukernels/ConvDirect.h"

#include <omp.h>

#include <algorithm>
#include <cassert>
#include <vector>

#include "runtime/ukernels/DepthwiseRow.h"
#include "runtime/ukernels/Multiversion.h"
#include "runtime/ukernels/Parallel.h"

namespace friction::ukernels {
namespace {

// Direct convolution: one output row (n, oh) and one block of output channels at a time (a task takes a row's chunk
// of blocks); the pixels whose window lies inside the input row in tiles of up to 8 pixels (accumulators in vector
// registers, no bounds checks), the border pixels one by one. Grouped convolutions and dense ones over at most 4
// input channels, in either layout, run DirectRow below; depthwise NHWC ones their own row kernel (depthwiseRow,
// DepthwiseRow.h), whose inner loop reuses each loaded input across the window (with a fixed window, border pixels
// too, in tiles that skip the columns outside the row), and which computes a row's blocks of one width pixel by
// pixel, so that it reads the row in order. Outputs start from the bias and leave with the
// residual added, clamped to [lo, hi] (a fused Relu/Clip) and activated (Conv.h's Activation), so each is written
// once. A block of L channels is a Pack of native vectors (one zmm, two ymm or four xmm for 16 channels); the code is
// written once over the native width NW and instantiated per ISA (Multiversion.h). The helpers pass Packs by value;
// they are forced inline into each ISA's copy, so no vector crosses a call between ISAs (callAtWidth's calls stay
// within one).
#pragma GCC diagnostic ignored "-Wpsabi"
constexpr int64_t kLanes = 16;
// A depthwise task's weights and one pixel's window, at most: an L1 of 32 KB (AVX2 EPYC) or 48 KB.
constexpr int64_t kDepthwiseChunkBytes = int64_t(32) << 10;

// The input channels a grouped block's output channels [k0, k0 + 16) read: [first, first + count).
struct BlockInputs {
  int64_t first, count;
};

// Grouped: the block's 16 output channels read the input channels of their groups (`inputs` of them from the block's
// first); each is broadcast and multiplied by a 16-lane weight vector that is zero in the lanes of other groups (and
// past K, so in the last block only the store may be partial). Group widths below 16 waste lanes (8: half), which
// still beats a GEMM per group whose 8 columns waste as many and pay an im2col besides. The broadcast input need not
// be channels-last, so NCHW runs the same cells.
//
// Where the block is several native vectors (AVX2: two) whose lanes' groups read disjoint inputs (groups of at most 8
// channels), each vector multiplies its own inputs only, not the zeros of the others' (RegNetY's groups of 8: half
// the multiplies).
//
// Planar: the inputs' channels lie H * W floats apart (NCHW), else 1 (NHWC).
template <class P, bool Planar>
struct GroupedInputs {
  using V = typename P::V;
  static constexpr int N = int(sizeof(P) / sizeof(V)), W = P::kWidth / N;
  int64_t inputs;
  int64_t planeStride;  // floats between input channels when Planar
  int64_t from[N], to[N];  // vector i's inputs [from[i], to[i]), when `split`
  bool split;

  // The block of output channels [k0, k0 + 16) over the input channels `in` reads.
  FRICTION_INLINE GroupedInputs(const ConvGeometry& g, int64_t k0, BlockInputs in)
      : inputs(in.count), planeStride(g.H * g.W), split(N > 1) {
    const int64_t cg = g.C / g.group, kg = g.K / g.group;
    int64_t read = 0;
    for (int i = 0; i < N; ++i) {
      const int64_t k1 = std::min(g.K, k0 + i * W), k2 = std::min(g.K, k0 + (i + 1) * W);
      from[i] = k1 / kg * cg - in.first, to[i] = k2 > k1 ? ((k2 - 1) / kg + 1) * cg - in.first : from[i];
      read += to[i] - from[i];
    }
    split = split && read <= inputs;  // no input read by two vectors
  }
  FRICTION_INLINE int64_t channelStride() const { return Planar ? planeStride : 1; }
  // The inputs every vector that reads any reads (split), or the block's inputs; 0 if the vectors differ.
  FRICTION_INLINE int64_t uniformCount() const {
    if (!split) return inputs;
    int64_t count = 0;
    for (int i = 0; i < N; ++i)
      if (to[i] > from[i]) {
        if (count && count != to[i] - from[i]) return 0;
        count = to[i] - from[i];
      }
    return count;
  }
};

// Count: uniformCount() when fixed at compile time, so the loop over the inputs unrolls into loads at constant
// offsets (RegNetY-400MF's direct convs: 0.73x the instructions of the runtime loop); 0: any count.
template <class P, bool Planar, int Count = 0>
struct GroupedCells : GroupedInputs<P, Planar> {
  using Block = P;
  using Base = GroupedInputs<P, Planar>;
  using typename Base::V;
  using Base::N, Base::W, Base::from, Base::to, Base::inputs, Base::split;
  static constexpr int kUnrolledInputs = Count;  // 0: the inputs do not unroll
  // acc[p * J + j]: pixel p's j-th partial sums, the block's N vectors each; input ci goes to partial ci % J, a
  // constant where the inputs unroll (J is 1 otherwise).
  template <int T, int J>
  FRICTION_INLINE void accumulate(V (*acc)[N], const float* x, int64_t pixelStride, const float* w) const {
    const int64_t cs = this->channelStride();
    // Each pixel's input as a pointer of its own: the unrolled loads are then constant offsets from it (left
    // to itself, GCC kept the T * Count addresses on the stack and reloaded one per broadcast).
    const float* xp[T];
#pragma GCC unroll 8
    for (int p = 0; p < T; ++p) xp[p] = advance(x, p * pixelStride);
    if (split) {
#pragma GCC unroll 4
      for (int i = 0; i < N; ++i) {
        if (Count > 0 && to[i] == from[i]) continue;  // lanes past K
        const float* wi = w + from[i] * P::kWidth + i * W;
        forInputs(to[i] - from[i], [&](int64_t ci) FRICTION_LAMBDA_INLINE {
          V wv;
          std::memcpy(&wv, wi + ci * P::kWidth, sizeof(V));
#pragma GCC unroll 8
          for (int p = 0; p < T; ++p) acc[p * J + ci % J][i] += xp[p][(from[i] + ci) * cs] * wv;
        });
      }
      return;
    }
    forInputs(inputs, [&](int64_t ci) FRICTION_LAMBDA_INLINE {
      const P wv = P::load(w + ci * P::kWidth);
#pragma GCC unroll 8
      for (int p = 0; p < T; ++p)
#pragma GCC unroll 4
        for (int i = 0; i < N; ++i) acc[p * J + ci % J][i] += xp[p][ci * cs] * wv.v[i];
    });
  }
  // body(ci) for the inputs ci in [0, Count), unrolled, or in [0, count) as a plain loop (unrolled by 16 it only
  // adds code: the counts that matter are fixed).
  template <class Body>
  FRICTION_INLINE static void forInputs(int64_t count, const Body& body) {
    if constexpr (Count > 0) {
#pragma GCC unroll 16
      for (int64_t ci = 0; ci < Count; ++ci) body(ci);
    } else {
      for (int64_t ci = 0; ci < count; ++ci) body(ci);
    }
  }
};

// Planar: NCHW in and out. An accumulator still holds one pixel's block of
// channels; a tile of them is stored transposed, as rows of pixels per channel.
// RowInputs > 0 (dense NHWC over C inputs at dilation 1: 3x3 RGB stems): a window
// row's S cells lie side by side, in the input (S * C floats from the row's
// first pixel) and in the packed weights, so an interior tile reads each window
// row as one cell of RowInputs = S * C inputs, unrolled, instead of S cells of C.
template <class Cells, bool HasResidual, bool Planar, int RowInputs = 0>
struct DirectRow {
  using P = typename Cells::Block;
  // Pixels per interior tile: 8 vector accumulators for blocks of 16 channels, which leaves registers for the weights
  // and the inputs on every ISA (16 ymm on AVX2). AVX-512's blocks of 32 (dense stems) take 16 of its 32 registers,
  // so each broadcast input feeds two vectors; 24 (tiles of 12 pixels) ran 3 -> 32 stems in 1.4x the time.
  using V = typename P::V;
  static constexpr int kVectors = int(sizeof(P)) / int(sizeof(V));
  static constexpr int kAccumulators = P::kWidth > kLanes && sizeof(typename P::V) == 64 ? 16 : 8;
  static constexpr int kTile = std::max(1, kAccumulators / kVectors);
  // Partial sums per pixel in a tile of T (border pixels: T = 1), so that every tile keeps kTile chains of
  // multiply-adds in flight: one pixel's chain alone waits out each multiply-add's latency (on 7x7 images, 3
  // of a row's 7 pixels are border pixels or a tile of one). Only where the inputs unroll
  // (Cells::kUnrolledInputs > 0): a partial picked at run time would index the accumulators in memory. Never
  // more partials than inputs (an RGB stem's 3 inputs fill only 3).
  template <int T, int Unrolled = Cells::kUnrolledInputs>
  static constexpr int partials() {
    return std::max(1, std::min(Unrolled, kTile / T));
  }
  const ConvGeometry& g;
  Cells cells;
  const float* x;        // input at image n's first pixel of the block's first input channel
  const float* w;        // the block's weights; window cell (r, s) at w + (r * S + s) * cellStride
  int64_t cellStride;
  int64_t oh, rLo, rHi;  // the window rows [rLo, rHi) lie inside the input
  int64_t owA, owB;      // output columns [owA, owB) read only inside the input row (interiorColumns)
  P bias, lo, hi;
  const float* residual;  // at output (n, oh, 0) of channel k0, or null
  float* y;               // output at (n, oh, 0) of channel k0
  int64_t lanes;          // output channels in this block
  const ConvEpilogue& e;  // its activation (bias, clamp and residual are above)

  FRICTION_INLINE int64_t pixelFloats() const { return Planar ? 1 : g.C; }
  FRICTION_INLINE const float* inputRow(int64_t r) const {
    return x + (oh * g.strideH - g.padTop + r * g.dilH) * g.W * pixelFloats();
  }
  FRICTION_INLINE static P pack(const V (&acc)[kVectors]) {
    P v;
#pragma GCC unroll 4
    for (int i = 0; i < kVectors; ++i) v.v[i] = acc[i];
    return v;
  }
  // T finished accumulators of the pixels from ow0 (pixel p's at acc[p * J]): residual, clamp, store.
  template <int T, int J>
  FRICTION_INLINE void store(int64_t ow0, const V (*acc)[kVectors]) const {
    const int64_t stored = lanes;  // the last block may be partial
    if constexpr (Planar) {
      float tile[T][P::kWidth];
      for (int p = 0; p < T; ++p) pack(acc[p * J]).store(tile[p]);
      const int64_t plane = g.OH * g.OW;
      const float l0 = lo.v[0][0], h0 = hi.v[0][0];
      for (int64_t l = 0; l < stored; ++l) {
        float* out = y + l * plane + ow0;
        for (int p = 0; p < T; ++p) {
          float v = tile[p][l];
          if constexpr (HasResidual) v += residual[l * plane + ow0 + p];
          out[p] = activate(e, std::min(std::max(v, l0), h0));
        }
      }
    } else {
#pragma GCC unroll 8
      for (int p = 0; p < T; ++p) {
        P v = pack(acc[p * J]);
        if constexpr (HasResidual) v.add(P::load(residual + (ow0 + p) * g.K, stored));
        v.clamp(lo, hi);
        activatePack(v, e.activation, e.alpha, e.beta, e.rounding);
        v.store(y + (ow0 + p) * g.K, stored);
      }
    }
  }
  // T pixels from ow0, every window cell inside the row. The loops over the tile's pixels are unrolled so that acc
  // stays in registers: the store's loop, left rolled, indexed acc at run time, which kept it in memory (RGB stem:
  // 40% of its time reloading it there). Plain vector arrays, not Packs: an array of Packs went through the stack
  // (AVX-512 stems: 18 stores to the stack among 15 multiply-adds).
  template <int T>
  FRICTION_INLINE void interior(int64_t ow0) const {
    constexpr int J = partials<T, RowInputs ? RowInputs : Cells::kUnrolledInputs>();
    V acc[T * J][kVectors];
    start<T * J, J>(acc);
    for (int64_t r = rLo; r < rHi; ++r) {
      const float* xrow = inputRow(r);
      if constexpr (!Planar) prefetchWindow<T>(xrow, ow0 + T);
      if constexpr (RowInputs > 0) {
        GroupedInputs<P, false> row = cells;
        row.inputs = RowInputs, row.split = false;
        GroupedCells<P, false, RowInputs>{row}.template accumulate<T, J>(
            acc, xrow + (ow0 * g.strideW - g.padLeft) * g.C, g.strideW * g.C, w + r * g.S * cellStride);
        continue;
      }
      for (int64_t s = 0; s < g.S; ++s)
        cells.template accumulate<T, J>(acc, xrow + (ow0 * g.strideW - g.padLeft + s * g.dilW) * pixelFloats(),
                                        g.strideW * pixelFloats(), w + (r * g.S + s) * cellStride);
    }
    finish<T, J>(ow0, acc);
  }
  // Prefetches the block's inputs under window row xrow of the next tile, the T pixels from ow, so they arrive
  // from L2/L3 while this tile computes: its FMAs read each input line through an instruction of its own, at
  // a stride no hardware prefetcher follows (RegNetX's stride-2 grouped convs: 0.5-0.8x the time, one
  // thread). Past the row's end, the next block's first tile (grouped blocks read consecutive runs of
  // `inputs` channels). Pixels of at most 32 channels share lines: their whole span, line by line.
  template <int T>
  FRICTION_INLINE void prefetchWindow(const float* xrow, int64_t ow) const {
    if (ow >= g.OW) xrow += cells.inputs, ow = 0;
    const int64_t first = std::max<int64_t>(0, ow * g.strideW - g.padLeft);
    const int64_t last = std::min(g.W - 1, (ow + T - 1) * g.strideW - g.padLeft + (g.S - 1) * g.dilW);
    if (first > last) return;
    const float *begin = xrow + first * g.C, *end = xrow + last * g.C + cells.inputs;
    if (g.C <= 2 * kLanes) {
      for (const float* p = begin; p < end; p += kLanes) __builtin_prefetch(p);
      __builtin_prefetch(end - 1);
      return;
    }
    for (const float* p = begin; p < end; p += g.C) {
      __builtin_prefetch(p);
      __builtin_prefetch(p + cells.inputs - 1);
    }
  }
  // The accumulators of A / J pixels: each pixel's first partial starts from the bias, the others from 0.
  template <int A, int J>
  FRICTION_INLINE void start(V (*acc)[kVectors]) const {
#pragma GCC unroll 8
    for (int a = 0; a < A; ++a)
#pragma GCC unroll 4
      for (int i = 0; i < kVectors; ++i) acc[a][i] = a % J ? V{} : bias.v[i];
  }
  // Each pixel's partials summed into its first, then stored.
  template <int T, int J>
  FRICTION_INLINE void finish(int64_t ow0, V (*acc)[kVectors]) const {
#pragma GCC unroll 8
    for (int p = 0; p < T; ++p)
#pragma GCC unroll 8
      for (int j = 1; j < J; ++j)
#pragma GCC unroll 4
        for (int i = 0; i < kVectors; ++i) acc[p * J][i] += acc[p * J + j][i];
    store<T, J>(ow0, acc);
  }
  // Interior pixels [ow, owB) in tiles of T, then of T/2, ... 1.
  template <int T>
  FRICTION_INLINE void interiorTiles(int64_t& ow, int64_t owB) const {
    for (; ow + T <= owB; ow += T) interior<T>(ow);
    if constexpr (T > 1) interiorTiles<T / 2>(ow, owB);
  }
  FRICTION_INLINE void border(int64_t ow) const {
    constexpr int J = partials<1>();
    V acc[J][kVectors];
    start<J, J>(acc);
    for (int64_t r = rLo; r < rHi; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
        if (iw >= 0 && iw < g.W)
          cells.template accumulate<1, J>(acc, inputRow(r) + iw * pixelFloats(), 0, w + (r * g.S + s) * cellStride);
      }
    finish<1, J>(ow, acc);
  }
  // The whole tiles of kTile pixels from ow on a copy of the row (by value: its fields then live in registers,
  // not behind a pointer); returns the first pixel left.
  FRICTION_INLINE static int64_t wholeTiles(const DirectRow row, int64_t ow, int64_t owB) {
    for (; ow + kTile <= owB; ow += kTile) row.template interior<kTile>(ow);
    return ow;
  }
  FRICTION_INLINE void run() const {
    for (int64_t ow = 0; ow < owA; ++ow) border(ow);
    int64_t ow = owA;
    // The whole tiles in a function of its own (callAtWidth): sharing one with the border pixels and the
    // smaller tiles, the RGB stem's accumulators spilled.
    callAtWidth<int(sizeof(V) / sizeof(float))>([&]<int>() FRICTION_LAMBDA_INLINE { ow = wholeTiles(*this, ow, owB); });
    if constexpr (kTile > 1) interiorTiles<kTile / 2>(ow, owB);
    for (; ow < g.OW; ++ow) border(ow);
  }
};


// Output channels [k0, k0 + lanes), computed together.
struct Block {
  int64_t k0, lanes;
  int64_t count = 1;  // depthwise: this many blocks of `lanes` from k0, computed together pixel by pixel
  BlockInputs in{};   // grouped and dense: the input channels it reads (blockInputs), computed once a conv
};
// Output channels per block of the packed weights. Grouped: 16. Dense (over at most 4 input channels) on
// AVX-512: 32 where K is a multiple of 32, so a tile's broadcast inputs are loaded once for 32 channels, not
// once per 16 (3x3 stems to 32 and 64 channels and ResNet's 7x7 to 64: 0.81-0.87x the time). Blocks of 64
// (4 vectors in tiles of 4 pixels) ran ResNet's 7x7 stem in 1.7x the time; a partial block of 32 (stems to
// 24) lost to 16 + 8 (1.11x). From the machine's width, not the running copy's: it fixes how the weights are packed.
int64_t blockLanes(const ConvGeometry& g) {
  return g.group == 1 && machineFloatLanes() >= 16 && g.K % (2 * kLanes) == 0 ? 2 * kLanes : kLanes;
}

// The input channels the block of output channels [k0, k0 + lanes) reads.
BlockInputs blockInputs(const ConvGeometry& g, int64_t k0, int64_t lanes) {
  const int64_t cg = g.C / g.group, kg = g.K / g.group, k1 = std::min(g.K, k0 + lanes);
  return {k0 / kg * cg, ((k1 - 1) / kg - k0 / kg + 1) * cg};
}

// Grouped and dense: blocks of blockLanes (the packed weights' blocks; the last may be partial).
// Depthwise: blocks of 16, then of 8, 4 and 1 for the rest, each one whole
// Pack (72 channels took 3.3x the time of 64 with a partial last block).
std::vector<Block> blocksOf(const ConvGeometry& g) {
  std::vector<Block> blocks;
  const int64_t widest = g.depthwise() ? kLanes : blockLanes(g);
  for (int64_t k0 = 0; k0 < g.K; k0 += blocks.back().lanes) {
    int64_t w = widest;
    if (g.depthwise())
      while (w > g.K - k0) w = w == kLanes ? 8 : w == 8 ? 4 : 1;
    const int64_t lanes = std::min(w, g.K - k0);
    blocks.push_back({k0, lanes, 1, g.depthwise() ? BlockInputs{} : blockInputs(g, k0, lanes)});
  }
  return blocks;
}

// The packed weights: per block of blockLanes channels, R*S cells of `maxBlockInputs` x blockLanes.
int64_t maxBlockInputs(const ConvGeometry& g) {
  int64_t m = 0;
  for (int64_t k0 = 0, lanes = blockLanes(g); k0 < g.K; k0 += lanes) m = std::max(m, blockInputs(g, k0, lanes).count);
  return m;
}

// DirectRow<Cells, residual or not, Planar, RowInputs>{...}.run(): the residual test is made once per row, not per
// store.
template <class Cells, bool Planar = false, int RowInputs = 0, typename... Args>
FRICTION_INLINE void runRow(const float* residual, Args... args) {
  if (residual)
    DirectRow<Cells, true, Planar, RowInputs>{args...}.run();
  else
    DirectRow<Cells, false, Planar, RowInputs>{args...}.run();
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// What the rows of one direct convolution share.
struct DirectConv {
  const ConvGeometry& g;
  const float* x;       // input: NHWC, or NCHW when planar
  const float* packed;  // packConvWeights
  const ConvEpilogue& e;
  float* y;             // output, in the input's layout
  bool planar;          // NCHW (grouped convolutions only)
  int64_t blockLanes;   // the packed weights' block width (blockLanes)
  int64_t cellStride;   // floats per window cell of a block's weights: maxBlockInputs * blockLanes
};

// Output row (n, oh) of the grouped or dense block `blk` with NW-float vectors, the packed weights' blocks L channels
// wide: xn is image n's input, out the offset of output (n, oh, 0) of channel blk.k0, res the residual there or null.
template <int L, int NW>
FRICTION_INLINE void blockRowOf(const DirectConv& d, const float* xn, int64_t oh, RowSpan span, Block blk,
                                int64_t out, const float* res) {
  using P = PackOf<L, NW>;
  const ConvGeometry& g = d.g;
  const P bias = d.e.bias ? P::load(d.e.bias + blk.k0, blk.lanes) : P::splat(0.f);
  const float* w = d.packed + blk.k0 / L * g.R * g.S * d.cellStride;
  const P lo = P::splat(d.e.lo), hi = P::splat(d.e.hi);
  auto run = [&]<bool Planar>() FRICTION_LAMBDA_INLINE {
    const GroupedInputs<P, Planar> inputs(g, blk.k0, blk.in);
    const float* xk = xn + blk.in.first * inputs.channelStride();
    auto withCount = [&]<int Count, int RowInputs = 0>() FRICTION_LAMBDA_INLINE {
      using Cells = GroupedCells<P, Planar, Count>;
      runRow<Cells, Planar, RowInputs>(res, g, Cells{inputs}, xk, w, d.cellStride, oh, span.rLo, span.rHi, span.owA,
                                       span.owB, bias, lo, hi, res, d.y + out, blk.lanes, d.e);
    };
    // 3x3 RGB stems' window rows as one cell each (DirectRow's RowInputs): 3x3/2 stems into 16 and 32 channels
    // and VGG's 3x3/1 took 0.90-0.95x the time (a driver, interleaved, two threads). Not for wider windows: a 7x7
    // stem's time did not move, AlexNet's 11x11 took 1.08x.
    const bool rowsOfCells = g.group == 1 && g.dilW == 1 && g.S == 3 && d.cellStride == g.C * L;
    // The counts of the models' grouped blocks (groups of 4 or 8 split into 8 a vector, of 16 whole) and of
    // RGB stems; wider blocks are dense stems' only.
    switch (inputs.uniformCount()) {
      case 3:
        if constexpr (!Planar)
          if (rowsOfCells) return withCount.template operator()<3, 9>();
        return withCount.template operator()<3>();
      case 8:
        if constexpr (L == kLanes) return withCount.template operator()<8>();
        break;
      case 16:
        if constexpr (L == kLanes) return withCount.template operator()<16>();
        break;
    }
    withCount.template operator()<0>();
  };
  if constexpr (L == kLanes)
    if (d.planar) return run.template operator()<true>();
  run.template operator()<false>();
}

// Output row (n, oh) of block `blk` with NW-float vectors.
template <int NW>
FRICTION_INLINE void directRowOf(const DirectConv& d, int64_t n, int64_t oh, RowSpan span, Block blk) {
  const ConvGeometry& g = d.g;
  // Output (n, oh, 0) of channel k0, and image n's input.
  const int64_t out = d.planar ? (n * g.K + blk.k0) * g.OH * g.OW + oh * g.OW : (n * g.OH + oh) * g.OW * g.K + blk.k0;
  const float* res = d.e.residual ? d.e.residual + out : nullptr;
  const float* xn = d.x + n * g.H * g.W * g.C;
  if (g.depthwise()) {
    const float *xk = xn + blk.k0, *wk = d.packed + blk.k0, *bias = d.e.bias ? d.e.bias + blk.k0 : nullptr;
    switch (blk.lanes) {
      case 16: return depthwiseRowOf<16, NW>(g, xk, wk, bias, blk.count, d.e, oh, span, res, d.y + out);
      case 8: return depthwiseRowOf<8, NW>(g, xk, wk, bias, blk.count, d.e, oh, span, res, d.y + out);
      case 4: return depthwiseRowOf<4, NW>(g, xk, wk, bias, blk.count, d.e, oh, span, res, d.y + out);
      case 1: return depthwiseRowOf<1, NW>(g, xk, wk, bias, blk.count, d.e, oh, span, res, d.y + out);
      default: assert(false && "blocksOf makes depthwise blocks of 16, 8, 4 or 1 channels"); return;
    }
  }
  if (d.blockLanes == 2 * kLanes) return blockRowOf<2 * kLanes, NW>(d, xn, oh, span, blk, out, res);
  blockRowOf<kLanes, NW>(d, xn, oh, span, blk, out, res);
}

}  // namespace

std::vector<float> packBlockWeights(const ConvGeometry& g, const float* oihw) {
  // Per block of L = blockLanes output channels: R*S cells of [maxBlockInputs, L], zero
  // where an input channel is outside the lane's group (or the lane past K).
  const int64_t cg = g.C / g.group, kg = g.K / g.group, L = blockLanes(g);
  const int64_t inputs = maxBlockInputs(g), cell = inputs * L, nb = (g.K + L - 1) / L;
  std::vector<float> p(size_t(nb * g.R * g.S * cell), 0.f);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockInputs in = blockInputs(g, b * L, L);
    for (int64_t lane = 0; lane < L && b * L + lane < g.K; ++lane) {
      const int64_t k = b * L + lane, c0 = k / kg * cg - in.first;  // the lane's group, from the block's first input
      for (int64_t rs = 0; rs < g.R * g.S; ++rs)
        for (int64_t c = 0; c < cg; ++c)
          p[size_t((b * g.R * g.S + rs) * cell + (c0 + c) * L + lane)] = oihw[(k * cg + c) * g.R * g.S + rs];
    }
  }
  return p;
}

void convDirect(const ConvGeometry& g, const float* x, const float* packed, const ConvEpilogue& e, float* y, bool planar) {
  assert(!planar || !g.depthwise());
  const std::vector<Block> blocks = blocksOf(g);
  const int64_t lanes = blockLanes(g);
  const DirectConv d{g, x, packed, e, y, planar, lanes, g.depthwise() ? 0 : maxBlockInputs(g) * lanes};
  const std::pair<int64_t, int64_t> columns = interiorColumns(g);  // a pair: the loop body captures it
  // Tasks: output rows, each split into chunks of channel blocks as far as needed for about four tasks a
  // thread, and, depthwise, into chunks whose weights and one pixel's window stay in L1 while the chunk's row is
  // computed pixel by pixel (7 x 7 x 1152, 5x5: every pixel swept all 1152 channels' 115 KB of weights).
  const int64_t nb = int64_t(blocks.size()), rows = g.N * g.OH;
  if (rows == 0 || nb == 0) return;
  const int64_t wanted = 4 * int64_t(omp_get_max_threads());
  int64_t chunks = std::min(nb, ceilDiv(wanted, rows));
  if (g.depthwise()) chunks = std::max(chunks, std::min(nb, ceilDiv(2 * g.R * g.S * g.C * 4, kDepthwiseChunkBytes)));
  const int64_t perChunk = ceilDiv(nb, chunks);
  chunks = ceilDiv(nb, perChunk);
  const int threads = windowWork(g, g.K * (g.C / g.group)) > kParallelWork ? omp_get_max_threads() : 1;
  affineFor(rows * chunks, threads, [&](int64_t task) {
    const int64_t row = task / chunks, c = task % chunks;
    const int64_t n = row / g.OH, oh = row % g.OH, b1 = std::min(nb, (c + 1) * perChunk);
    const auto [rLo, rHi] = insideWindowRows(g, oh);
    const RowSpan span{rLo, rHi, columns.first, columns.second};
    // One dispatch a chunk for depthwise rows (whose tile loop is a function of its own: 1.4x faster on
    // 7x7 images of 960 channels than one a block), one a block for DirectRow (inlined into a loop over
    // blocks, the RGB stem ran 1.1-1.2x slower with the same instructions).
    // A chunk's depthwise blocks of one width go as one run: block by block, each pass over the row read one
    // cache line of every C/16 at a stride the prefetchers did not follow (144 channels, batch 8: 1.7x the time).
    if (g.depthwise())
      withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {
        for (int64_t b = c * perChunk; b < b1;) {
          Block run = blocks[size_t(b)];
          for (++b; b < b1 && blocks[size_t(b)].lanes == run.lanes; ++b) ++run.count;
          directRowOf<W>(d, n, oh, span, run);
        }
      });
    else
      for (int64_t b = c * perChunk; b < b1; ++b)
        withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE { directRowOf<W>(d, n, oh, span, blocks[size_t(b)]); });
  });
}

}  // namespace friction::ukernels
