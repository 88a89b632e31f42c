// Compiled with -mavx512f -mfma (runtime/CMakeLists.txt); called only when the CPU has AVX-512F.
#include "runtime/ukernels/SgemmImpl.h"

namespace friction::ukernels {
typedef float v16f __attribute__((vector_size(64)));
void sgemmAvx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* e, int threads,
                 const GemmPanelSource* source) {
  // Narrow C (a grouped conv's 16 channels per group, a 1x1 conv to 16): one vector per row, more rows
  // per tile; the 32-wide tile would compute as many zeros as results.
  if (N <= 16)
    return sgemmBlocked<v16f, 24, 1>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source);
  if (N > 32 && N <= 48)
    return sgemmBlocked<v16f, 8, 3>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source);
  sgemmBlocked<v16f, 12, 2>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source);
}
}  // namespace friction::ukernels
