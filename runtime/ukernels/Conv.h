// Convolution and pooling microkernels for the compiled `cpu` backend, in
// both layouts. NHWC (convert-layout's "nhwc" regions): channels are
// innermost, so a dense convolution is one GEMM: rows are output pixels,
// columns output channels, and the reduction runs over (kh, kw, input
// channel), read through a table of input pixels (sgemmIndirect; a 1x1
// stride-1 convolution's input already is that matrix); grouped and depthwise
// convolutions and pooling are direct loops vectorized over output channels.
// NCHW (the graph as imported, convert-layout off): the GEMM transposed, rows
// are output channels and columns output pixels (W [K, C*R*S] times an NCHW
// im2col); grouped convolutions run the NHWC direct loops over NCHW
// addresses; depthwise convolution and pooling are direct loops vectorized
// along the output row. The direct loops are compiled for each vector width
// (AVX-512, AVX2, SSE) and run the machine's (Multiversion.h).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/ukernels/Multiversion.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::ukernels {

// A convolution's or pooling's window geometry: 2-D, input [N, H, W, C], output [N, OH, OW, K] in NHWC; [N, C,
// H, W] and [N, K, OH, OW] in NCHW. A 3-D window (video models' Conv3d) adds an outer spatial dim D (T window
// taps, OD outputs): [N, D, H, W, C] and [N, C, D, H, W]; 1 for 2-D. Only the dense (group 1) GEMM paths and
// poolNcdhw read it: the direct kernels and the other poolings are 2-D (`planar`).
struct ConvGeometry {
  int64_t N = 1, H = 1, W = 1, C = 1, K = 1;
  int64_t R = 1, S = 1;  // kernel height, width
  int64_t strideH = 1, strideW = 1, dilH = 1, dilW = 1;
  int64_t padTop = 0, padLeft = 0;
  int64_t OH = 1, OW = 1;
  int64_t group = 1;
  int64_t D = 1, T = 1, OD = 1, strideD = 1, dilD = 1, padFront = 0;  // the depth dim of a 3-D window
  bool planar() const { return D == 1 && T == 1 && OD == 1 && padFront == 0; }
  int64_t cells() const { return T * R * S; }  // window cells
  int64_t inputPixels() const { return D * H * W; }
  int64_t outputPixels() const { return OD * OH * OW; }
  // A 1x1 window over every pixel: the input is the GEMM operand itself.
  bool unitWindow() const {
    return cells() == 1 && strideH == 1 && strideW == 1 && strideD == 1 && padTop == 0 && padLeft == 0 &&
           padFront == 0 && OH == H && OW == W && OD == D;
  }
  bool pointwise() const { return unitWindow() && group == 1; }
  bool depthwise() const { return group == C && group == K && group > 1; }
};

// OIHW weights [K, C/group, R, S] ([K, C, T, R, S] in 3-D) rearranged once, at compile time: the NHWC
// GEMM's B operand [cells*C, K] (dense), [R*S, C] (depthwise), or for the
// direct kernels per block of 16 (or 32) output channels R*S cells of [the
// block's input channels, its width] (grouped in either layout; dense over
// <= 4 channels: ConvDirect.h).
std::vector<float> packConvWeights(const ConvGeometry& g, const float* oihw);
// Whether conv{Nhwc,Nchw} reads packConvWeights' weights (else OIHW as it is).
bool convPacksWeights(const ConvGeometry& g, bool nhwc);

// The activations a convolution applies itself, after its clamp:
// HardSigmoid max(0, min(1, alpha x + beta)), HardSwish x times that;
// Sigmoid 1 / (1 + e^-x), Silu x times that; SiluRoundedGate x times that rounded by the epilogue's
// rounding (a half model's SiLU: its Sigmoid's result is rounded before the Mul); Gelu x/2 (1 + erf(x / sqrt 2)).
enum class Activation { None, HardSigmoid, HardSwish, Sigmoid, Silu, SiluRoundedGate, Gelu };

inline const char* activationName(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::HardSigmoid: return "hardsigmoid";
    case Activation::HardSwish: return "hardswish";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Silu: return "silu";
    case Activation::SiluRoundedGate: return "silu (gate rounded)";
    case Activation::Gelu: return "gelu";
  }
  return "?";
}

// What a convolution applies to each output before storing it, in order:
// + bias[k], + residual (same layout as y), clamp to [lo, hi] (Relu, Clip),
// rounded to half precision (`rounding`), then the activation and, with a
// rounding, rounded again. Null pointers, infinite bounds and None are skipped.
struct ConvEpilogue {
  const float* bias = nullptr;
  const float* residual = nullptr;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  Activation activation = Activation::None;
  float alpha = 0.f, beta = 0.f;  // the activation's
  Rounding rounding = Rounding::None;
};

// v rounded to the nearest f16 or bf16 value (ties to even, NaN kept), as Pack::round rounds a lane.
inline float roundedTo(Rounding r, float v) {
  if (r == Rounding::None || v != v) return v;
  if (r == Rounding::F16 && std::abs(v) >= 65520.f) return std::copysign(std::numeric_limits<float>::infinity(), v);
  if (r == Rounding::F16 && std::abs(v) < 0x1p-14f) return (v + 0.75f) - 0.75f;
  const uint32_t low = r == Rounding::BF16 ? 0xffffu : 0x1fffu, shift = r == Rounding::BF16 ? 16 : 13;
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = (u + (low >> 1) + ((u >> shift) & 1u)) & ~low;
  std::memcpy(&v, &u, 4);
  return v;
}

// e's rounding, activation and rounding of one value, as the kernels compute them lane by lane.
inline float activate(const ConvEpilogue& e, float v) {
  v = roundedTo(e.rounding, v);
  switch (e.activation) {
    case Activation::None: return v;
    case Activation::HardSigmoid: v = std::min(std::max(e.alpha * v + e.beta, 0.f), 1.f); break;
    case Activation::HardSwish: v = v * std::min(std::max(e.alpha * v + e.beta, 0.f), 1.f); break;
    case Activation::Sigmoid: v = 1.f / (1.f + std::exp(-v)); break;
    case Activation::Silu: v = v / (1.f + std::exp(-v)); break;
    case Activation::SiluRoundedGate: v = v * roundedTo(e.rounding, 1.f / (1.f + std::exp(-v))); break;
    case Activation::Gelu: v = 0.5f * v * std::erfc(-v * 0.70710678118654752f); break;
  }
  return roundedTo(e.rounding, v);
}

// e as the SGEMM's epilogue (a conv GEMM's, or a MatMul's): the biases, residual and clamp in its register
// tiles, the activation per finished block while it is in cache (fn, with ctx = &e: e must outlive the call).
// The channels are C's columns (NHWC: rows are pixels) or its rows (NCHW).
GemmEpilogue gemmEpilogue(const ConvEpilogue& e, bool channelsPerColumn);

// The outputs [lo, hi) of one spatial dim whose input position o * stride +
// shift lies inside [0, extent) (shift = window offset * dilation - pad):
// what a window cell contributes to, without padding.
std::pair<int64_t, int64_t> insideOutputs(int64_t shift, int64_t stride, int64_t extent, int64_t outputs);

// How conv{Nhwc,Nchw} computes g: "direct", "sgemm" (1x1), "indirect sgemm" (NHWC) or "im2col + sgemm" (NCHW).
const char* convMethod(const ConvGeometry& g, bool nhwc);

// The table convNhwc reads a dense convolution's input through (a window
// other than 1x1): for each output pixel, for each window cell, the offset in
// floats of the input pixel under it, -1 in the padding. Empty when convNhwc
// reads none (direct, 1x1). It depends on g alone: a compiled conv builds it
// once.
std::vector<int64_t> convInputTable(const ConvGeometry& g);

// y = epilogue(conv(x, w)), NHWC in and out, w from packConvWeights; any
// group count. inputTable is convInputTable(g), built on every call when null.
void convNhwc(const ConvGeometry& g, const float* x, const float* packedW, const ConvEpilogue& epilogue, float* y,
              const int64_t* inputTable = nullptr);
// y = epilogue(conv(x, w)), NCHW in and out, w from packConvWeights when
// convPacksWeights(g, false), else OIHW; any group count. The bias and the
// clamp are per output channel, as in NHWC.
void convNchw(const ConvGeometry& g, const float* x, const float* w, const ConvEpilogue& epilogue, float* y);

enum class PoolKind { Max, Average, AverageCountPad };
// Max/average pooling of NHWC x into NHWC y (K == C); padding cells are skipped
// (Average divides by the cells inside the input, AverageCountPad by R*S).
void poolNhwc(const ConvGeometry& g, PoolKind kind, const float* x, float* y);
// y[n, c] = mean over H, W of x[n, :, :, c].
void globalAveragePoolNhwc(int64_t N, int64_t HW, int64_t C, const float* x, float* y);
// The same pooling over NCHW x into NCHW y.
void poolNchw(const ConvGeometry& g, PoolKind kind, const float* x, float* y);
// The same pooling of a 3-D window over NCDHW x into NCDHW y: separably, each input depth plane pooled over
// its height and width, then over the depth window.
void poolNcdhw(const ConvGeometry& g, PoolKind kind, const float* x, float* y);
// y[n, c] = mean over H, W of x[n, c, :, :].
void globalAveragePoolNchw(int64_t N, int64_t C, int64_t HW, const float* x, float* y);

}  // namespace friction::ukernels
