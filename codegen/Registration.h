// Registers the `cpu` backend with runtime/Backend.h: the one place that
// sees both of its kernel sources, the JIT and ahead-of-time artifacts.
#pragma once

namespace friction::codegen {

// Spec options (docs/codegen.md): profile=on|off|all, compile=batch|each,
// dump=on|off, one on|off switch per switchable codegen stage
// (codegen/CodegenStages.def: interchange, ukernels, approximate),
// target=cuda-nests with gpu-block=N (the cuda pipeline's tiled loop nests
// run on the host: the GPU's indexing checked without a GPU), or aot=FILE
// alone (an artifact of `friction compile`).
void registerCpuBackend();

}  // namespace friction::codegen
