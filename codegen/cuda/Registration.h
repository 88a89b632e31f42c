// Registers the `cuda` backend with runtime/Backend.h: the optimized graph's
// kernels through MLIR to PTX (GpuCompile.h), the model as a plan of kernel
// calls over one device arena (GpuPlanBuilder.h), run by the GPU executor
// over the CUDA driver loaded at run time (runtime/cuda/). Options:
// chip=sm_80|sm_86|sm_89|sm_90 (default: the device's), block=N threads per
// block, profile=on|off|all (CUDA events between kernel calls). Without a
// driver or device, creating the backend fails with one line saying so.
#pragma once

namespace friction::codegen {

void registerCudaBackend();

}  // namespace friction::codegen
