// The `tvm` backend: Apache TVM's Relax ONNX frontend and CPU pipeline, built
// for llvm and run by the Relax VM in a Python worker (python/tvm_worker.py).
// Options: opt = 0..3 (PassContext opt_level), threads = N, mcpu = LLVM CPU,
// disable = Relax passes below (PassContext disabled_pass).
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/PythonBridge.h"

namespace friction::vendor {

void registerTvmBackend() {
  // SWITCHES in python/tvm_worker.py (tests/vendor_bridge/TestVendorSwitches.cpp).
  registerPythonBridge({"tvm", "tvm_worker.py", {"opt", "threads", "mcpu", "disable"},
                        {"FoldConstant", "FuseOps", "FuseTIR", "StaticPlanBlockMemory"}});
}

}  // namespace friction::vendor
