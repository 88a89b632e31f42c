// C entry points of the microkernels called from generated code: they unpack
// memref descriptors (codegen/KernelAbi.h) and call runtime/ukernels.
#include "codegen/Microkernels.h"

#include <omp.h>

#include <cstdint>

#include "codegen/KernelAbi.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

// One GEMM on 2-D strided views (unit inner stride, which the callee type guarantees).
void gemm2d(const float* a, const int64_t* as, const int64_t* ast, const float* b, const int64_t* bst, float* c,
            const int64_t* cs, const int64_t* cst, bool ta, bool tb, float beta, int threads) {
  int64_t M = cs[0], N = cs[1], K = ta ? as[0] : as[1];
  ukernels::sgemm(ta, tb, M, N, K, 1.f, a, ast[0], b, bst[0], beta, c, cst[0], nullptr, threads);
}

}  // namespace

extern "C" void friction_sgemm_ciface(StridedMemRef<float, 2>* a, StridedMemRef<float, 2>* b,
                                      StridedMemRef<float, 2>* c, int32_t ta, int32_t tb, float beta) {
  gemm2d(a->aligned + a->offset, a->sizes, a->strides, b->aligned + b->offset, b->strides, c->aligned + c->offset, c->sizes,
         c->strides, ta != 0, tb != 0, beta, 0);
}

extern "C" void friction_sgemm_batched_ciface(StridedMemRef<float, 3>* a, StridedMemRef<float, 3>* b,
                                              StridedMemRef<float, 3>* c, int32_t ta, int32_t tb, float beta) {
  int64_t batch = c->sizes[0];
  const float* A = a->aligned + a->offset;
  const float* B = b->aligned + b->offset;
  float* C = c->aligned + c->offset;
  int64_t K = ta ? a->sizes[1] : a->sizes[2];
  auto one = [&](int64_t i, int threads) {
    gemm2d(A + i * a->strides[0], a->sizes + 1, a->strides + 1, B + i * b->strides[0], b->strides + 1,
           C + i * c->strides[0], c->sizes + 1, c->strides + 1, ta != 0, tb != 0, beta, threads);
  };
  // Small matrices, or at least two per thread (attention heads): threads over the batch, one thread per GEMM
  // (ViT-B's 12 heads of 197 x 197 x 64, each GEMM split over 2 threads in turn, took 2.6x ONNX Runtime's
  // time). Otherwise each GEMM spreads over the threads itself, from outside any parallel region: one nested
  // in even an inactive (if(false)) region gets a team of fresh threads, which fight the pool's
  // still-spinning ones (10x slower attention on 2 cores).
  const bool small = c->sizes[1] * c->sizes[2] * K < (int64_t(1) << 21);
  if (batch > 1 && (small || batch >= 2 * omp_get_max_threads())) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < batch; ++i) one(i, 1);
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i, 0);
  }
}

std::vector<std::pair<std::string, void*>> microkernelSymbols() {
  return {{std::string("_mlir_ciface_") + kSgemmCallee, reinterpret_cast<void*>(&friction_sgemm_ciface)},
          {std::string("_mlir_ciface_") + kSgemmBatchedCallee, reinterpret_cast<void*>(&friction_sgemm_batched_ciface)}};
}

}  // namespace friction::codegen
