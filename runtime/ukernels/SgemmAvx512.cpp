// Compiled with -mavx512f -mfma (runtime/CMakeLists.txt); called only when the CPU has AVX-512F.
#include "runtime/ukernels/SgemmImpl.h"

namespace friction::ukernels {
typedef float v16f __attribute__((vector_size(64)));
namespace {
// The columns a tile NR wide computes for N: whole panels, then a last panel of at most one vector (16) as one
// vector, of more as a whole panel.
constexpr int64_t computedColumns(int64_t N, int64_t NR) {
  const int64_t rest = N % NR;
  return N - rest + (rest == 0 ? 0 : rest <= 16 ? 16 : NR);
}
}  // namespace

void sgemmAvx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* e, int threads,
                 const GemmPanelSource* source, const GemmIndirectA* indirect) {
  // Narrow C (a grouped conv's 16 channels per group, a 1x1 conv to 16): one vector per row, more rows
  // per tile; the 32-wide tile would compute as many zeros as results.
  if (N <= 16)
    return sgemmBlocked<v16f, 24, 1>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source,
                                     indirect);
  // 8 or 16 rows (a recurrent layer's batch by R, a batch-8 MLP): whole 8-row tiles read A in place, where
  // 6 x 64 ran 6-row tiles and a 2- or 4-row one whose rows were packed first.
  if ((N > 32 && N <= 48) || ((M == 8 || M == 16) && N > 48))
    return sgemmBlocked<v16f, 8, 3>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source, indirect);
  // 6 x 64 where it computes at most ~3% more columns than 12 x 32 (N = 64k, 1000): per step of k four loads
  // of B and six broadcasts feed 24 FMAs, against two and twelve. On an AVX-512 EPYC (Zen 4) a driver ran
  // ResNet-50's 1x1 and im2col GEMM shapes and 1024^3 at 0.89x the time of 12 x 32 (interleaved against
  // dnnl_sgemm: 1.01 against 1.10-1.12 its time); a GEMV keeps four accumulators instead of two.
  if (N >= 64 && computedColumns(N, 64) * 100 <= computedColumns(N, 32) * 103)
    return sgemmBlocked<v16f, 6, 4>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source, indirect);
  sgemmBlocked<v16f, 12, 2>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source, indirect);
}
}  // namespace friction::ukernels
