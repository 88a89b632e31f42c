#include "runtime/cuda/CudaDriver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "ir/Error.h"

namespace friction::gpu {
namespace {

constexpr CUresult kSuccess = 0;

// The driver's name of an error code, when the driver can tell it.
std::string errorText(void* lib, CUresult rc) {
  using GetErrorName = CUresult (*)(CUresult, const char**);
  auto name = lib ? reinterpret_cast<GetErrorName>(dlsym(lib, "cuGetErrorName")) : nullptr;
  const char* text = nullptr;
  std::string code = "(" + std::to_string(rc) + ")";
  if (name && name(rc, &text) == kSuccess && text) return std::string(text) + " " + code;
  // The toolkit's stub library knows no names; the codes a probe meets (cuda.h).
  static const std::map<CUresult, const char*> known = {{3, "CUDA_ERROR_NOT_INITIALIZED"},
                                                        {34, "CUDA_ERROR_STUB_LIBRARY"},
                                                        {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
                                                        {100, "CUDA_ERROR_NO_DEVICE"},
                                                        {999, "CUDA_ERROR_UNKNOWN"}};
  auto it = known.find(rc);
  return it != known.end() ? std::string(it->second) + " " + code : "error " + code;
}

template <typename Fn>
bool bind(void* lib, Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  return fn != nullptr;
}

}  // namespace

// Fills `d`; "" on success, else why the driver cannot be used. The library
// stays loaded: unloading a driver is not worth the risk.
std::string loadDriver(CudaDriver& d, const char* path) {
  d.lib_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!d.lib_) {
    const char* why = dlerror();
    return std::string("no CUDA driver on this machine (") + (why ? why : path) + ")";
  }
  void* l = d.lib_;
  if (!bind(l, d.cuInit, "cuInit") || !bind(l, d.cuDeviceGetCount, "cuDeviceGetCount"))
    return std::string(path) + " is not a CUDA driver (no cuInit or cuDeviceGetCount)";
  if (CUresult rc = d.cuInit(0); rc != kSuccess) return "cuInit failed: " + errorText(l, rc);
  int devices = 0;
  if (CUresult rc = d.cuDeviceGetCount(&devices); rc != kSuccess) return "cuDeviceGetCount failed: " + errorText(l, rc);
  if (devices == 0) return "the CUDA driver reports no device";
  // The _v2 names are the 64-bit entry points cuda.h maps the plain ones to.
  bool all = bind(l, d.cuDeviceGet, "cuDeviceGet") && bind(l, d.cuDeviceGetName, "cuDeviceGetName") &&
             bind(l, d.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
             bind(l, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
             bind(l, d.cuCtxSetCurrent, "cuCtxSetCurrent") && bind(l, d.cuCtxSynchronize, "cuCtxSynchronize") &&
             bind(l, d.cuModuleLoadDataEx, "cuModuleLoadDataEx") &&
             bind(l, d.cuModuleGetFunction, "cuModuleGetFunction") && bind(l, d.cuModuleUnload, "cuModuleUnload") &&
             bind(l, d.cuMemAlloc, "cuMemAlloc_v2") && bind(l, d.cuMemFree, "cuMemFree_v2") &&
             bind(l, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2") && bind(l, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
             bind(l, d.cuMemsetD8, "cuMemsetD8_v2") && bind(l, d.cuLaunchKernel, "cuLaunchKernel") &&
             bind(l, d.cuEventCreate, "cuEventCreate") && bind(l, d.cuEventRecord, "cuEventRecord") &&
             bind(l, d.cuEventSynchronize, "cuEventSynchronize") &&
             bind(l, d.cuEventElapsedTime, "cuEventElapsedTime") && bind(l, d.cuEventDestroy, "cuEventDestroy_v2");
  if (!all) return std::string(path) + " lacks an entry point friction calls (driver too old?)";
  CUdevice dev = 0;
  CUcontext& ctx = d.context_;
  if (CUresult rc = d.cuDeviceGet(&dev, 0); rc != kSuccess) return "cuDeviceGet failed: " + errorText(l, rc);
  char name[256] = {0};
  if (d.cuDeviceGetName(name, sizeof name - 1, dev) == kSuccess) d.device_ = name;
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR (cuda.h)
  int major = 0, minor = 0;
  if (d.cuDeviceGetAttribute(&major, 75, dev) == kSuccess && d.cuDeviceGetAttribute(&minor, 76, dev) == kSuccess)
    d.capability_ = major * 10 + minor;
  if (CUresult rc = d.cuDevicePrimaryCtxRetain(&ctx, dev); rc != kSuccess)
    return "cuDevicePrimaryCtxRetain failed: " + errorText(l, rc);
  if (CUresult rc = d.cuCtxSetCurrent(ctx); rc != kSuccess) return "cuCtxSetCurrent failed: " + errorText(l, rc);
  return "";
}

namespace {
struct Loaded {
  CudaDriver driver;
  std::string why;
};
// Loaded once per library path: FRICTION_LIBCUDA may name another one later (the tests do).
Loaded& loaded() {
  static std::mutex mu;
  static std::map<std::string, Loaded> byPath;
  const char* override = std::getenv("FRICTION_LIBCUDA");
  std::string path = override && *override ? override : "libcuda.so.1";
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = byPath.try_emplace(path);
  if (fresh) it->second.why = loadDriver(it->second.driver, path.c_str());
  return it->second;
}
}  // namespace

const CudaDriver& CudaDriver::get() {
  const Loaded& l = loaded();
  FRICTION_CHECK(l.why.empty(), "backend cuda: " + l.why);
  // The primary context is current on the thread that loaded the driver; make it current here too.
  thread_local bool current = false;
  if (!current) {
    l.driver.check(l.driver.cuCtxSetCurrent(l.driver.context_), "cuCtxSetCurrent");
    current = true;
  }
  return l.driver;
}

void CudaDriver::check(CUresult rc, const std::string& what) const {
  FRICTION_CHECK(rc == kSuccess, "cuda: " + what + ": " + errorText(lib_, rc));
}

std::string cudaUnavailableReason() { return loaded().why; }

}  // namespace friction::gpu
