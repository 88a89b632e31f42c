// Registers the `cpu` backend with runtime/Backend.h: the one place that
// sees both of its kernel sources, the JIT and ahead-of-time artifacts.
#pragma once

namespace friction::codegen {

// Spec options (docs/codegen.md): profile=on|off, compile=batch|each,
// dump=on|off, one on|off switch per switchable codegen stage
// (codegen/CodegenStages.def: interchange, ukernels, approximate), or
// aot=FILE alone (an artifact of `friction compile`).
void registerCpuBackend();

}  // namespace friction::codegen
