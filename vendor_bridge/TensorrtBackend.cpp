// The `tensorrt` backend: NVIDIA TensorRT's ONNX parser and builder, one engine
// run by one execution context on a CUDA stream, in a Python worker
// (python/tensorrt_worker.py; device buffers through cuda-python, GPU time by
// CUDA events). Options: opt = 0..5 (builder optimization level), tf32/fp16/bf16
// = on|off (precision flags; fp16/bf16 only before TensorRT 11), workspace = MiB,
// timing_cache = PATH|off. TensorRT has no per-fusion switch, so `friction
// ablate` has none to attribute (docs/vendor-mapping.md). Without a GPU or
// TensorRT the backend is still registered and compile() says which is missing.
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/PythonBridge.h"

namespace friction::vendor {

void registerTensorrtBackend() {
  registerPythonBridge(
      {"tensorrt", "tensorrt_worker.py", {"opt", "tf32", "fp16", "bf16", "workspace", "timing_cache"}, {}});
}

}  // namespace friction::vendor
