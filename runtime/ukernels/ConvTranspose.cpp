#include "runtime/ukernels/ConvTranspose.h"

#include <omp.h>

#include "runtime/ukernels/Buffers.h"

namespace friction::ukernels {
namespace {

// The input positions [lo, hi) along an axis whose output position i * stride - pad + tap lies inside [0, out).
std::pair<int64_t, int64_t> insideInputs(int64_t in, int64_t stride, int64_t pad, int64_t tap, int64_t out) {
  const int64_t shift = tap - pad;  // output = i * stride + shift
  const int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  const int64_t hi = out - shift <= 0 ? 0 : std::min(in, (out - shift + stride - 1) / stride);
  return {lo, std::max(lo, hi)};
}

}  // namespace

void convTransposeNchw(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y) {
  const int64_t cg = g.C / g.group, kg = g.K / g.group, taps = g.R * g.S, rows = kg * taps;
  const int64_t plane = g.H * g.W, outPlane = g.OH * g.OW;
  float* cols = threadScratch(ScratchSlot::ConvRows, size_t(rows * plane));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < g.group; ++gi) {
      // cols[(k, r, s), pixel] = sum over the group's input channels c of w[c, k, r, s] * x[c, pixel].
      sgemm(true, false, rows, plane, cg, 1.f, w + gi * cg * rows, rows, x + (n * g.C + gi * cg) * plane, plane, 0.f,
            cols, plane);
      // Each output channel's plane, a thread's own: the bias, then every tap's shifted (strided) input plane.
#pragma omp parallel for schedule(static) if (rows * plane > (int64_t(1) << 15))
      for (int64_t k = 0; k < kg; ++k) {
        const int64_t channel = gi * kg + k;
        float* out = y + (n * g.K + channel) * outPlane;
        std::fill(out, out + outPlane, bias ? bias[channel] : 0.f);
        for (int64_t r = 0; r < g.R; ++r) {
          const auto [h0, h1] = insideInputs(g.H, g.strideH, g.padTop, r * g.dilH, g.OH);
          for (int64_t s = 0; s < g.S; ++s) {
            const auto [w0, w1] = insideInputs(g.W, g.strideW, g.padLeft, s * g.dilW, g.OW);
            const float* tap = cols + ((k * g.R + r) * g.S + s) * plane;
            for (int64_t h = h0; h < h1; ++h) {
              float* row = out + (h * g.strideH - g.padTop + r * g.dilH) * g.OW - g.padLeft + s * g.dilW;
              const float* in = tap + h * g.W;
              if (g.strideW == 1) {
#pragma omp simd
                for (int64_t i = w0; i < w1; ++i) row[i] += in[i];
              } else {
                for (int64_t i = w0; i < w1; ++i) row[i * g.strideW] += in[i];
              }
            }
          }
        }
      }
    }
}

}  // namespace friction::ukernels
