// The `openvino` backend: OpenVINO's CPU plugin in a Python worker
// (python/openvino_worker.py). Options: hint = latency|throughput,
// precision = f32|bf16|f16, threads = N. OpenVINO has no per-transformation
// switch, so `friction ablate` has none to attribute (docs/vendor-mapping.md).
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/PythonBridge.h"

namespace friction::vendor {

void registerOpenvinoBackend() {
  registerPythonBridge({"openvino", "openvino_worker.py", {"hint", "precision", "threads"}, {}});
}

}  // namespace friction::vendor
