// friction's f32 GEMM microkernel library: the one fast matrix multiply shared
// by the reference interpreter's MatMul/Gemm/Conv kernels and the compiled
// `cpu` backend (which calls it from its kernels the way IREE calls ukernels).
//
// Blocking follows BLIS: a KC x NC panel of op(B) is packed into
// register-tile panels (a constant B once), rows of A are read in place or
// through a table of runs (an NHWC conv's input pixels; a transposed A is
// packed into MR-row panels), and an MR x NR register tile of C accumulates
// in vector registers. The instruction set is the machine's
// (the direct kernels' rule, Multiversion.h), the tile picked per call from N:
// AVX-512 (12 x 32, or 6 x 64 where N is a multiple of 64 or near one; 24 x 16
// up to 16 columns, 8 x 48 for 33-48 and for 8 or 16 rows), AVX2+FMA
// (6 x 16), or portable 128-bit vectors (4 x 8). Blocks of C are spread over
// OpenMP threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>

namespace friction::ukernels {

// A fused epilogue. The biases, the residual and the clamp are applied in the
// register tile, before its one store after the last K step: C = min(max(C +
// bias[j] + rowBias[i] + residual[i, j], lo), hi). Then fn, if set, is called
// once per finished block of C (rows [i0, i0+rows), columns [j0, j0+cols))
// while the block is still in cache (an activation), on any OpenMP thread,
// blocks in any order.
struct GemmEpilogue {
  void (*fn)(void* ctx, float* C, int64_t ldc, int64_t i0, int64_t j0, int64_t rows, int64_t cols) = nullptr;
  void* ctx = nullptr;
  const float* bias = nullptr;      // per column of C (an NHWC conv's channels)
  const float* rowBias = nullptr;   // per row of C (an NCHW conv's channels)
  const float* residual = nullptr;  // laid out like C (ldc apart)
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  bool inTile() const {
    return bias || rowBias || residual || lo != -std::numeric_limits<float>::infinity() ||
           hi != std::numeric_limits<float>::infinity();
  }
};

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, row-major with leading
// dimensions lda/ldb/ldc; op(X) is X or its transpose. beta == 0 overwrites C
// (NaNs already in C do not propagate). `threads` <= 0: OpenMP's default.
void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue = nullptr,
           int threads = 0);

// A B operand made panel by panel instead of read from a matrix: an NCHW
// convolution's im2col, gathered straight into the panels the SGEMM packs,
// so the whole gathered matrix is never written and read back (ResNet-18's
// first 3x3 layers: 7 MB each way).
struct GemmPanelSource {
  // Writes B[k0, k0 + kc) x [j0, j0 + nc) as nr-wide panels: panel q at
  // out + q * kc * nr holds row k at + k * nr; columns past nc are zero.
  void (*pack)(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nc, int64_t nr, float* out) = nullptr;
  const void* ctx = nullptr;
};

// C[M,N] = A[M,K] * B[K,N] with B from `source` (as sgemm, alpha 1, beta 0).
void sgemmFromPanels(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const GemmPanelSource& source,
                     float* C, int64_t ldc, const GemmEpilogue* epilogue = nullptr, int threads = 0);

// An A operand read through a table instead of stored: row i's K = cells * cellDepth elements are `cells` runs
// of cellDepth contiguous floats, run t at base + offsets[i * cells + t], or zeros (`zeros`, cellDepth of them)
// where that offset is negative. An NHWC convolution's im2col without the matrix (XNNPACK's indirect
// convolution): row i an output pixel, run t the C channels of the input pixel under window cell t, padding
// negative; gathering the matrix cost a 3x3 conv a write and a read of R*S times its input.
struct GemmIndirectA {
  const float* base = nullptr;
  const int64_t* offsets = nullptr;
  const float* zeros = nullptr;
  int64_t cells = 1, cellDepth = 1;
};

// C[M,N] = A[M, cells * cellDepth] * B (as sgemm, alpha 1, beta 0) with A read through `a`.
void sgemmIndirect(int64_t M, int64_t N, const GemmIndirectA& a, const float* B, int64_t ldb, float* C, int64_t ldc,
                   const GemmEpilogue* epilogue = nullptr, int threads = 0);

// Declares [data, data + bytes) immutable until unregistered (a model's
// weights): a B operand lying there is packed into panels once, on first
// use, and every later GEMM on it skips packing. Registrations nest by start
// address and are counted: the range stays until every registration of it is
// undone, and then its packed copies are dropped.
void registerConstant(const void* data, size_t bytes);
void unregisterConstant(const void* data);
// Whether `data` lies in a registered range.
bool isRegisteredConstant(const void* data);

// The instruction set the running machine uses: "avx512", "avx2" or "generic".
const char* sgemmIsa();

}  // namespace friction::ukernels
