// Registers the `cuda` backend with runtime/Backend.h. What exists of it
// today: kernels through MLIR to PTX (codegen/cuda/GpuCompile.h, `friction
// compile --backend cuda --emit-ptx DIR`) and their loop nests checked on the
// host (`cpu?target=cuda-nests`). Creating the backend probes the driver and
// fails with one line: why no GPU can be used here, or, where one could, that
// the host runtime that would run the PTX is not built yet.
#pragma once

namespace friction::codegen {

void registerCudaBackend();

}  // namespace friction::codegen
