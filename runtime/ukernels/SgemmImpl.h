// The blocked SGEMM, written once over a vector type V and a register tile of
// MR rows x NV vectors. Each instruction-set TU (SgemmAvx512.cpp, ...) includes
// this header and instantiates it under its own compiler flags; everything
// here has internal linkage so the copies never meet at link time.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "runtime/ukernels/Sgemm.h"

namespace friction::ukernels {
namespace {

template <typename V>
inline V loadu(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V>
inline void storeu(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

template <typename V, int MR, int NV>
struct Tile {
  static constexpr int W = int(sizeof(V) / sizeof(float));
  static constexpr int NR = W * NV;

  // acc = sum_k ap[k][0..MR) (x) bp[k][0..NR); then C = alpha*acc + (first ? beta*C : C).
  static void micro(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* C, int64_t ldc,
                    int64_t rows, int64_t cols, float alpha, float beta, bool first) {
    V acc[MR][NV];
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] = V{};
    for (int64_t k = 0; k < kc; ++k) {
      V b[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) b[j] = loadu<V>(bp + k * NR + j * W);
#pragma GCC unroll 32
      for (int r = 0; r < MR; ++r) {
        float a = ap[k * MR + r];
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[r][j] += a * b[j];
      }
    }
    if (rows == MR && cols == NR) {
#pragma GCC unroll 32
      for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) {
          float* c = C + r * ldc + j * W;
          V v = alpha * acc[r][j];
          if (!first)
            v += loadu<V>(c);
          else if (beta != 0.f)
            v += beta * loadu<V>(c);
          storeu(c, v);
        }
      return;
    }
    alignas(64) float tmp[MR][NR];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NV; ++j) storeu(&tmp[r][j * W], acc[r][j]);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < cols; ++j) {
        float& c = C[r * ldc + j];
        float v = alpha * tmp[r][j];
        c = !first ? c + v : beta != 0.f ? v + beta * c : v;
      }
  }
};

// Cache blocks: an MC x KC block of A (L2) against KC x NR micro-panels of B
// (L1); NC bounds the packed B block.
template <int MR, int NR>
struct Blocks {
  static constexpr int64_t KC = 384, MC = MR * 16, NC = NR * 16;
};

template <typename V, int MR, int NV>
void sgemmBlocked(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                  const GemmEpilogue* epilogue, int threads) {
  using T = Tile<V, MR, NV>;
  constexpr int64_t NR = T::NR, KC = Blocks<MR, NR>::KC, MC = Blocks<MR, NR>::MC, NC = Blocks<MR, NR>::NC;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    // No products: C = beta * C, then the epilogue.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
    if (epilogue && epilogue->fn) epilogue->fn(epilogue->ctx, C, ldc, 0, 0, M, N);
    return;
  }
  int64_t mBlocks = (M + MC - 1) / MC, nBlocks = (N + NC - 1) / NC;
  int64_t tasks = mBlocks * nBlocks;
  // Threads only pay off past ~1 MFLOP.
  int nt = threads > 0 ? threads : omp_get_max_threads();
  if (M * N * K < (int64_t(1) << 19) || tasks < 2) nt = 1;
#pragma omp parallel for schedule(dynamic) num_threads(nt) if (nt > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    // Column blocks outermost, so threads working at once share B's panel in the shared cache.
    int64_t ib = t % mBlocks, jb = t / mBlocks;
    int64_t i0 = ib * MC, mc = std::min(MC, M - i0), j0 = jb * NC, nc = std::min(NC, N - j0);
    thread_local std::unique_ptr<float[]> apBuf, bpBuf;
    if (!apBuf) {
      apBuf.reset(new (std::align_val_t(64)) float[size_t(MC * KC)]);
      bpBuf.reset(new (std::align_val_t(64)) float[size_t(KC * NC)]);
    }
    float* ap = apBuf.get();
    float* bp = bpBuf.get();
    int64_t mPanels = (mc + MR - 1) / MR, nPanels = (nc + NR - 1) / NR;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
      int64_t kc = std::min(KC, K - k0);
      // Pack op(B) columns into NR-wide panels and op(A) rows into MR-tall panels, zero-padded.
      for (int64_t q = 0; q < nPanels; ++q) {
        float* dst = bp + q * kc * NR;
        int64_t cols = std::min(NR, nc - q * NR);
        for (int64_t k = 0; k < kc; ++k) {
          float* d = dst + k * NR;
          if (!transB) {
            std::memcpy(d, B + (k0 + k) * ldb + j0 + q * NR, size_t(cols) * sizeof(float));
          } else {
            for (int64_t j = 0; j < cols; ++j) d[j] = B[(j0 + q * NR + j) * ldb + k0 + k];
          }
          for (int64_t j = cols; j < NR; ++j) d[j] = 0.f;
        }
      }
      for (int64_t p = 0; p < mPanels; ++p) {
        float* dst = ap + p * kc * MR;
        int64_t rows = std::min<int64_t>(MR, mc - p * MR);
        if (!transA) {
          for (int64_t r = 0; r < rows; ++r) {
            const float* src = A + (i0 + p * MR + r) * lda + k0;
            for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = src[k];
          }
        } else {
          for (int64_t k = 0; k < kc; ++k) std::memcpy(dst + k * MR, A + (k0 + k) * lda + i0 + p * MR, size_t(rows) * sizeof(float));
        }
        for (int64_t r = rows; r < MR; ++r)
          for (int64_t k = 0; k < kc; ++k) dst[k * MR + r] = 0.f;
      }
      for (int64_t q = 0; q < nPanels; ++q)
        for (int64_t p = 0; p < mPanels; ++p)
          T::micro(kc, ap + p * kc * MR, bp + q * kc * NR, C + (i0 + p * MR) * ldc + j0 + q * NR, ldc,
                   std::min<int64_t>(MR, mc - p * MR), std::min(NR, nc - q * NR), alpha, beta, k0 == 0);
    }
    if (epilogue && epilogue->fn) epilogue->fn(epilogue->ctx, C, ldc, i0, j0, mc, nc);
  }
}

}  // namespace
}  // namespace friction::ukernels
