// Runs a GpuPlan on device 0: loads every kernel's PTX (the driver assembles
// it for the device), allocates the one device arena, uploads the weights
// once, and then per run copies the inputs in, launches every call on the
// default stream and copies the outputs out. Timing is by CUDA events around
// the launches, so a run's time is the device's, without the copies; with
// profiling, an event between calls times each call.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/GpuPlan.h"

namespace friction::gpu {

class GpuExecutor {
 public:
  // Throws friction::Error when no driver or device is there, or when the
  // driver refuses a kernel's PTX (with its log).
  explicit GpuExecutor(GpuPlan plan);
  ~GpuExecutor();
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  const GpuPlan& plan() const { return plan_; }
  std::string device() const { return driver_.deviceName(); }

  // Copies input `i` (plan().inputs[i].bytes bytes) into the arena.
  void upload(size_t i, const void* data, size_t bytes);
  // Launches every call and waits for them; returns the device time in ms.
  // With `profile`, each call's time is added to callMs().
  double launch(bool profile = false);
  // Copies output `i` out of the arena.
  void download(size_t i, void* data, size_t bytes) const;

  // Device ms per call of the plan, summed over the profiled launches.
  const std::vector<double>& callMs() const { return callMs_; }
  int64_t profiledRuns() const { return profiledRuns_; }

 private:
  struct Launch {
    CUfunction fn = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::vector<uint64_t> storage;  // one 8-byte slot per argument
    std::vector<void*> params;      // into storage: what cuLaunchKernel reads
  };
  void prepare();

  const CudaDriver& driver_;
  GpuPlan plan_;
  CUdeviceptr arena_ = 0;
  std::vector<CUmodule> modules_;
  std::vector<std::vector<Launch>> calls_;  // per call of the plan
  std::vector<CUevent> events_;             // calls + 1
  std::vector<double> callMs_;
  int64_t profiledRuns_ = 0;
};

}  // namespace friction::gpu
