#include "runtime/ukernels/Conv.h"

#include <omp.h>

#include <algorithm>
#include <vector>
#include <limits>
#include <tuple>

#include "runtime/ukernels/Buffers.h"
#include "runtime/ukernels/ConvDirect.h"
#include "runtime/ukernels/Multiversion.h"
#include "runtime/ukernels/Parallel.h"

// Packs and their exponentials are forced inline into each ISA's copy: no vector crosses a call (ConvDirect.cpp).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace friction::ukernels {
namespace {

// e's HardSigmoid or HardSwish over n outputs, in place.
FRICTION_INLINE void hardSigmoidValues(float* __restrict c, int64_t n, const ConvEpilogue& e) {
  const float alpha = e.alpha, beta = e.beta;
  if (e.activation == Activation::HardSigmoid) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] = std::min(std::max(alpha * c[j] + beta, 0.f), 1.f);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) c[j] *= std::min(std::max(alpha * c[j] + beta, 0.f), 1.f);
  }
}

// The row loop runs inside the per-ISA copy: with a call per 16-float row (MnasNet's 1x1 convs to 16
// channels) the epilogue had 14% of a driver's samples.
FRICTION_MULTIVERSION
void hardSigmoidBlock(float* c, int64_t ldc, int64_t rows, int64_t cols, const ConvEpilogue& e) {
  for (int64_t i = 0; i < rows; ++i) hardSigmoidValues(c + i * ldc, cols, e);
}

// e's Sigmoid, SiLU or GELU (or any activation with a rounding) over a block, in vectors of the machine's width
// (the exponential is written over them).
void packActivationBlock(float* c, int64_t ldc, int64_t rows, int64_t cols, const ConvEpilogue& e) {
  withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {
    using P = Pack<W, 1>;
    for (int64_t i = 0; i < rows; ++i) {
      float* row = c + i * ldc;
      for (int64_t j = 0; j < cols; j += W) {
        const int64_t lanes = std::min<int64_t>(W, cols - j);
        P v = P::load(row + j, lanes);
        activatePack(v, e.activation, e.alpha, e.beta, e.rounding);
        v.store(row + j, lanes);
      }
    }
  });
}

// e's activation over a finished block of outputs (rows x cols at c, ldc apart) while it is in cache: a conv
// GEMM's (the biases, residual and clamp before it were applied in the SGEMM's registers) or an NCHW row.
void activateBlock(float* c, int64_t ldc, int64_t rows, int64_t cols, const ConvEpilogue& e) {
  if (e.rounding != Rounding::None) return packActivationBlock(c, ldc, rows, cols, e);
  switch (e.activation) {
    case Activation::None: return;
    case Activation::HardSigmoid:
    case Activation::HardSwish: return hardSigmoidBlock(c, ldc, rows, cols, e);
    case Activation::Sigmoid:
    case Activation::Silu:
    case Activation::SiluRoundedGate:
    case Activation::Gelu: return packActivationBlock(c, ldc, rows, cols, e);
  }
}

// The output columns of a window column (shift = s * dilW - padLeft) whose input lies inside the row.
void insideColumns(const ConvGeometry& g, int64_t shift, int64_t& lo, int64_t& hi) {
  std::tie(lo, hi) = insideOutputs(shift, g.strideW, g.W, g.OW);
}

// Pixels [p0, p0 + np) of row (c, t, r, s) of image n's NCHW im2col matrix
// [C*T*R*S, OD*OH*OW] (x[n, c, id, ih, iw] under each output pixel, zeros
// outside the input), as runs in pixel order: emit(src, len, stride) takes the
// next len pixels from src[0], src[stride], ..., or zeros where src is null.
// Walked one output row at a time: zeros, the inside run, zeros.
template <class Emit>
FRICTION_INLINE void gatherColumnRow(const ConvGeometry& g, const float* image, int64_t row, int64_t p0, int64_t np,
                                     Emit&& emit) {
  const int64_t c = row / g.cells(), t = row / (g.R * g.S) % g.T, r = row / g.S % g.R, s = row % g.S;
  const float* plane = image + c * g.inputPixels();
  const int64_t shift = s * g.dilW - g.padLeft;
  int64_t lo, hi;
  insideColumns(g, shift, lo, hi);
  // Pixel p = (od, oh, ow0), stepped row by row (divisions per row took as long as the copies).
  int64_t od = p0 / (g.OH * g.OW), oh = p0 / g.OW % g.OH, ow0 = p0 % g.OW;
  for (int64_t p = p0; p < p0 + np;) {
    const int64_t ow1 = std::min(g.OW, ow0 + (p0 + np - p));
    const int64_t id = od * g.strideD - g.padFront + t * g.dilD, ih = oh * g.strideH - g.padTop + r * g.dilH;
    if (id < 0 || id >= g.D || ih < 0 || ih >= g.H) {
      emit(nullptr, ow1 - ow0, 1);
    } else {
      const float* src = plane + (id * g.H + ih) * g.W + shift;  // src[ow * strideW] is the input under (oh, ow)
      const int64_t a = std::clamp(lo, ow0, ow1), b = std::clamp(hi, a, ow1);
      if (a > ow0) emit(nullptr, a - ow0, 1);
      if (b > a) emit(src + a * g.strideW, b - a, g.strideW);
      if (ow1 > b) emit(nullptr, ow1 - b, 1);
    }
    p += ow1 - ow0;
    ow0 = 0;
    if (++oh == g.OH) oh = 0, ++od;
  }
}

// The SGEMM's B panels of an NCHW convolution of one image (GemmPanelSource):
// each im2col row's runs written straight into the nr-wide panels, so the
// gathered matrix exists only a task's block at a time. (Gathered into a row
// on the stack and then dealt to the panels, the copies took a third of
// r3d_18's 3x3x3 convs over 8x28x28.)
struct Im2colPanels {
  const ConvGeometry& g;
  const float* image;
  static void pack(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, float* out) {
    const auto& [g, image] = *static_cast<const Im2colPanels*>(ctx);
    for (int64_t k = 0; k < kc; ++k) {
      float* dst = out + k * nr;  // row k of the panel the next pixel goes to (panel q's at out + (q * kc + k) * nr)
      int64_t col = 0;            // its column there
      gatherColumnRow(g, image, k0 + k, j0, nc, [&](const float* src, int64_t len, int64_t stride) {
        while (len > 0) {
          const int64_t n = std::min(len, nr - col);
          float* to = dst + col;
          if (!src) {
            std::fill(to, to + n, 0.f);
          } else if (stride == 1) {
            std::copy(src, src + n, to);
            src += n;
          } else {
            for (int64_t i = 0; i < n; ++i) to[i] = src[i * stride];
            src += n * stride;
          }
          len -= n, col += n;
          if (col == nr) col = 0, dst += kc * nr;
        }
      });
    }
    if (const int64_t used = nc % nr)  // the last panel's columns past the block
      for (int64_t k = 0; k < kc; ++k) {
        float* rest = out + (nc / nr * kc + k) * nr;
        std::fill(rest + used, rest + nr, 0.f);
      }
  }
};

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

// The activation of the ConvEpilogue at ctx over a finished block of C (GemmEpilogue::fn).
void activateGemmBlock(void* ctx, float* C, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) {
  activateBlock(C + i0 * ldc + j0, ldc, rows, cols, *static_cast<const ConvEpilogue*>(ctx));
}

// `e` for the output elements from `offset` (a band's or an image's GEMM).
ConvEpilogue shifted(const ConvEpilogue& e, int64_t offset) {
  ConvEpilogue s = e;
  if (s.residual) s.residual += offset;
  return s;
}

}  // namespace

GemmEpilogue gemmEpilogue(const ConvEpilogue& e, bool channelsPerColumn) {
  return {.fn = e.activation != Activation::None || e.rounding != Rounding::None ? &activateGemmBlock : nullptr,
          .ctx = const_cast<ConvEpilogue*>(&e),
          .bias = channelsPerColumn ? e.bias : nullptr,
          .rowBias = channelsPerColumn ? nullptr : e.bias,
          .residual = e.residual,
          .lo = e.lo,
          .hi = e.hi};
}

namespace {

// Whether convNhwc computes g direct. Grouped and depthwise convolutions do. So do dense ones over at most 4 input
// channels (a network's first conv on an RGB image: im2col there makes a GEMM of depth 27-147) where that measured
// faster: on AVX-512 (in the models' profiles MobileNetV3's 3x3 to 16 channels 0.30 -> 0.11 ms, EfficientNet's to
// 32 0.37 -> 0.21 ms, ResNet's 7x7 to 64 1.9 -> 1.45 ms), and into one block of 16 output channels. On an AVX2 EPYC
// the direct kernel's 4-pixel tiles lost to im2col + SGEMM from 40 output channels up (7x7 to 64: 2.4 vs 2.0 ms;
// 3x3 to 64: 0.70-0.88 vs 0.48-0.59), tied at 24 and 32, won at 16. Wider dense convolutions run the SGEMM (then
// over an im2col, now indirect): against it with its weights packed once, as a model registers them (a driver
// that left them unregistered repacked them every call and made direct look 1.1-1.9x faster), direct 3x3 convs
// into 32 or 64 channels took 1.13-1.47x the time (DenseNet's from 128 channels at 56x56 to 14x14, ResNet-18's
// 64 -> 64 at 56x56).
bool runsDirect(const ConvGeometry& g) {
  return g.planar() && (g.group > 1 || (g.C <= 4 && (machineFloatLanes() >= 16 || g.K <= 16)));
}

}  // namespace

std::pair<int64_t, int64_t> insideOutputs(int64_t shift, int64_t stride, int64_t extent, int64_t outputs) {
  const int64_t lo = std::min(outputs, shift >= 0 ? 0 : (-shift + stride - 1) / stride);
  return {lo, std::max(lo, std::min(outputs, extent - 1 - shift < 0 ? 0 : (extent - 1 - shift) / stride + 1))};
}

std::vector<float> packConvWeights(const ConvGeometry& g, const float* oihw) {
  if (g.depthwise()) {
    std::vector<float> p(size_t(g.R * g.S * g.C));
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t rs = 0; rs < g.R * g.S; ++rs) p[size_t(rs * g.C + c)] = oihw[c * g.R * g.S + rs];
    return p;
  }
  if (runsDirect(g)) return packBlockWeights(g, oihw);
  const int64_t cells = g.cells();
  std::vector<float> p(size_t(cells * g.C * g.K));  // [cells*C, K]
  for (int64_t rs = 0; rs < cells; ++rs)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t k = 0; k < g.K; ++k) p[size_t((rs * g.C + c) * g.K + k)] = oihw[(k * g.C + c) * cells + rs];
  return p;
}

bool convPacksWeights(const ConvGeometry& g, bool nhwc) { return nhwc || (g.group > 1 && !g.depthwise()); }

const char* convMethod(const ConvGeometry& g, bool nhwc) {
  if (nhwc ? runsDirect(g) : g.group > 1) return "direct";
  return g.unitWindow() ? "sgemm" : nhwc ? "indirect sgemm" : "im2col + sgemm";
}

namespace {

// convInputTable into `table`, its rows split over `threads`.
void fillConvInputTable(const ConvGeometry& g, int64_t* table, int threads) {
  affineFor(g.N * g.OD * g.OH, threads, [&](int64_t ndh) {
    const int64_t n = ndh / (g.OD * g.OH), od = ndh / g.OH % g.OD, oh = ndh % g.OH;
    int64_t* out = table + ndh * g.OW * g.cells();
    for (int64_t ow = 0; ow < g.OW; ++ow)
      for (int64_t t = 0; t < g.T; ++t) {
        const int64_t id = od * g.strideD - g.padFront + t * g.dilD;
        for (int64_t r = 0; r < g.R; ++r) {
          const int64_t ih = oh * g.strideH - g.padTop + r * g.dilH;
          for (int64_t s = 0; s < g.S; ++s) {
            const int64_t iw = ow * g.strideW - g.padLeft + s * g.dilW;
            const bool inside = id >= 0 && id < g.D && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
            *out++ = inside ? (((n * g.D + id) * g.H + ih) * g.W + iw) * g.C : -1;
          }
        }
      }
  });
}

bool readsInputTable(const ConvGeometry& g) { return !runsDirect(g) && !g.unitWindow(); }

}  // namespace

std::vector<int64_t> convInputTable(const ConvGeometry& g) {
  if (!readsInputTable(g)) return {};
  std::vector<int64_t> table(size_t(g.N * g.outputPixels() * g.cells()));
  fillConvInputTable(g, table.data(), 1);
  return table;
}

void convNhwc(const ConvGeometry& g, const float* x, const float* packedW, const ConvEpilogue& e, float* y,
              const int64_t* inputTable) {
  if (runsDirect(g)) return convDirect(g, x, packedW, e, y, /*planar=*/false);
  // One GEMM: rows are output pixels, columns output channels, the reduction over (kh, kw, input channel).
  const int64_t rows = g.N * g.outputPixels(), cells = g.cells();
  const GemmEpilogue ep = gemmEpilogue(e, /*channelsPerColumn=*/true);
  if (g.unitWindow()) return sgemm(false, false, rows, g.K, g.C, 1.f, x, g.C, packedW, g.K, 0.f, y, g.K, &ep);
  // Any other window: A is read through a table of the input pixel under each window cell of each output pixel
  // (its C channels), a row of zeros where the cell lies in the padding. Gathering A instead (im2col, in bands
  // kept in each core's cache) wrote and read R*S times the input on every call. A table built here on every call
  // instead of once (inputTable) took up to 1.07x the time on ResNet's 3x3 convs, 1.3x on a 7x7 window over 16
  // channels (a driver, alternated blocks).
  const int64_t zeroFloats = (g.C + 15) / 16 * 16;
  float* scratch = threadScratch(ScratchSlot::ConvRows, size_t(zeroFloats + (inputTable ? 0 : 2 * rows * cells)));
  std::fill(scratch, scratch + g.C, 0.f);
  if (!inputTable) {
    int64_t* table = reinterpret_cast<int64_t*>(scratch + zeroFloats);
    fillConvInputTable(g, table, rows * cells > (int64_t(1) << 14) ? omp_get_max_threads() : 1);
    inputTable = table;
  }
  const GemmIndirectA a{x, inputTable, scratch, cells, g.C};
  sgemmIndirect(rows, g.K, a, packedW, g.K, y, g.K, &ep);
}

namespace {

// One depthwise NCHW plane (image n, channel c), one output row at a time,
// every output starting from the bias; the residual and the clamp follow per
// row. At stride 1 the pixels whose window lies inside the row accumulate in
// vector registers, every window cell before one store (tiles of 4 vectors,
// then 1, the last one overlapping the one before when the row is not a
// multiple of the width, halving the width down to 4 floats for narrow rows);
// the border pixels are added up one by one. Strided rows, and rows with fewer
// than 4 such pixels, add one shifted input row per window cell.
struct DepthwisePlane {
  const ConvGeometry& g;
  const float* in;  // the input plane
  const float* wc;  // the channel's R*S weights
  float bias;
  float* row;                // the output row
  int64_t top, rLo, rHi;     // its window's first input row, and the window rows [rLo, rHi) inside the input

  FRICTION_INLINE const float* inputRow(int64_t r) const { return in + (top + r * g.dilH) * g.W; }
  FRICTION_INLINE void pixel(int64_t ow) const {
    float acc = bias;
    for (int64_t r = rLo; r < rHi; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t iw = ow - g.padLeft + s * g.dilW;
        if (iw >= 0 && iw < g.W) acc += wc[r * g.S + s] * inputRow(r)[iw];
      }
    row[ow] = acc;
  }
  // T vectors of P::kWidth pixels from ow0 (stride 1, every window cell inside the row).
  template <class P, int T>
  FRICTION_INLINE void tile(int64_t ow0) const {
    P acc[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[t] = P::splat(bias);
    for (int64_t r = rLo; r < rHi; ++r) {
      const float* src = inputRow(r) + ow0 - g.padLeft;
      for (int64_t s = 0; s < g.S; ++s) {
        const float wv = wc[r * g.S + s];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) acc[t].multiplyAdd(wv, P::load(src + s * g.dilW + t * P::kWidth));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[t].store(row + ow0 + t * P::kWidth);
  }
  // Pixels [a, b), all inside, in vectors of W floats (or narrower for a short row).
  template <int W>
  FRICTION_INLINE void interior(int64_t a, int64_t b) const {
    using P = Pack<W, 1>;
    if (b - a < W) {
      if constexpr (W > 4) return interior<W / 2>(a, b);
      for (int64_t ow = a; ow < b; ++ow) pixel(ow);
      return;
    }
    int64_t ow = a;
    for (; ow + 4 * W <= b; ow += 4 * W) tile<P, 4>(ow);
    for (; ow + W <= b; ow += W) tile<P, 1>(ow);
    if (ow < b) tile<P, 1>(b - W);  // recomputes a few pixels of the tile before: the same values
  }
  // Strided rows, and rows too short for a vector tile: one shifted input row per window cell, added into the row.
  // (The strided loop stays scalar: vectorized, it gathers, 2-3x slower on an AVX2 EPYC.)
  FRICTION_INLINE void rowPasses() const {
    std::fill(row, row + g.OW, bias);
    for (int64_t r = rLo; r < rHi; ++r) {
      const float* src = inputRow(r);
      for (int64_t s = 0; s < g.S; ++s) {
        const int64_t shift = s * g.dilW - g.padLeft;
        int64_t lo, hi;
        insideColumns(g, shift, lo, hi);
        const float wv = wc[r * g.S + s];
        if (g.strideW == 1) {
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * src[ow + shift];
        } else {
#pragma GCC unroll 4
          for (int64_t ow = lo; ow < hi; ++ow) row[ow] += wv * src[ow * g.strideW + shift];
        }
      }
    }
  }
};

template <int W>
FRICTION_INLINE void depthwisePlaneOf(const ConvGeometry& g, const float* x, const float* w, const ConvEpilogue& e,
                                      int64_t n, int64_t c, float* y) {
  float* out = y + (n * g.K + c) * g.OH * g.OW;
  const float* res = e.residual ? e.residual + (n * g.K + c) * g.OH * g.OW : nullptr;
  const auto [owA, owB] = interiorColumns(g);  // (used at stride 1)
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const auto [rLo, rHi] = insideWindowRows(g, oh);
    const DepthwisePlane p{g, x + (n * g.C + c) * g.H * g.W, w + c * g.R * g.S, e.bias ? e.bias[c] : 0.f,
                           out + oh * g.OW, oh * g.strideH - g.padTop, rLo, rHi};
    if (g.strideW != 1 || owB - owA < 4) {
      p.rowPasses();
    } else {
      for (int64_t ow = 0; ow < owA; ++ow) p.pixel(ow);
      p.interior<W>(owA, owB);
      for (int64_t ow = owB; ow < g.OW; ++ow) p.pixel(ow);
    }
    epilogueChannelRow(p.row, 0.f, res ? res + oh * g.OW : nullptr, g.OW, e.lo, e.hi);
    activateBlock(p.row, g.OW, 1, g.OW, e);
  }
}

}  // namespace

void convNchw(const ConvGeometry& g, const float* x, const float* w, const ConvEpilogue& e, float* y) {
  if (g.depthwise()) {
#pragma omp parallel for collapse(2) schedule(static) if (windowWork(g, g.C) > kParallelWork)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t c = 0; c < g.C; ++c)
        withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE { depthwisePlaneOf<W>(g, x, w, e, n, c, y); });
    return;
  }
  // Grouped: the NHWC kernel's cells over NCHW addresses (a GEMM per group
  // took half of RegNetX-400MF's time with every pass off).
  if (g.group > 1) return convDirect(g, x, w, e, y, /*planar=*/true);
  const int64_t depth = g.C * g.cells(), pixels = g.outputPixels();
  // Per image: y [K, pixels] = W [K, depth] * im2col [depth, pixels]; a 1x1 window's im2col is the image.
  for (int64_t n = 0; n < g.N; ++n) {
    ConvEpilogue ge = shifted(e, n * g.K * pixels);
    const GemmEpilogue ep = gemmEpilogue(ge, /*channelsPerColumn=*/false);
    float* out = y + n * g.K * pixels;
    if (g.unitWindow()) {
      sgemm(false, false, g.K, pixels, depth, 1.f, w, depth, x + n * g.C * pixels, pixels, 0.f, out, pixels, &ep);
    } else {
      // Implicit im2col: each SGEMM task gathers its own block of the matrix into its packed panels.
      const Im2colPanels panels{g, x + n * g.C * g.inputPixels()};
      sgemmFromPanels(g.K, pixels, depth, w, depth, {&Im2colPanels::pack, &panels}, out, pixels, &ep);
    }
  }
}

namespace {

// One NHWC output pixel's channels pooled over its inside window cells
// (`rows` x `cols` of them from `in`) in registers: P is a block of vectors,
// loaded once per cell and stored once (its first `lanes` floats); an
// average is the sum times `scale`.
template <class P, bool IsMax>
FRICTION_INLINE void poolCells(const float* in, int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride,
                               float scale, int64_t lanes, float* out) {
  P acc = P::splat(IsMax ? -std::numeric_limits<float>::infinity() : 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t s = 0; s < cols; ++s) {
      const P v = P::load(in + r * rowStride + s * colStride, lanes);
      IsMax ? acc.max(v) : acc.add(v);
    }
  if (!IsMax) acc.scale(scale);
  acc.store(out, lanes);
}

// Output row (n, oh) of an NHWC pooling: per pixel, the inside window cells
// are clipped once (no bounds test per cell), and the channels run in blocks
// of four vectors, then single vectors (the last one partial). The kernel
// this replaces (a read-modify-write of the output per cell, baseline SSE)
// took SqueezeNet's first MaxPool 3.1 ms at batch 8 against ORT's 1.2.
template <int W, bool IsMax>
void poolRowNhwc(const ConvGeometry& g, PoolKind kind, const float* x, float* y, int64_t n, int64_t oh) {
  using Block = Pack<W, 4>;
  using Single = Pack<W, 1>;
  const int64_t C = g.C, rowStride = g.dilH * g.W * C, colStride = g.dilW * C;
  const auto [r0, r1] = insideWindowRows(g, oh);
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    const int64_t left = ow * g.strideW - g.padLeft;
    const auto [s0, s1] = insideOutputs(left, g.dilW, g.W, g.S);
    const int64_t cells = (r1 - r0) * (s1 - s0);
    const float scale =
        IsMax ? 1.f : 1.f / float(kind == PoolKind::AverageCountPad ? g.R * g.S : std::max<int64_t>(cells, 1));
    const float* in = x + ((n * g.H + oh * g.strideH - g.padTop + r0 * g.dilH) * g.W + left + s0 * g.dilW) * C;
    float* out = y + ((n * g.OH + oh) * g.OW + ow) * C;
    int64_t c = 0;
    for (; c + Block::kWidth <= C; c += Block::kWidth)
      poolCells<Block, IsMax>(in + c, r1 - r0, s1 - s0, rowStride, colStride, scale, Block::kWidth, out + c);
    for (; c < C; c += W)
      poolCells<Single, IsMax>(in + c, r1 - r0, s1 - s0, rowStride, colStride, scale, std::min<int64_t>(W, C - c),
                               out + c);
  }
}

}  // namespace

void poolNhwc(const ConvGeometry& g, PoolKind kind, const float* x, float* y) {
#pragma omp parallel for collapse(2) schedule(static) if (windowWork(g, g.C) > kParallelWork)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {
        if (kind == PoolKind::Max)
          poolRowNhwc<W, true>(g, kind, x, y, n, oh);
        else
          poolRowNhwc<W, false>(g, kind, x, y, n, oh);
      });
}

void globalAveragePoolNhwc(int64_t N, int64_t HW, int64_t C, const float* x, float* y) {
  // Each image's pixels in chunks of at least 256, summed apart (read once, in order, a pixel's C floats added
  // into a row of C sums) and then added chunk by chunk: the chunks do not depend on the thread count, so
  // neither do the sums. As a pooling window over the image (one output row an image) a batch-1 pool ran on one
  // thread, a pass over the image per block of channels: EfficientNet-B0's squeeze-excite pools took 2.5x
  // ORT's time at batch 1.
  const int64_t chunks = std::clamp<int64_t>(HW / 256, 1, 16), chunkPixels = (HW + chunks - 1) / chunks;
  std::vector<float> sums(size_t(N * chunks * C));
  const int threads = N * HW * C > kParallelWork ? omp_get_max_threads() : 1;
  affineFor(N * chunks, threads, [&](int64_t t) {
    const int64_t n = t / chunks, p0 = t % chunks * chunkPixels, p1 = std::min(HW, p0 + chunkPixels);
    float* sum = sums.data() + t * C;
    withNativeWidth([&]<int W>() FRICTION_LAMBDA_INLINE {  // the simd loop compiled for the machine's ISA
      for (int64_t p = p0; p < p1; ++p) {
        const float* px = x + (n * HW + p) * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) sum[c] += px[c];
      }
    });
  });
  const float scale = 1.f / float(std::max<int64_t>(HW, 1));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      float total = 0.f;
      for (int64_t k = 0; k < chunks; ++k) total += sums[size_t((n * chunks + k) * C + c)];
      y[n * C + c] = total * scale;
    }
}

// One output row at a time, separably: the window's inside input rows are
// folded into one row first (contiguous, vectorized), then each window column
// s is a strided run of that row over the output columns whose input lies
// inside, so no loop tests bounds (a test per cell and per output took
// SqueezeNet's first all-off MaxPool 2.5 ms). A window's inside cells are the
// product of its inside rows and columns, which gives Average its divisor.
template <int Stride>
void poolColumnsNchw(PoolKind kind, const float* src, int64_t stride, int64_t lo, int64_t hi, float* out) {
  const int64_t st = Stride > 0 ? Stride : stride;
  if (kind == PoolKind::Max) {
    for (int64_t ow = lo; ow < hi; ++ow) out[ow] = std::max(out[ow], src[ow * st]);
  } else {
    for (int64_t ow = lo; ow < hi; ++ow) out[ow] += src[ow * st];
  }
}

void poolNchw(const ConvGeometry& g, PoolKind kind, const float* x, float* y) {
  // Per window column s: its shift in the input row and the output columns [lo, hi) whose input is inside.
  struct Column {
    int64_t shift, lo, hi;
  };
  std::vector<Column> columns(size_t(g.S));
  std::vector<float> colsInside(size_t(g.OW), 0.f);
  for (int64_t s = 0; s < g.S; ++s) {
    Column& col = columns[size_t(s)];
    col.shift = s * g.dilW - g.padLeft;
    insideColumns(g, col.shift, col.lo, col.hi);
    for (int64_t ow = col.lo; ow < col.hi; ++ow) colsInside[size_t(ow)] += 1.f;
  }
  const bool isMax = kind == PoolKind::Max;
  const float init = isMax ? -std::numeric_limits<float>::infinity() : 0.f;
  auto columnsOf = g.strideW == 1 ? &poolColumnsNchw<1> : g.strideW == 2 ? &poolColumnsNchw<2> : &poolColumnsNchw<0>;
#pragma omp parallel if (windowWork(g, g.C) > kParallelWork)
  {
    std::vector<float> folded(size_t(g.W));  // the window's inside rows, folded
#pragma omp for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t c = 0; c < g.C; ++c) {
        const float* in = x + (n * g.C + c) * g.H * g.W;
        float* plane = y + (n * g.C + c) * g.OH * g.OW;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          float* out = plane + oh * g.OW;
          float* fold = folded.data();
          std::fill(fold, fold + g.W, init);
          const auto [r0, r1] = insideWindowRows(g, oh);
          for (int64_t r = r0; r < r1; ++r) {
            const float* row = in + (oh * g.strideH - g.padTop + r * g.dilH) * g.W;
            if (isMax) {
#pragma omp simd
              for (int64_t iw = 0; iw < g.W; ++iw) fold[iw] = std::max(fold[iw], row[iw]);
            } else {
#pragma omp simd
              for (int64_t iw = 0; iw < g.W; ++iw) fold[iw] += row[iw];
            }
          }
          std::fill(out, out + g.OW, init);
          for (const Column& col : columns) columnsOf(kind, fold + col.shift, g.strideW, col.lo, col.hi, out);
          if (isMax) continue;
          if (kind == PoolKind::AverageCountPad) {
            for (int64_t ow = 0; ow < g.OW; ++ow) out[ow] /= float(g.R * g.S);
          } else {
            const float rows = float(std::max<int64_t>(r1 - r0, 0));
            for (int64_t ow = 0; ow < g.OW; ++ow) out[ow] /= std::max(rows * colsInside[size_t(ow)], 1.f);
          }
        }
      }
  }
}

void poolNcdhw(const ConvGeometry& g, PoolKind kind, const float* x, float* y) {
  // Every input depth plane pooled over its height and width first: a 2-D pooling of N*C*D planes.
  ConvGeometry planes = g;
  planes.N = g.N * g.C * g.D, planes.C = planes.K = 1;
  planes.D = planes.T = planes.OD = planes.strideD = planes.dilD = 1, planes.padFront = 0;
  const int64_t plane = g.OH * g.OW;
  std::vector<float> pooled(size_t(planes.N * plane));
  poolNchw(planes, kind, x, pooled.data());
  // Then each output plane is the max, or the mean, of the pooled planes its depth window reads inside. A box
  // window's cells inside the input are the product of each dim's, so the mean of the planes' means divides by
  // the same count as the 3-D window's (and count_include_pad's R*S, then T, by T*R*S).
  const bool isMax = kind == PoolKind::Max;
  affineFor(g.N * g.C * g.OD, g.N * g.C * g.OD * plane * g.T > kParallelWork ? omp_get_max_threads() : 1,
            [&](int64_t ncd) {
              const int64_t nc = ncd / g.OD, od = ncd % g.OD, front = od * g.strideD - g.padFront;
              const auto [t0, t1] = insideOutputs(front, g.dilD, g.D, g.T);
              float* out = y + ncd * plane;
              std::fill(out, out + plane, isMax ? -std::numeric_limits<float>::infinity() : 0.f);
              for (int64_t t = t0; t < t1; ++t) {
                const float* in = pooled.data() + (nc * g.D + front + t * g.dilD) * plane;
                for (int64_t i = 0; i < plane; ++i) out[i] = isMax ? std::max(out[i], in[i]) : out[i] + in[i];
              }
              if (isMax) return;
              const float scale = 1.f / float(kind == PoolKind::AverageCountPad ? g.T : std::max<int64_t>(t1 - t0, 1));
              for (int64_t i = 0; i < plane; ++i) out[i] *= scale;
            });
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
