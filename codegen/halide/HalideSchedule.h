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

// The f32 lanes of friction's schedule's vectors for `target`: the option's,
// else the target's natural width.
int scheduleLanes(const ScheduleOptions& options, const Halide::Target& target);

// What an autoscheduler's schedule of the pipeline of `outputs` needs before
// Halide 14 lowers it right (scheduleKernel runs it after each): every Func
// stored where it is computed, the loops it unrolled over a guarded tail
// made serial, and an update's vectors over a guarded tail computed whole
// (HalideSchedule.cpp says why).
void repairAutoschedule(const std::vector<Halide::Func>& outputs);

}  // namespace friction::codegen::halide
