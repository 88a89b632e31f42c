#include "codegen/cuda/Driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>

namespace friction::codegen {
namespace {

using CUresult = int;
constexpr CUresult kSuccess = 0;

// The driver's name of an error code, when the driver can tell it.
std::string errorText(void* lib, CUresult rc) {
  using GetErrorName = CUresult (*)(CUresult, const char**);
  auto name = reinterpret_cast<GetErrorName>(dlsym(lib, "cuGetErrorName"));
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

}  // namespace

std::string cudaUnavailableReason() {
  const char* override = std::getenv("FRICTION_LIBCUDA");
  const char* path = override && *override ? override : "libcuda.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return std::string("no CUDA driver on this machine (") + (why ? why : path) + ")";
  }
  // The library stays loaded: a later runtime would use it, and unloading a driver is not worth the risk.
  using Init = CUresult (*)(unsigned);
  using DeviceGetCount = CUresult (*)(int*);
  auto init = reinterpret_cast<Init>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<DeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !count) {
    dlclose(lib);
    return std::string(path) + " is not a CUDA driver (no cuInit or cuDeviceGetCount)";
  }
  if (CUresult rc = init(0); rc != kSuccess) return "cuInit failed: " + errorText(lib, rc);
  int devices = 0;
  if (CUresult rc = count(&devices); rc != kSuccess) return "cuDeviceGetCount failed: " + errorText(lib, rc);
  if (devices == 0) return "the CUDA driver reports no device";
  return "";
}

}  // namespace friction::codegen
