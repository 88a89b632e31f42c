// The generic Python-worker bridge: a vendor compiler that runs the graph in a
// worker process (PythonWorker) after friction exports it to ONNX. A bridge is
// one PythonBridgeSpec (name, worker script, options, switches) registered as a
// backend, plus its worker script under vendor_bridge/python/ (built on
// worker_common.py: JSON lines, .npy tensors, timing around the vendor's run).
#pragma once
#include <string>
#include <vector>

namespace friction::vendor {

struct PythonBridgeSpec {
  std::string name;                  // backend name, e.g. "ort"
  std::string script;                // worker file in vendor_bridge/python/, e.g. "ort_worker.py"
  std::vector<std::string> options;  // allowed option keys; anything else is refused
  // The vendor's own switches, turned off through the `disable=` option, that
  // `friction ablate --backend NAME` attributes (empty: none).
  std::vector<std::string> switches;
  // true: disable= takes only names from `switches`; false: passed through
  // unchecked (ORT ignores names it does not know).
  bool closedSwitches = true;
};

// Registers the bridge as a backend (runtime/Backend.h) and its switches.
void registerPythonBridge(PythonBridgeSpec spec);

}  // namespace friction::vendor
