// A fused region runs by interpreting its body: the interpreter stays the
// oracle for every fusion pass, before any codegen exists.
#include "ir/FusedRegion.h"
#include "runtime/interp/Interpreter.h"
#include "runtime/interp/KernelRegistry.h"

namespace friction::interp {

void registerRegionKernels(KernelRegistry& r) {
  r.add("Fused", [](const Node& node, const std::vector<Tensor>& in) {
    return run(FusedRegion::of(node)->body(), in);
  });
}

}  // namespace friction::interp
