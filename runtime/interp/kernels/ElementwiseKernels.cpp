#include "runtime/interp/KernelRegistry.h"
#include "runtime/interp/kernels/KernelUtil.h"

namespace friction::interp {

void registerElementwiseKernels(KernelRegistry& r) {}

}  // namespace friction::interp
