// How the halide backend schedules a kernel's Funcs (HalideKernels.h), as
// its options say (ScheduleOptions.h).
#pragma once
#include "codegen/halide/HalideKernels.h"
#include "codegen/halide/ScheduleOptions.h"

namespace friction::codegen::halide {

// Schedules `k` for `target`; the autoschedulers set input and output
// estimates from the static shapes and load their plugin on first use.
void scheduleKernel(KernelFuncs& k, const ScheduleOptions& options, const Halide::Target& target);

}  // namespace friction::codegen::halide
