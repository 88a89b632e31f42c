// The direct convolution kernels (ConvDirect.cpp), shared by Conv.cpp's
// entry points: grouped, depthwise and narrow dense convolutions without an
// im2col, accumulated in vector registers of the machine's width.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/ukernels/Conv.h"
#include "runtime/ukernels/Multiversion.h"

namespace friction::ukernels {

// A finished Pack of outputs through an epilogue's rounding, activation and rounding (Conv.h's activate), in
// registers.
template <class P>
FRICTION_INLINE void activatePack(P& v, Activation activation, float alpha, float beta, Rounding rounding) {
  v.round(rounding);
  switch (activation) {
    case Activation::None: return;
    case Activation::HardSigmoid:
    case Activation::HardSwish: v.hardSigmoid(alpha, beta, activation == Activation::HardSwish); break;
    case Activation::Sigmoid:
    case Activation::Silu: v.sigmoid(activation == Activation::Silu); break;
    case Activation::SiluRoundedGate: v.sigmoid(true, rounding); break;
    case Activation::Gelu: v.gelu(); break;
  }
  v.round(rounding);
}

// Multiply-adds (or compares) of a windowed op over C channels, and the
// amount below which waking a second thread costs more than it saves.
inline int64_t windowWork(const ConvGeometry& g, int64_t C) { return g.N * g.OH * g.OW * C * g.R * g.S; }
constexpr int64_t kParallelWork = int64_t(1) << 15;

// The window rows [rLo, rHi) of output row oh that lie inside the input.
inline std::pair<int64_t, int64_t> insideWindowRows(const ConvGeometry& g, int64_t oh) {
  return insideOutputs(oh * g.strideH - g.padTop, g.dilH, g.H, g.R);
}
// The output columns [lo, hi) whose every window cell lies inside the input
// row: inside for the first cell and for the last.
inline std::pair<int64_t, int64_t> interiorColumns(const ConvGeometry& g) {
  const int64_t lo = insideOutputs(-g.padLeft, g.strideW, g.W, g.OW).first;
  return {lo, std::max(lo, insideOutputs((g.S - 1) * g.dilW - g.padLeft, g.strideW, g.W, g.OW).second)};
}

// An output row's window rows [rLo, rHi) inside the input, and its columns [owA, owB) whose every window cell
// lies inside the input row: computed once per row, not per block of channels (on 7x7 images with hundreds
// of channels, the divisions cost as much as the block's row).
struct RowSpan {
  int64_t rLo, rHi, owA, owB;
};

// p advanced by `step` floats, opaque to the optimizer: a walk along the row stays one pointer and one add per
// pixel, where GCC otherwise keeps one offset per (pixel, cell) and, out of registers, reloads them from the stack.
FRICTION_INLINE const float* advance(const float* p, int64_t step) {
  p += step;
#if defined(__GNUC__)
  asm("" : "+r"(p));
#endif
  return p;
}

// v, held in a vector register: GCC otherwise folds its load into each multiply-add that uses it and loads it
// again for every use (a depthwise tile's input pixel, used by up to 5 output pixels, cost up to 5 loads).
template <class V>
FRICTION_INLINE V inRegister(V v) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  if constexpr (sizeof(V) >= 16) asm("" : "+v"(v));  // a one-float vector is no SSE operand
#endif
  return v;
}

// The direct kernels' weights for a grouped or dense g: per block of 16 output
// channels (dense on AVX-512 where K is a multiple of 32: of 32), R*S cells of
// [the block's input channels, the block's width].
std::vector<float> packBlockWeights(const ConvGeometry& g, const float* oihw);

// y = epilogue(conv(x, w)) computed direct, w from packConvWeights; NHWC in
// and out, or NCHW when `planar` (grouped, not depthwise, only: NCHW
// depthwise has its own kernel, vectorized along the row).
void convDirect(const ConvGeometry& g, const float* x, const float* packed, const ConvEpilogue& e, float* y, bool planar);

}  // namespace friction::ukernels
