// The machine's vector width for withNativeWidth and the SGEMM (Multiversion.h).
#include "runtime/ukernels/Multiversion.h"

#include <atomic>

namespace friction::ukernels {
namespace {
std::atomic<int> lanesCap{0};

int machineLanes() {
#if defined(FRICTION_X86_COPIES)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return 16;
  return __builtin_cpu_supports("x86-64-v3") ? 8 : 4;
#else
  return 4;
#endif
}
}  // namespace

int machineFloatLanes() {
  static const int machine = machineLanes();
  return machine;
}

int nativeFloatLanes() {
  const int machine = machineFloatLanes();
  const int cap = lanesCap.load(std::memory_order_relaxed);
  return cap <= 0 || cap >= machine ? machine : cap >= 8 ? 8 : 4;
}

int limitVectorLanes(int lanes) { return lanesCap.exchange(lanes, std::memory_order_relaxed); }

}  // namespace friction::ukernels
