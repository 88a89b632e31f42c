// A fused region runs by interpreting its body: the interpreter stays the
// oracle for every fusion pass, before any codegen exists.
#include "runtime/interp/Interpreter.h"
#include "runtime/interp/KernelRegistry.h"

namespace friction::interp {

void registerRegionKernels(KernelRegistry& r) {
  r.add("Fused", [](const Node& node, const std::vector<Tensor>& in) {
    return run(*std::get<std::shared_ptr<Graph>>(*node.findAttr("body")), in);
  });
}

}  // namespace friction::interp
