#include "runtime/interp/KernelRegistry.h"

#include "ir/Error.h"

namespace friction::interp {

const KernelRegistry& KernelRegistry::instance() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    registerElementwiseKernels(r);
    registerConvKernels(r);
    registerMatMulKernels(r);
    registerNormKernels(r);
    registerPoolKernels(r);
    registerReductionKernels(r);
    registerShapeKernels(r);
    registerIndexKernels(r);
    registerRegionKernels(r);
    registerRecurrentKernels(r);
    return r;
  }();
  return registry;
}

const Kernel* KernelRegistry::find(const std::string& op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

void KernelRegistry::add(const std::string& op, Kernel k) {
  FRICTION_CHECK(!kernels_.count(op), "kernel for '" + op + "' registered twice");
  kernels_[op] = std::move(k);
}

}  // namespace friction::interp
