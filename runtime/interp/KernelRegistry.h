// The reference interpreter's kernels: plain, obviously correct code, one
// function per op. A kernel receives the node (for attributes) and its input
// tensors (absent optional inputs are undefined Tensors) and returns the
// outputs. Kernels compute output shapes from the actual inputs, reusing the
// helpers in ir/ops/ShapeHelpers.h so they agree with inference.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::interp {

using Kernel = std::function<std::vector<Tensor>(const Node&, const std::vector<Tensor>&)>;

class KernelRegistry {
 public:
  static const KernelRegistry& instance();
  const Kernel* find(const std::string& op) const;
  void add(const std::string& op, Kernel k);

 private:
  std::map<std::string, Kernel> kernels_;
};

// One registration function per op family, one family per file of runtime/interp/kernels/.
void registerElementwiseKernels(KernelRegistry& r);
void registerConvKernels(KernelRegistry& r);
void registerMatMulKernels(KernelRegistry& r);
void registerNormKernels(KernelRegistry& r);
void registerPoolKernels(KernelRegistry& r);
void registerReductionKernels(KernelRegistry& r);
void registerShapeKernels(KernelRegistry& r);
void registerIndexKernels(KernelRegistry& r);
void registerRegionKernels(KernelRegistry& r);
void registerRecurrentKernels(KernelRegistry& r);

}  // namespace friction::interp
