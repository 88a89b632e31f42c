// Compiled with -mavx2 -mfma (runtime/CMakeLists.txt); called only when the CPU has AVX2 and FMA.
#include "runtime/ukernels/SgemmImpl.h"

namespace friction::ukernels {
typedef float v8f __attribute__((vector_size(32)));
void sgemmAvx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* e, int threads,
               const GemmPanelSource* source, const GemmIndirectA* indirect) {
  sgemmBlocked<v8f, 6, 2>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source, indirect);
}
}  // namespace friction::ukernels
