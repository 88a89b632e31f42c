// The `ort` backend: ONNX Runtime's CPU provider in a Python worker
// (python/ort_worker.py). Options map to ORT's own switches: level =
// disabled|basic|extended|layout|all (graph optimization level, default all),
// disable = optimizer names (passed through; ORT ignores unknown ones), threads.
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/PythonBridge.h"

namespace friction::vendor {

void registerOrtBackend() {
  // ONNX Runtime's CPU graph optimizers by the names `disabled_optimizers`
  // takes (basic and extended levels); see docs/vendor-mapping.md.
  registerPythonBridge({"ort", "ort_worker.py", {"level", "disable", "threads"},
                        {"ConstantFolding", "CommonSubexpressionElimination", "ConvBNFusion", "ConvAddFusion",
                         "ConvMulFusion", "ConvActivationFusion", "GemmActivationFusion", "MatMulAddFusion",
                         "GeluFusion", "LayerNormFusion", "SkipLayerNormFusion", "BiasGeluFusion", "AttentionFusion",
                         "TransposeOptimizer", "NchwcTransformer"},
                        /*closedSwitches=*/false});
}

}  // namespace friction::vendor
