// Portable build of the blocked SGEMM and the load-time choice of instruction set.
#include "runtime/ukernels/SgemmImpl.h"

namespace friction::ukernels {

void sgemmAvx512(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                 float*, int64_t, const GemmEpilogue*, int);
void sgemmAvx2(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
               float*, int64_t, const GemmEpilogue*, int);

namespace {
typedef float v4f __attribute__((vector_size(16)));
void sgemmGeneric(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* e, int threads) {
  sgemmBlocked<v4f, 4, 2>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads);
}

using SgemmFn = decltype(&sgemmGeneric);
struct Choice {
  SgemmFn fn;
  const char* isa;
};
Choice choose() {
#if defined(__x86_64__) && defined(FRICTION_UKERNELS_X86)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {sgemmAvx512, "avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {sgemmAvx2, "avx2"};
#endif
  return {sgemmGeneric, "generic"};
}
const Choice& chosen() {
  static const Choice c = choose();
  return c;
}
}  // namespace

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue, int threads) {
  chosen().fn(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue, threads);
}

const char* sgemmIsa() { return chosen().isa; }

}  // namespace friction::ukernels
