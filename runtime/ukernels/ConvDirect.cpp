// The direct convolution kernels (no im2col), in both layouts: see ConvDirect.h.
#include "runtime/ukernels/ConvDirect.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "runtime/ukernels/Multiversion.h"

namespace friction::ukernels {
namespace {

// Direct convolution: one output row (n, oh) and one block of output channels at a time; the
// pixels whose window lies inside the input row in tiles of up to 8 pixels
// (accumulators in vector registers, no bounds checks), the border pixels one
// by one with checks. Outputs start from the bias and leave with the residual
// added and clamped to [lo, hi] (a fused Relu/Clip), so each is written once.
// A block of L channels is a Pack of native vectors (one zmm, two ymm or four
// xmm for 16 channels); the code is written once over the native width NW and
// instantiated per ISA (Multiversion.h). The helpers pass Packs by value; they
// are forced inline into each ISA's copy, so no vector crosses a call between ISAs.
#pragma GCC diagnostic ignored "-Wpsabi"
constexpr int64_t kLanes = 16;

// Depthwise: lane c reads input channel k0 + c; weights [R*S, C]. Blocks are
// exactly one Pack wide (16, then 8, 4, 1 for what is left), so no load in
// the loop is partial.
template <class P>
struct DepthwiseCells {
  using Block = P;
  static constexpr bool kWholeVectors = true;  // every block is exactly one Pack wide
  template <int T>
  FRICTION_INLINE void accumulate(P* acc, const float* x, int64_t pixelStride, const float* w) const {
    const P wv = P::load(w);
#pragma GCC unroll 8
    for (int p = 0; p < T; ++p) acc[p].multiplyAdd(P::load(x + p * pixelStride), wv);
  }
};

// Grouped: the block's 16 output channels read the input channels of their
// groups (`inputs` of them from the block's first); each is broadcast and
// multiplied by a 16-lane weight vector that is zero in the lanes of other
// groups (and past K, so in the last block only the store may be partial).
// Group widths below 16 waste lanes (8: half), which still beats a GEMM per
// group whose 8 columns waste as many and pay an im2col besides. The
// broadcast input need not be channels-last, so NCHW runs the same cells.
template <class P>
struct GroupedCells {
  using Block = P;
  static constexpr bool kWholeVectors = false;  // the last block may be partial
  int64_t inputs;
  int64_t channelStride;  // floats between input channels: 1 (NHWC) or H * W (NCHW)
  template <int T>
  FRICTION_INLINE void accumulate(P* acc, const float* x, int64_t pixelStride, const float* w) const {
    for (int64_t ci = 0; ci < inputs; ++ci) {
      const P wv = P::load(w + ci * kLanes);
#pragma GCC unroll 8
      for (int p = 0; p < T; ++p) acc[p].multiplyAdd(x[p * pixelStride + ci * channelStride], wv);
    }
  }
};

// Planar: NCHW in and out. An accumulator still holds one pixel's block of
// channels; a tile of them is stored transposed, as rows of pixels per channel.
template <class Cells, bool HasResidual, bool Planar>
struct DirectRow {
  using P = typename Cells::Block;
  // Pixels per interior tile: at most 8 vector accumulators, which leaves
  // registers for the weights and the inputs on every ISA (16 ymm on AVX2).
  static constexpr int kTile = std::max(1, 8 / (int(sizeof(P)) / int(sizeof(typename P::V))));
  const Conv2d& g;
  Cells cells;
  const float* x;        // input at image n's first pixel of the block's first input channel
  const float* w;        // the block's weights; window cell (r, s) at w + (r * S + s) * cellStride
  int64_t cellStride;
  int64_t oh, rLo, rHi;  // the window rows [rLo, rHi) lie inside the input
  P bias, lo, hi;
  const float* residual;  // at output (n, oh, 0) of channel k0, or null
  float* y;               // output at (n, oh, 0) of channel k0
  int64_t lanes;          // output channels in this block
  const ConvEpilogue& e;  // its activation (bias, clamp and residual are above)

  FRICTION_INLINE int64_t pixelFloats() const { return Planar ? 1 : g.C; }
  FRICTION_INLINE const float* inputRow(int64_t r) const {
    return x + (oh * g.strideH - g.padTop + r * g.dilH) * g.W * pixelFloats();
  }
  // T finished accumulators of the pixels from ow0: residual, clamp, store.
  template <int T>
  FRICTION_INLINE void store(int64_t ow0, P* acc) const {
    const int64_t stored = Cells::kWholeVectors ? P::kWidth : lanes;
    if constexpr (Planar) {
      float tile[T][P::kWidth];
      for (int p = 0; p < T; ++p) acc[p].store(tile[p]);
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
      for (int p = 0; p < T; ++p) {
        P v = acc[p];
        if constexpr (HasResidual) v.add(P::load(residual + (ow0 + p) * g.K, stored));
        v.clamp(lo, hi);
        if (e.activation != Activation::None) v.hardSigmoid(e.alpha, e.beta, e.activation == Activation::HardSwish);
        v.store(y + (ow0 + p) * g.K, stored);
      }
    }
  }
  // T pixels from ow0, every window cell inside the row.
  template <int T>
  FRICTION_INLINE void interior(int64_t ow0) const {
    P acc[T];
    for (int p = 0; p < T; ++p) acc[p] = bias;
    for (int64_t r = rLo; r < rHi; ++r) {
      const float* xrow = inputRow(r);
      for (int64_t s = 0; s < g.S; ++s)
        cells.template accumulate<T>(acc, xrow + (ow0 * g.strideW - g.padLeft + s * g.dilW) * pixelFloats(),
                                     g.strideW * pixelFloats(), w + (r * g.S + s) * cellStride);
    }
    store<T>(ow0, acc);
  }
  // Interior pixels [ow, owB) in tiles of T, then of T/2, ... 1.
  template <int T>
  FRICTION_INLINE void interiorTiles(int64_t& ow, int64_t owB) const {
    for (; ow + T <= owB; ow += T) interior<T>(ow);
    if constexpr (T > 1) interiorTiles<T / 2>(ow, owB);
  }
  FRICTION_INLINE void border(int64_t ow) const {
    P acc = bias;
    for (int64_t r = rLo; r < rHi; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
        if (iw >= 0 && iw < g.W)
          cells.template accumulate<1>(&acc, inputRow(r) + iw * pixelFloats(), 0, w + (r * g.S + s) * cellStride);
      }
    store<1>(ow, &acc);
  }
  FRICTION_INLINE void run() const {
    // Output columns [owA, owB) read only inside the input row.
    const auto [owA, owB] = interiorColumns(g);
    for (int64_t ow = 0; ow < owA; ++ow) border(ow);
    int64_t ow = owA;
    interiorTiles<kTile>(ow, owB);
    for (; ow < g.OW; ++ow) border(ow);
  }
};


// Output channels [k0, k0 + lanes), computed together.
struct Block {
  int64_t k0, lanes;
};
// Grouped: blocks of 16 (the packed weights' blocks; the last may be partial).
// Depthwise: blocks of 16, then of 8, 4 and 1 for the rest, each one whole
// Pack (72 channels took 3.3x the time of 64 with a partial last block).
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

// DirectRow<Cells, residual or not, Planar>{...}.run(): the residual test is made once per row, not per store.
template <class Cells, bool Planar = false, typename... Args>
FRICTION_INLINE void runRow(const float* residual, Args... args) {
  if (residual)
    DirectRow<Cells, true, Planar>{args...}.run();
  else
    DirectRow<Cells, false, Planar>{args...}.run();
}

// One output row of a depthwise block of L channels.
template <int L, int NW>
FRICTION_INLINE void depthwiseRow(const Conv2d& g, const float* x, const float* packed, const ConvEpilogue& e,
                                  int64_t oh, int64_t rLo, int64_t rHi, Block blk, const float* res, float* y) {
  using P = PackOf<L, NW>;
  const P bias = e.bias ? P::load(e.bias + blk.k0) : P::splat(0.f);
  runRow<DepthwiseCells<P>>(res, g, DepthwiseCells<P>{}, x + blk.k0, packed + blk.k0, g.C, oh, rLo, rHi, bias,
                            P::splat(e.lo), P::splat(e.hi), res, y, blk.lanes, e);
}

// What the rows of one direct convolution share.
struct DirectConv {
  const Conv2d& g;
  const float* x;       // input: NHWC, or NCHW when planar
  const float* packed;  // packConvWeights
  const ConvEpilogue& e;
  float* y;             // output, in the input's layout
  bool planar;          // NCHW (grouped convolutions only)
  int64_t cellStride;   // the grouped weights' (maxBlockInputs * 16)
};

// Output row (n, oh) of block `blk` with NW-float vectors.
template <int NW>
FRICTION_INLINE void directRowOf(const DirectConv& d, int64_t n, int64_t oh, Block blk) {
  const Conv2d& g = d.g;
  const auto [rLo, rHi] = insideWindowRows(g, oh);
  // Output (n, oh, 0) of channel k0, and image n's input.
  const int64_t out = d.planar ? (n * g.K + blk.k0) * g.OH * g.OW + oh * g.OW : (n * g.OH + oh) * g.OW * g.K + blk.k0;
  const float* res = d.e.residual ? d.e.residual + out : nullptr;
  const float* xn = d.x + n * g.H * g.W * g.C;
  switch (g.depthwise() ? blk.lanes : 0) {
    case 16: return depthwiseRow<16, NW>(g, xn, d.packed, d.e, oh, rLo, rHi, blk, res, d.y + out);
    case 8: return depthwiseRow<8, NW>(g, xn, d.packed, d.e, oh, rLo, rHi, blk, res, d.y + out);
    case 4: return depthwiseRow<4, NW>(g, xn, d.packed, d.e, oh, rLo, rHi, blk, res, d.y + out);
    case 1: return depthwiseRow<1, NW>(g, xn, d.packed, d.e, oh, rLo, rHi, blk, res, d.y + out);
    default: break;
  }
  using P = PackOf<kLanes, NW>;
  const BlockInputs in = blockInputs(g, blk.k0);
  const P bias = d.e.bias ? P::load(d.e.bias + blk.k0, blk.lanes) : P::splat(0.f);
  const float* w = d.packed + blk.k0 / kLanes * g.R * g.S * d.cellStride;
  const P lo = P::splat(d.e.lo), hi = P::splat(d.e.hi);
  if (d.planar)
    runRow<GroupedCells<P>, true>(res, g, GroupedCells<P>{in.count, g.H * g.W}, xn + in.first * g.H * g.W, w,
                                  d.cellStride, oh, rLo, rHi, bias, lo, hi, res, d.y + out, blk.lanes, d.e);
  else
    runRow<GroupedCells<P>>(res, g, GroupedCells<P>{in.count, 1}, xn + in.first, w, d.cellStride, oh, rLo, rHi, bias,
                            lo, hi, res, d.y + out, blk.lanes, d.e);
}

}  // namespace

// Grouped and depthwise convolutions run direct, and so do dense ones over at
// most 4 input channels (a network's first conv on an RGB image: im2col there
// makes a GEMM of depth 27-147; direct, in the models' profiles, MobileNetV3's
// 3x3 to 16 channels 0.30 -> 0.11 ms, EfficientNet's to 32 0.37 -> 0.21 ms,
// ResNet's 7x7 to 64 1.9 -> 1.45 ms). Wider dense convolutions keep im2col +
// GEMM: with few output channels they gain 1.1-1.9x in isolation, but nothing
// measurable on DenseNet-121 or ResNet-18.
bool runsDirect(const Conv2d& g) { return g.group > 1 || g.C <= 4; }

std::vector<float> packBlockWeights(const Conv2d& g, const float* oihw) {
  // Per block of 16 output channels: R*S cells of [maxBlockInputs, 16], zero
  // where an input channel is outside the lane's group (or the lane past K).
  const int64_t cg = g.C / g.group, kg = g.K / g.group;
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

void convDirect(const Conv2d& g, const float* x, const float* packed, const ConvEpilogue& e, float* y, bool planar) {
  assert(!planar || !g.depthwise());
  const std::vector<Block> blocks = blocksOf(g);
  const DirectConv d{g, x, packed, e, y, planar, g.depthwise() ? 0 : maxBlockInputs(g) * kLanes};
  const int64_t nb = int64_t(blocks.size());
#pragma omp parallel for collapse(3) schedule(static) if (windowWork(g, g.K * (g.C / g.group)) > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t b = 0; b < nb; ++b) {
        const Block blk = blocks[size_t(b)];
        withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE { directRowOf<W>(d, n, oh, blk); });
      }
}

}  // namespace friction::ukernels
