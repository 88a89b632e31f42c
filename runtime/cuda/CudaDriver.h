// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1, or the
// file FRICTION_LIBCUDA names): nothing links against CUDA, so friction
// starts on machines without a driver and says in one line why the cuda
// backend cannot run there. Only the entry points the executor calls
// (GpuExecutor.h); Debian ships no MLIR CUDA runtime, so these are the
// project's own.
#pragma once
#include <cstddef>
#include <string>

namespace friction::gpu {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

struct CudaDriver {
  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**) = nullptr;
  CUresult (*cuEventCreate)(CUevent*, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;

  // The driver, initialized, with device 0's primary context current on the
  // calling thread; throws friction::Error with cudaUnavailableReason() when
  // there is none.
  static const CudaDriver& get();

  // Throws friction::Error "cuda: <what>: <error name> (<code>)" unless rc is success.
  void check(CUresult rc, const std::string& what) const;
  std::string deviceName() const { return device_; }
  // Device 0's compute capability as major * 10 + minor (90 for an H100).
  int computeCapability() const { return capability_; }

 private:
  void* lib_ = nullptr;
  CUcontext context_ = nullptr;  // device 0's primary context
  std::string device_;
  int capability_ = 0;
  friend std::string loadDriver(CudaDriver&, const char* path);
};

// "" when the driver loads, initializes and reports at least one device;
// else why not, in one line ("no CUDA driver on this machine (libcuda.so.1:
// cannot open shared object file)", "cuInit failed: CUDA_ERROR_NO_DEVICE (100)").
std::string cudaUnavailableReason();

}  // namespace friction::gpu
