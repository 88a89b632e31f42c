#include "runtime/cuda/GpuExecutor.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "ir/Error.h"

namespace friction::gpu {
namespace {

// cuModuleLoadDataEx's options for the JIT's error log (cuda.h: CUjit_option).
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferBytes = 6;
// cuEventCreate's flags: the default, timing enabled.
constexpr unsigned kEventDefault = 0;

}  // namespace

GpuExecutor::GpuExecutor(GpuPlan plan) : driver_(CudaDriver::get()), plan_(std::move(plan)) {
  // PTX for sm_XY runs on that chip and later ones only.
  const int device = driver_.computeCapability();
  const bool known = plan_.chip.rfind("sm_", 0) == 0 && plan_.chip.size() > 3;
  FRICTION_CHECK(!known || device == 0 || std::atoi(plan_.chip.c_str() + 3) <= device,
                 "cuda: the plan's PTX is for " + plan_.chip + ", the device (" + driver_.deviceName() + ") is sm_" +
                     std::to_string(device) + ": compile it with --gpu-chip sm_" + std::to_string(device) + " or older");
  for (size_t k = 0; k < plan_.kernels.size(); ++k) {
    char log[8192] = {0};
    int options[2] = {kJitErrorLogBuffer, kJitErrorLogBufferBytes};
    void* values[2] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log - 1))};
    CUmodule m = nullptr;
    CUresult rc = driver_.cuModuleLoadDataEx(&m, plan_.kernels[k].ptx.c_str(), 2, options, values);
    if (rc != 0) {
      std::string first = log;
      first = first.substr(0, first.find('\n'));
      driver_.check(rc, "loading the PTX of kernel " + std::to_string(k) + " (" + plan_.kernelLabels[k] + ")" +
                            (first.empty() ? "" : ": " + first));
    }
    modules_.push_back(m);
  }
  driver_.check(driver_.cuMemAlloc(&arena_, size_t(std::max<int64_t>(plan_.arenaBytes, 256))),
                "allocating the arena of " + std::to_string(plan_.arenaBytes) + " bytes");
  driver_.check(driver_.cuMemsetD8(arena_, 0, size_t(std::max<int64_t>(plan_.arenaBytes, 256))), "clearing the arena");
  for (const GpuConstant& c : plan_.constants) {
    FRICTION_CHECK(c.from + c.bytes <= int64_t(plan_.weights.size()),
                   "cuda: the plan's weights are missing or short (" + std::to_string(plan_.weights.size()) + " bytes)");
    driver_.check(driver_.cuMemcpyHtoD(arena_ + CUdeviceptr(c.offset), plan_.weights.data() + c.from, size_t(c.bytes)),
                  "uploading the weights");
  }
  prepare();
  events_.resize(plan_.calls.size() + 1);
  for (CUevent& e : events_) driver_.check(driver_.cuEventCreate(&e, kEventDefault), "cuEventCreate");
  callMs_.assign(plan_.calls.size(), 0.0);
}

// Every launch's function and argument block, once: the arena does not move.
void GpuExecutor::prepare() {
  for (const GpuCall& call : plan_.calls) {
    const GpuKernel& kernel = plan_.kernels[size_t(call.kernel)];
    std::vector<Launch> launches;
    for (const GpuLaunch& l : kernel.launches) {
      Launch x;
      driver_.check(driver_.cuModuleGetFunction(&x.fn, modules_[size_t(call.kernel)], l.function.c_str()),
                    "finding " + l.function + " in kernel " + std::to_string(call.kernel));
      for (int d = 0; d < 3; ++d) {
        FRICTION_CHECK(l.grid[d] >= 1 && l.block[d] >= 1 && l.grid[d] <= std::numeric_limits<int32_t>::max() &&
                           l.block[d] <= 1024,
                       "cuda: " + call.step + ": launch of " + l.function + " has a grid or block size out of range");
        x.grid[d] = unsigned(l.grid[d]);
        x.block[d] = unsigned(l.block[d]);
      }
      x.storage.assign(l.args.size(), 0);
      for (size_t a = 0; a < l.args.size(); ++a) {
        const GpuLaunchArg& arg = l.args[a];
        void* slot = &x.storage[a];
        if (arg.buffer >= 0) {
          CUdeviceptr p = arena_ + CUdeviceptr(call.buffers[size_t(arg.buffer)]);
          std::memcpy(slot, &p, sizeof p);
        } else if (arg.isFloat) {
          float f = float(arg.real);
          std::memcpy(slot, &f, sizeof f);
        } else if (arg.bits <= 32) {  // smaller integers travel in a 32-bit parameter slot too
          int32_t i = int32_t(arg.integer);
          std::memcpy(slot, &i, sizeof i);
        } else {
          std::memcpy(slot, &arg.integer, sizeof arg.integer);
        }
        x.params.push_back(slot);
      }
      launches.push_back(std::move(x));
    }
    calls_.push_back(std::move(launches));
  }
}

GpuExecutor::~GpuExecutor() {
  // Errors at teardown are not worth an exception from a destructor.
  for (CUevent e : events_) driver_.cuEventDestroy(e);
  if (arena_) driver_.cuMemFree(arena_);
  for (CUmodule m : modules_) driver_.cuModuleUnload(m);
}

void GpuExecutor::upload(size_t i, const void* data, size_t bytes) {
  FRICTION_CHECK(i < plan_.inputs.size(), "cuda: the model takes " + std::to_string(plan_.inputs.size()) + " inputs");
  const GpuValue& v = plan_.inputs[i];
  FRICTION_CHECK(int64_t(bytes) == v.bytes, "cuda: input " + std::to_string(i) + " ('" + v.name + "') is " +
                                                std::to_string(v.bytes) + " bytes, got " + std::to_string(bytes));
  driver_.check(driver_.cuMemcpyHtoD(arena_ + CUdeviceptr(v.offset), data, bytes), "copying input '" + v.name + "' in");
}

void GpuExecutor::download(size_t i, void* data, size_t bytes) const {
  const GpuValue& v = plan_.outputs.at(i);
  FRICTION_CHECK(int64_t(bytes) == v.bytes, "cuda: output '" + v.name + "' is " + std::to_string(v.bytes) + " bytes");
  driver_.check(driver_.cuMemcpyDtoH(data, arena_ + CUdeviceptr(v.offset), bytes), "copying output '" + v.name + "' out");
}

double GpuExecutor::launch(bool profile) {
  const size_t n = calls_.size();
  CUevent first = events_[0], last = events_[n];
  driver_.check(driver_.cuEventRecord(first, nullptr), "cuEventRecord");
  for (size_t c = 0; c < n; ++c) {
    if (profile && c > 0) driver_.check(driver_.cuEventRecord(events_[c], nullptr), "cuEventRecord");
    for (Launch& l : calls_[c])
      driver_.check(driver_.cuLaunchKernel(l.fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], 0,
                                           nullptr, l.params.data(), nullptr),
                    "launching " + plan_.calls[c].step);
  }
  driver_.check(driver_.cuEventRecord(last, nullptr), "cuEventRecord");
  driver_.check(driver_.cuEventSynchronize(last), "running the model (" + std::to_string(n) + " kernel calls)");
  float ms = 0;
  driver_.check(driver_.cuEventElapsedTime(&ms, first, last), "cuEventElapsedTime");
  if (profile) {
    for (size_t c = 0; c < n; ++c) {
      float callMs = 0;
      driver_.check(driver_.cuEventElapsedTime(&callMs, events_[c], events_[c + 1]), "cuEventElapsedTime");
      callMs_[c] += callMs;
    }
    profiledRuns_++;
  }
  return ms;
}

}  // namespace friction::gpu
