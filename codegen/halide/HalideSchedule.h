// How the halide backend schedules a kernel's Funcs (HalideKernels.h), as
// its options say (ScheduleOptions.h).
#pragma once
#include "codegen/halide/HalideKernels.h"
#include "codegen/halide/ScheduleOptions.h"

namespace friction::codegen::halide {

// Loads the plugin of `schedule`'s autoscheduler once per process (nothing
// for friction's own schedules); throws Error naming the library when it
// cannot.
void loadAutoscheduler(Schedule schedule);

// Schedules `k` for `target`; the autoschedulers set input and output
// estimates from the static shapes and load their plugin on first use.
void scheduleKernel(KernelFuncs& k, const ScheduleOptions& options, const Halide::Target& target);

}  // namespace friction::codegen::halide
