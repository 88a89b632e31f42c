#include "runtime/ukernels/Conv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

namespace friction::ukernels {
namespace {

// Adds the bias to each finished block of the GEMM, while it is in cache.
struct BiasEpilogue {
  const float* bias;
  static void apply(void* ctx, float* C, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
    const float* __restrict b = static_cast<BiasEpilogue*>(ctx)->bias + j0;
    for (int64_t i = 0; i < rows; ++i) {
      float* __restrict c = C + (i0 + i) * ldc + j0;
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) c[j] += b[j];
    }
  }
};

// One row of the im2col matrix: the (kh, kw, c) patch of output pixel (n, oh, ow), zeros outside the input.
void gatherPatch(const Conv2d& g, const float* x, int64_t n, int64_t oh, int64_t ow, float* row) {
  for (int64_t r = 0; r < g.R; ++r) {
    int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
    for (int64_t s = 0; s < g.S; ++s, row += g.C) {
      int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
      if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W)
        std::memset(row, 0, size_t(g.C) * sizeof(float));
      else
        std::memcpy(row, x + ((n * g.H + ih) * g.W + iw) * g.C, size_t(g.C) * sizeof(float));
    }
  }
}

// Runs `cell(out, in, r, s)` for every in-bounds window cell of every output
// pixel (NHWC rows of C channels), pixels spread over threads; `start(out)`
// initializes a pixel, `finish(out, cells)` completes it.
template <typename Start, typename Cell, typename Finish>
void forEachWindow(const Conv2d& g, const float* x, float* y, int64_t C, Start start, Cell cell, Finish finish) {
#pragma omp parallel for collapse(2) schedule(static)
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

void depthwise(const Conv2d& g, const float* x, const float* w, const float* bias, float* y) {
  const int64_t C = g.C;
  forEachWindow(
      g, x, y, C, [&](float* out) { for (int64_t c = 0; c < C; ++c) out[c] = bias ? bias[c] : 0.f; },
      [&](float* out, const float* in, int64_t r, int64_t s) {
        const float* wk = w + (r * g.S + s) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) out[c] += in[c] * wk[c];
      },
      [](float*, int64_t) {});
}

}  // namespace

std::vector<float> packConvWeights(const Conv2d& g, const float* oihw) {
  if (g.depthwise()) {
    std::vector<float> p(size_t(g.R * g.S * g.C));
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t rs = 0; rs < g.R * g.S; ++rs) p[size_t(rs * g.C + c)] = oihw[c * g.R * g.S + rs];
    return p;
  }
  std::vector<float> p(size_t(g.R * g.S * g.C * g.K));
  for (int64_t rs = 0; rs < g.R * g.S; ++rs)
    for (int64_t c = 0; c < g.C; ++c) {
      float* dst = p.data() + (rs * g.C + c) * g.K;
      for (int64_t k = 0; k < g.K; ++k) dst[k] = oihw[(k * g.C + c) * g.R * g.S + rs];
    }
  return p;
}

void convNhwc(const Conv2d& g, const float* x, const float* packedW, const float* bias, float* y) {
  if (g.depthwise()) return depthwise(g, x, packedW, bias, y);
  BiasEpilogue be{bias};
  GemmEpilogue ep{&BiasEpilogue::apply, &be};
  const GemmEpilogue* epilogue = bias ? &ep : nullptr;
  int64_t rows = g.N * g.OH * g.OW, depth = g.R * g.S * g.C;
  if (g.pointwise()) {
    sgemm(false, false, rows, g.K, depth, 1.f, x, g.C, packedW, g.K, 0.f, y, g.K, epilogue);
    return;
  }
  // im2col in bands of output rows, so the gathered matrix stays bounded (and in cache for small layers).
  const int64_t band = std::max<int64_t>(1, std::min<int64_t>(rows, (int64_t(1) << 22) / std::max<int64_t>(depth, 1)));
  std::unique_ptr<float[]> cols(new float[size_t(band * depth)]);
  for (int64_t r0 = 0; r0 < rows; r0 += band) {
    int64_t nr = std::min(band, rows - r0);
#pragma omp parallel for schedule(static) if (nr * depth > (1 << 16))
    for (int64_t i = 0; i < nr; ++i) {
      int64_t p = r0 + i, n = p / (g.OH * g.OW), oh = p / g.OW % g.OH, ow = p % g.OW;
      gatherPatch(g, x, n, oh, ow, cols.get() + i * depth);
    }
    sgemm(false, false, nr, g.K, depth, 1.f, cols.get(), depth, packedW, g.K, 0.f, y + r0 * g.K, g.K, epilogue);
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

}  // namespace friction::ukernels
