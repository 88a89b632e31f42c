// The machine's vector width for withNativeWidth (Multiversion.h).
#include "runtime/ukernels/Multiversion.h"

#include <algorithm>
#include <atomic>

namespace friction::ukernels {
namespace {
std::atomic<int> lanesLimit{0};

int machineLanes() {
#if defined(FRICTION_UKERNELS_X86) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return 16;
  return __builtin_cpu_supports("x86-64-v3") ? 8 : 4;
#else
  return 4;
#endif
}
}  // namespace

int nativeFloatLanes() {
  static const int machine = machineLanes();
  const int limit = lanesLimit.load(std::memory_order_relaxed);
  return limit > 0 && limit < machine ? std::max(4, limit) : machine;
}

void limitVectorLanes(int lanes) { lanesLimit.store(lanes, std::memory_order_relaxed); }

}  // namespace friction::ukernels
