// The `iree` backend: iree-import-onnx + iree-compile for llvm-cpu (host CPU),
// run by the local-task driver in a Python worker (python/iree_worker.py).
// Options: opt = O0..O3 (--iree-opt-level), threads = N (task topology),
// disable = switches below, each setting its iree-compile flag to false.
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/PythonBridge.h"

namespace friction::vendor {

void registerIreeBackend() {
  // The names of SWITCHES in python/iree_worker.py, which maps each to its flag (tests/vendor_bridge/TestVendorSwitches.cpp).
  registerPythonBridge({"iree", "iree_worker.py", {"opt", "threads", "disable"},
                        {"const-eval", "const-expr-hoisting", "aggressive-fusion", "propagate-transposes",
                         "generalize-matmul", "data-tiling", "reassociate-fp-reductions"}});
}

}  // namespace friction::vendor
