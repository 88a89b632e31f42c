#include "runtime/interp/kernels/Gemm.h"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "runtime/ukernels/Sgemm.h"

namespace friction::interp {
namespace {

// f64: register tile MR x NR: 6 rows x 16 columns keeps 12 AVX2 accumulators in
// registers (f32 runs ukernels::sgemm). Cache blocks: a KC x NC panel of B (256 KiB for float) stays in
// L2 while MC x KC of A streams through L1.
constexpr int64_t MR = 6, NR = 16, MC = 96, NC = 256, KC = 256;

// acc[MR][NR] = sum_k ap[k][r] * bp[k][j] over packed panels. Fixed trip
// counts let the compiler keep acc in registers and vectorize over j.
template <typename T>
__attribute__((always_inline)) inline void microBody(int64_t kc, const T* __restrict ap, const T* __restrict bp,
                                                     T* __restrict acc) {
  T c[MR][NR] = {};
  for (int64_t k = 0; k < kc; ++k) {
    const T* b = bp + k * NR;
    for (int64_t r = 0; r < MR; ++r) {
      T a = ap[k * MR + r];
      for (int64_t j = 0; j < NR; ++j) c[r][j] += a * b[j];
    }
  }
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t j = 0; j < NR; ++j) acc[r * NR + j] = c[r][j];
}

// Compiled for AVX2+FMA and for baseline x86-64, chosen at load time; other targets build it once.
#if defined(__x86_64__) && defined(__GNUC__)
#define FRICTION_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FRICTION_MULTIVERSION
#endif
FRICTION_MULTIVERSION void micro(int64_t kc, const double* ap,
                                                                       const double* bp, double* acc) {
  microBody(kc, ap, bp, acc);
}

// One MC x NC block of C, accumulating over all of K.
template <typename T>
void blockTile(bool transA, bool transB, int64_t i0, int64_t mc, int64_t j0, int64_t nc, int64_t K, T alpha,
               const T* A, int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  thread_local std::vector<T> apBuf, bpBuf;
  apBuf.resize(size_t(MC * KC));
  bpBuf.resize(size_t(KC * NC));
  T* ap = apBuf.data();
  T* bp = bpBuf.data();
  T acc[MR * NR];
  int64_t mPanels = (mc + MR - 1) / MR, nPanels = (nc + NR - 1) / NR;
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = std::min(KC, K - k0);
    // Pack op(A) rows into MR-row panels and op(B) columns into NR-column panels, zero-padded.
    for (int64_t p = 0; p < mPanels; ++p)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = 0; r < MR; ++r) {
          int64_t i = p * MR + r;
          ap[(p * kc + k) * MR + r] =
              i < mc ? (transA ? A[(k0 + k) * lda + i0 + i] : A[(i0 + i) * lda + k0 + k]) : T(0);
        }
    for (int64_t q = 0; q < nPanels; ++q)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t j = 0; j < NR; ++j) {
          int64_t jj = q * NR + j;
          bp[(q * kc + k) * NR + j] =
              jj < nc ? (transB ? B[(j0 + jj) * ldb + k0 + k] : B[(k0 + k) * ldb + j0 + jj]) : T(0);
        }
    for (int64_t q = 0; q < nPanels; ++q)
      for (int64_t p = 0; p < mPanels; ++p) {
        micro(kc, ap + p * kc * MR, bp + q * kc * NR, acc);
        int64_t rows = std::min(MR, mc - p * MR), cols = std::min(NR, nc - q * NR);
        for (int64_t r = 0; r < rows; ++r) {
          T* c = C + (i0 + p * MR + r) * ldc + j0 + q * NR;
          for (int64_t j = 0; j < cols; ++j) c[j] += alpha * acc[r * NR + j];
        }
      }
  }
}

}  // namespace

template <typename T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    // f32 runs the shared microkernel library (the cpu backend's too).
    ukernels::sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
  if constexpr (std::is_same_v<T, double>) {
    int64_t mBlocks = (M + MC - 1) / MC, nBlocks = (N + NC - 1) / NC;
    // Threads only pay off past ~1 MFLOP.
    bool parallel = M * N * K > (int64_t(1) << 19) && mBlocks * nBlocks > 1;
#pragma omp parallel for collapse(2) schedule(dynamic) if (parallel)
    for (int64_t ib = 0; ib < mBlocks; ++ib)
      for (int64_t jb = 0; jb < nBlocks; ++jb)
        blockTile(transA, transB, ib * MC, std::min(MC, M - ib * MC), jb * NC, std::min(NC, N - jb * NC), K, alpha,
                  A, lda, B, ldb, C, ldc);
  } else if constexpr (!std::is_floating_point_v<T>) {
    // Integers: plain i-k-j loop (wrapping arithmetic, as ONNX runtimes do).
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        T a = alpha * (transA ? A[k * lda + i] : A[i * lda + k]);
        for (int64_t j = 0; j < N; ++j) C[i * ldc + j] += a * (transB ? B[j * ldb + k] : B[k * ldb + j]);
      }
  }
}

#define FRICTION_GEMM(T)                                                                                      \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, \
                        int64_t);
FRICTION_GEMM(float)
FRICTION_GEMM(double)
FRICTION_GEMM(int8_t)
FRICTION_GEMM(int16_t)
FRICTION_GEMM(int32_t)
FRICTION_GEMM(int64_t)
FRICTION_GEMM(uint8_t)
FRICTION_GEMM(uint16_t)
FRICTION_GEMM(uint32_t)
FRICTION_GEMM(uint64_t)

}  // namespace friction::interp
