// How the microkernels share a loop among the OpenMP threads. Consecutive
// kernels mostly split the same dim (output pixels or rows) alike, so a
// thread that starts on the same contiguous share every time reads what it
// wrote itself, in its own core's cache. That matters on a VM whose host
// moves the vCPUs between cores sharing a cache and cores that do not
// (docs/metrics.md, "Core-to-core distance"): SGEMM tasks handed out first
// come, first served ran MobileNetV2 1.5x slower with the cores apart, as
// every activation crossed between the caches. A fixed split alone is fragile
// the other way: a vCPU whose host core is busy falls behind and the other
// waits for it. affineFor does both: each thread takes the items of its own
// share in order and then helps finish the others' shares.
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace friction::ukernels {

// One thread's share [next, end): taken one item at a time, by the owner and
// then by any thread done with its own. On a cache line of its own, so owners
// do not contend until they help each other.
struct alignas(64) AffineShare {
  std::atomic<int64_t> next{0};
  int64_t end = 0;
};

// Calls fn(i) once for each i in [0, n) on up to `threads` OpenMP threads
// (at most n; one runs it in a plain loop, in order). fn must not throw.
template <typename Fn>
void affineFor(int64_t n, int threads, Fn&& fn) {
  const int nt = int(std::min<int64_t>(std::max(threads, 1), n));
  if (nt <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::unique_ptr<AffineShare[]> shares(new AffineShare[size_t(nt)]);
  for (int t = 0; t < nt; ++t) {
    shares[size_t(t)].next.store(n * t / nt, std::memory_order_relaxed);
    shares[size_t(t)].end = n * (t + 1) / nt;
  }
#pragma omp parallel num_threads(nt)
  {
    // Own share first, then the others round the ring (so a team smaller than asked for, nested or under a
    // thread limit, still covers every share).
    const int me = omp_get_thread_num();
    for (int s = 0; s < nt; ++s) {
      AffineShare& share = shares[size_t((me + s) % nt)];
      for (int64_t i; (i = share.next.fetch_add(1, std::memory_order_relaxed)) < share.end;) fn(i);
    }
  }
}

// affineFor on OpenMP's thread count.
template <typename Fn>
void affineFor(int64_t n, Fn&& fn) {
  affineFor(n, omp_get_max_threads(), std::forward<Fn>(fn));
}

}  // namespace friction::ukernels
