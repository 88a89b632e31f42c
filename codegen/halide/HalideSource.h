// The halide backend's kernel source: each kernel the program builder asks
// for (codegen/ProgramBuilder.h) becomes one Halide pipeline (HalideKernels.h),
// scheduled (HalideSchedule.h) and JIT-compiled by Halide 14 for the host.
// The program, its arena and its steps are the cpu backend's
// (codegen/CpuBackend.h, target halide: no microkernels, no native steps), so
// `halide` and `cpu` differ only in the kernel compiler.
#pragma once
#include <memory>

#include "codegen/KernelSource.h"
#include "codegen/halide/ScheduleOptions.h"

namespace friction::codegen::halide {

std::unique_ptr<KernelSource> createHalideSource(const ScheduleOptions& options);

}  // namespace friction::codegen::halide
