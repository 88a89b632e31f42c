#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {

void registerTensorKernels(KernelRegistry& r) {}

}  // namespace friction::interp
