// Portable build of the blocked SGEMM and the load-time choice of instruction set.
#include "runtime/ukernels/SgemmImpl.h"

#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>

#include "runtime/ukernels/Multiversion.h"

namespace friction::ukernels {

void sgemmAvx512(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
                 float*, int64_t, const GemmEpilogue*, int, const GemmPanelSource*, const GemmIndirectA*);
void sgemmAvx2(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float,
               float*, int64_t, const GemmEpilogue*, int, const GemmPanelSource*, const GemmIndirectA*);

namespace {
typedef float v4f __attribute__((vector_size(16)));
void sgemmGeneric(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                  const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* e, int threads,
                  const GemmPanelSource* source, const GemmIndirectA* indirect) {
  sgemmBlocked<v4f, 4, 2>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, e, threads, source, indirect);
}

using SgemmFn = decltype(&sgemmGeneric);
struct Choice {
  SgemmFn fn;
  const char* isa;
};
// The direct kernels' rule (Multiversion.h), so the two never disagree; asked on every call, so that the
// tests' cap on the width (limitVectorLanes) runs the narrower copies too.
Choice chosen() {
#if defined(__x86_64__) && defined(FRICTION_UKERNELS_X86)
  switch (nativeFloatLanes()) {
    case 16: return {sgemmAvx512, "avx512"};
    case 8: return {sgemmAvx2, "avx2"};
    default: break;
  }
#endif
  return {sgemmGeneric, "generic"};
}
}  // namespace

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmEpilogue* epilogue, int threads) {
  chosen().fn(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, epilogue, threads, nullptr, nullptr);
}

void sgemmFromPanels(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const GemmPanelSource& source,
                     float* C, int64_t ldc, const GemmEpilogue* epilogue, int threads) {
  chosen().fn(false, false, M, N, K, 1.f, A, lda, nullptr, 0, 0.f, C, ldc, epilogue, threads, &source, nullptr);
}

void sgemmIndirect(int64_t M, int64_t N, const GemmIndirectA& a, const float* B, int64_t ldb, float* C, int64_t ldc,
                   const GemmEpilogue* epilogue, int threads) {
  chosen().fn(false, false, M, N, a.cells * a.cellDepth, 1.f, nullptr, 0, B, ldb, 0.f, C, ldc, epilogue, threads,
              nullptr, &a);
}

const char* sgemmIsa() { return chosen().isa; }

// ---- registered constants and their packed copies ----
namespace {
// A range is registered once per holder: two programs built from one graph share its weights, and the first
// one released must not take the second one's packed copies with it (a program compiled again for a new layout
// epoch ran every GEMM with its weights packed anew, 1.5x the time, once the one it replaced was released).
struct ConstantRange {
  const char* end;
  int holders;
};
struct ConstantCache {
  std::shared_mutex mu;
  std::map<const char*, ConstantRange> ranges;  // by start
  std::map<PackedKey, AlignedFloats> packed;

  // Whether `p` lies in a registered range; the caller holds `mu`.
  bool covers(const char* p) const {
    auto it = ranges.upper_bound(p);
    return it != ranges.begin() && p < std::prev(it)->second.end;
  }
};
ConstantCache& cache() {
  static ConstantCache* c = new ConstantCache();  // never destroyed: models may unregister during exit
  return *c;
}
}  // namespace

bool PackedKey::operator<(const PackedKey& o) const {
  return std::tie(B, transB, K, N, ldb, layout) < std::tie(o.B, o.transB, o.K, o.N, o.ldb, o.layout);
}

void registerConstant(const void* data, size_t bytes) {
  if (!data || bytes == 0) return;
  ConstantCache& c = cache();
  std::unique_lock lock(c.mu);
  const char* start = static_cast<const char*>(data);
  auto it = c.ranges.try_emplace(start, ConstantRange{start + bytes, 0}).first;
  it->second.end = std::max(it->second.end, start + bytes);
  it->second.holders++;
}

void unregisterConstant(const void* data) {
  ConstantCache& c = cache();
  std::unique_lock lock(c.mu);
  auto it = c.ranges.find(static_cast<const char*>(data));
  if (it == c.ranges.end() || --it->second.holders > 0) return;
  for (auto p = c.packed.begin(); p != c.packed.end();) {
    const char* b = reinterpret_cast<const char*>(p->first.B);
    p = b >= it->first && b < it->second.end ? c.packed.erase(p) : std::next(p);
  }
  c.ranges.erase(it);
}

bool isRegisteredConstant(const void* data) {
  ConstantCache& c = cache();
  std::shared_lock lock(c.mu);
  return c.covers(static_cast<const char*>(data));
}

const float* constantPanels(const PackedKey& key, size_t floats, void (*pack)(const PackedKey&, float*)) {
  ConstantCache& c = cache();
  const char* b = reinterpret_cast<const char*>(key.B);
  {
    std::shared_lock lock(c.mu);
    if (!c.covers(b)) return nullptr;
    auto p = c.packed.find(key);
    if (p != c.packed.end()) return p->second.get();
  }
  std::unique_lock lock(c.mu);
  auto& slot = c.packed[key];
  if (!slot) {
    slot = alignedFloats(floats);
    pack(key, slot.get());
  }
  return slot.get();
}

}  // namespace friction::ukernels
