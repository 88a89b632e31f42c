// The GEMM behind the interpreter's Conv, ConvTranspose, MatMul and Gemm
// kernels. f32 runs the microkernel library (runtime/ukernels/Sgemm.h); f64 a
// cache-blocked, packed kernel parallelized with OpenMP; integers a plain loop.
#pragma once
#include <cstdint>

namespace friction::interp {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, all row-major with
// leading dimensions lda/ldb/ldc; op(X) is X or its transpose. beta == 0
// overwrites C (NaNs in C do not propagate).
template <typename T>
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, T beta, T* C, int64_t ldc);

}  // namespace friction::interp
