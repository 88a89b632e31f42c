// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1, or the
// file FRICTION_LIBCUDA names): nothing links against CUDA, so friction
// starts on machines without a driver and says in one line why the cuda
// backend cannot run there.
#pragma once
#include <string>

namespace friction::codegen {

// "" when the driver loads, initializes and reports at least one device;
// else why not, in one line ("no CUDA driver on this machine (libcuda.so.1:
// cannot open shared object file)", "cuInit failed: CUDA_ERROR_NO_DEVICE (100)").
std::string cudaUnavailableReason();

}  // namespace friction::codegen
