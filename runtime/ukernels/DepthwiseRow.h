// The depthwise NHWC row kernel of convDirect (ConvDirect.cpp, its one includer): one output row of
// consecutive blocks of channels, pixel by pixel, its inner loop reusing each loaded input across the window.
// Written over the native width NW like the rest of ConvDirect.cpp and forced inline into each ISA's copy.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/ukernels/ConvDirect.h"
#include "runtime/ukernels/Multiversion.h"

namespace friction::ukernels {

// What a depthwise row's tiles read, by value: the tile loop works on its own copy, so no stride, bound or
// constant in it is reached through a pointer (through the closures of a first version, the loop spent as
// long chasing them as multiplying; written as DirectRow's methods, its strides and accumulators spilled).
template <class P>
struct DepthwiseRowArgs {
  const float* x0;  // the first inside window row, at input column -padLeft: pixel ow's window at x0 + ow * pixelStep
  const float* w0;  // that window row's weights
  const float* bias;  // at the block's first channel, or null
  const float* res;  // residual at output (n, oh, 0) of the block's first channel, or null
  float* y;
  int64_t blocks;  // consecutive blocks of P's width, computed together pixel by pixel
  int64_t windowRows, S, C, K, rowStep, cellStep, pixelStep, inW, strideW, dilW, padLeft;
  P lo, hi;
  Activation activation;
  float alpha, beta;
  Rounding rounding;
};

// Bias already in v: the residual, the clamp, the rounding and the activation, then the store of output pixel ow's
// channels [k, k + P's width) past the first block's.
template <class P>
FRICTION_INLINE void depthwiseFinish(const DepthwiseRowArgs<P>& a, P v, int64_t ow, int64_t k) {
  if (a.res) v.add(P::load(a.res + ow * a.K + k));
  v.clamp(a.lo, a.hi);
  activatePack(v, a.activation, a.alpha, a.beta, a.rounding);
  v.store(a.y + ow * a.K + k);
}

// A depthwise tile's accumulators: output pixels [ow, ow + T) of the G blocks of P's width from channel k
// past the first block's, as T x G*N vectors of `lanes` floats. G > 1 where a tile is one or two pixels
// (small images, the remainder of a row): one block's window products are one chain of dependent
// multiply-adds, G blocks are G chains to overlap.
template <class P, int T, int G>
struct DepthwiseAccumulators {
  using V = typename P::V;
  static constexpr int kPerBlock = int(sizeof(P) / sizeof(V)), N = G * kPerBlock, lanes = P::kWidth / kPerBlock;
  V acc[T][N];

  FRICTION_INLINE static V load(const float* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  FRICTION_INLINE void startAt(const DepthwiseRowArgs<P>& a, int64_t k) {
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) {
      const V bias = a.bias ? load(a.bias + k + i * lanes) : V{};
#pragma GCC unroll 8
      for (int p = 0; p < T; ++p) acc[p][i] = bias;
    }
  }
  FRICTION_INLINE void finish(const DepthwiseRowArgs<P>& a, int64_t ow, int64_t k) const {
#pragma GCC unroll 8
    for (int p = 0; p < T; ++p)
#pragma GCC unroll 8
      for (int b = 0; b < G; ++b) {
        P v;
#pragma GCC unroll 8
        for (int i = 0; i < kPerBlock; ++i) v.v[i] = acc[p][b * kPerBlock + i];
        depthwiseFinish(a, v, ow + p, k + b * P::kWidth);
      }
  }
};

// Output pixels [ow, ow + T) of the G blocks from channel k. KS: the window width when fixed at compile time
// (0: a.S); Stride: the horizontal stride when fixed and the window undilated (0: any). With both fixed, each
// input pixel of a window row is loaded once and multiplied into every output pixel of the tile whose window
// holds it (3x3, stride 1: 6 loads for 12 products), and Bounded tiles, whose windows may reach past the input
// row, skip the columns outside it; other tiles lie inside.
template <class P, int T, int G, int KS, int Stride, bool Bounded = false>
FRICTION_INLINE void depthwiseTile(const DepthwiseRowArgs<P>& a, int64_t ow, int64_t k) {
  static_assert(!Bounded || (KS > 0 && Stride > 0), "only the input-reuse loop checks columns");
  using A = DepthwiseAccumulators<P, T, G>;
  using V = typename A::V;
  constexpr int N = A::N, lanes = A::lanes;
  A t;
  t.startAt(a, k);
  const float *x = a.x0 + ow * a.pixelStep + k, *w = a.w0 + k;
  for (int64_t r = 0; r < a.windowRows; ++r, x += a.rowStep, w += a.S * a.C) {
    if constexpr (KS > 0 && Stride > 0) {
      // The window row's weights in registers where they fit beside the accumulators and one pixel's inputs
      // (32 vector registers with AVX-512, else 16): each is multiplied into every pixel of the tile, and left
      // to the compiler each product reloaded its weight from L1, so the loads, not the multiply-adds, set the
      // pace (5x5 windows on 7x7-28x28 images took 1.15-1.35x the time).
      constexpr bool kWeightsHeld = T * N + (KS + 1) * N <= (sizeof(V) >= 64 ? 32 : 16);
      [[maybe_unused]] V wv[KS][N];
      if constexpr (kWeightsHeld)
#pragma GCC unroll 8
        for (int s = 0; s < KS; ++s)
#pragma GCC unroll 8
          for (int i = 0; i < N; ++i) wv[s][i] = A::load(w + s * a.C + i * lanes);
      auto weight = [&](int s, int i) FRICTION_LAMBDA_INLINE {
        if constexpr (kWeightsHeld)
          return wv[s][i];
        else
          return A::load(w + s * a.C + i * lanes);
      };
      const float* xj = x;
      const int64_t iw = ow * Stride - a.padLeft;  // input column j is iw + j
#pragma GCC unroll 32
      for (int j = 0; j < (T - 1) * Stride + KS; ++j, xj = advance(xj, a.C)) {
        if (Bounded && uint64_t(iw + j) >= uint64_t(a.inW)) continue;
        V xv[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) xv[i] = inRegister(A::load(xj + i * lanes));
#pragma GCC unroll 8
        for (int s = 0; s < KS; ++s)  // input pixel j is cell s of output pixel (j - s) / Stride
          if (j >= s && (j - s) % Stride == 0 && (j - s) / Stride < T)
#pragma GCC unroll 8
            for (int i = 0; i < N; ++i) t.acc[(j - s) / Stride][i] += xv[i] * weight(s, i);
      }
    } else {
      for (int64_t s = 0; s < (KS ? KS : a.S); ++s) {
        V wv[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) wv[i] = A::load(w + s * a.C + i * lanes);
#pragma GCC unroll 8
        for (int p = 0; p < T; ++p)
#pragma GCC unroll 8
          for (int i = 0; i < N; ++i) t.acc[p][i] += A::load(x + s * a.cellStep + p * a.pixelStep + i * lanes) * wv[i];
      }
    }
  }
  t.finish(a, ow, k);
}

// Blocks a tile of T pixels takes at once: enough for about four accumulator vectors (four independent chains).
template <class P, int T>
constexpr int depthwiseGroup() {
  return std::max(1, 4 / (T * int(sizeof(P) / sizeof(typename P::V))));
}

// Calls tile(k) for every block's channel offset k, G blocks a call while G fit, then one a call.
template <class P, int G, class Tile>
FRICTION_INLINE void forBlockGroups(const DepthwiseRowArgs<P>& a, const Tile& tile) {
  const int64_t end = a.blocks * P::kWidth, groupsEnd = a.blocks / G * G * P::kWidth;
  int64_t k = 0;
  for (; k < groupsEnd; k += G * P::kWidth) tile.template operator()<G>(k);
  if constexpr (G > 1)
    for (; k < end; k += P::kWidth) tile.template operator()<1>(k);
}

// Pixels [ow, ow + T) of every block.
template <class P, int T, int KS, int Stride, bool Bounded = false>
FRICTION_INLINE void depthwiseTileAt(const DepthwiseRowArgs<P>& a, int64_t ow) {
  forBlockGroups<P, depthwiseGroup<P, T>()>(a, [&]<int G>(int64_t k) FRICTION_LAMBDA_INLINE {
    depthwiseTile<P, T, G, KS, Stride, Bounded>(a, ow, k);
  });
}

// Interior pixels from ow in tiles of T while a whole tile fits before `end`; returns the first pixel left.
template <class P, int T, int KS, int Stride>
FRICTION_INLINE int64_t depthwiseTiles(const DepthwiseRowArgs<P> a, int64_t ow, int64_t end) {
  for (; ow + T <= end; ow += T) depthwiseTileAt<P, T, KS, Stride>(a, ow);
  return ow;
}

// Pixels [ow, end) in tiles of T, T/2, ... 1, Bounded where they leave the interior [owA, owB): with the
// window's width and stride fixed, the row's edges too reuse each loaded input (7x7 images, 5x5 windows: 4 of
// a row's 7 pixels are border pixels, which one by one loaded every input once per product).
template <class P, int T, int KS, int Stride>
FRICTION_INLINE void depthwiseEdgeTiles(const DepthwiseRowArgs<P>& a, int64_t ow, int64_t end, RowSpan span) {
  for (; ow + T <= end; ow += T)
    if (ow < span.owA || ow + T > span.owB)
      depthwiseTileAt<P, T, KS, Stride, true>(a, ow);
    else
      depthwiseTileAt<P, T, KS, Stride>(a, ow);
  if constexpr (T > 1) depthwiseEdgeTiles<P, T / 2, KS, Stride>(a, ow, end, span);
}

// A border pixel: the window cells [sLo, sHi) inside the input row.
template <class P>
FRICTION_INLINE void depthwiseBorder(const DepthwiseRowArgs<P>& a, int64_t ow) {
  const auto [sLo, sHi] = insideOutputs(ow * a.strideW - a.padLeft, a.dilW, a.inW, a.S);
  forBlockGroups<P, depthwiseGroup<P, 1>()>(a, [&]<int G>(int64_t k) FRICTION_LAMBDA_INLINE {
    using A = DepthwiseAccumulators<P, 1, G>;
    A t;
    t.startAt(a, k);
    const float *x = a.x0 + ow * a.pixelStep + k, *w = a.w0 + k;
    for (int64_t r = 0; r < a.windowRows; ++r, x += a.rowStep, w += a.S * a.C)
      for (int64_t s = sLo; s < sHi; ++s)
#pragma GCC unroll 8
        for (int i = 0; i < A::N; ++i)
          t.acc[0][i] += A::load(x + s * a.cellStep + i * A::lanes) * A::load(w + s * a.C + i * A::lanes);
    t.finish(a, ow, k);
  });
}

// One output row (n, oh) of `blocks` consecutive depthwise blocks of L channels: x at image n's channel k0,
// w the [R*S, C] weights at k0, bias at k0, res and y at output (n, oh, 0) of channel k0.
template <int L, int NW, int KS>
FRICTION_INLINE void depthwiseRow(const ConvGeometry& g, const float* x, const float* w, const float* bias, int64_t blocks,
                                  const ConvEpilogue& e, int64_t oh, RowSpan span, const float* res, float* y) {
  using P = PackOf<L, NW>;
  constexpr int T = std::max(1, 8 / int(sizeof(P) / sizeof(typename P::V)));  // 8 vector accumulators
  const auto [rLo, rHi, owA, owB] = span;
  const int64_t C = g.C, S = g.S;
  const DepthwiseRowArgs<P> a{x + ((oh * g.strideH - g.padTop + rLo * g.dilH) * g.W - g.padLeft) * C,
                              w + rLo * S * C, bias, res, y, blocks, rHi - rLo, S, C, g.K, g.dilH * g.W * C,
                              g.dilW * C, g.strideW * C, g.W, g.strideW, g.dilW, g.padLeft, P::splat(e.lo),
                              P::splat(e.hi), e.activation, e.alpha, e.beta, e.rounding};
  int64_t ow = 0;
  // The interior in tiles of T pixels (in a function of its own: see callAtWidth), then of T/2 and 1; the
  // border pixels one by one, or in Bounded tiles where the input-reuse loop runs (depthwiseEdgeTiles).
  auto interior = [&]<int Stride>() FRICTION_LAMBDA_INLINE {
    if constexpr (Stride > 0)
      for (; ow < owA && ow + T <= g.OW; ow += T) depthwiseTileAt<P, T, KS, Stride, true>(a, ow);
    else
      for (; ow < owA; ++ow) depthwiseBorder(a, ow);
    callAtWidth<NW>([&]<int>() FRICTION_LAMBDA_INLINE { ow = depthwiseTiles<P, T, KS, Stride>(a, ow, owB); });
    if constexpr (Stride > 0) {
      depthwiseEdgeTiles<P, T, KS, Stride>(a, ow, g.OW, span);
      ow = g.OW;
    } else {
      if constexpr (T >= 4) ow = depthwiseTiles<P, T / 2, KS, Stride>(a, ow, owB);
      ow = depthwiseTiles<P, 1, KS, Stride>(a, ow, owB);
    }
  };
  if constexpr (KS > 0) {
    if (g.dilW == 1 && g.strideW == 1)
      interior.template operator()<1>();
    else if (g.dilW == 1 && g.strideW == 2)
      interior.template operator()<2>();
    else
      interior.template operator()<0>();
  } else {
    interior.template operator()<0>();
  }
  for (; ow < g.OW; ++ow) depthwiseBorder(a, ow);
}

// A depthwise row with the window width fixed at compile time where it is 3 or 5 (nearly every model's), so
// the loop over a window row unrolls.
template <int L, int NW>
FRICTION_INLINE void depthwiseRowOf(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                                    int64_t blocks, const ConvEpilogue& e, int64_t oh, RowSpan span, const float* res,
                                    float* y) {
  if (g.S == 3) return depthwiseRow<L, NW, 3>(g, x, w, bias, blocks, e, oh, span, res, y);
  if (g.S == 5) return depthwiseRow<L, NW, 5>(g, x, w, bias, blocks, e, oh, span, res, y);
  depthwiseRow<L, NW, 0>(g, x, w, bias, blocks, e, oh, span, res, y);
}

}  // namespace friction::ukernels
