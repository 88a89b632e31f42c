// The `cpu` backend: a Program (codegen/Program.h) whose compiled kernels
// come from a KernelSource: the MLIR JIT (codegen/mlir/JitSource.h) or an
// ahead-of-time artifact (codegen/aot/Artifact.h). Nodes without a kernel
// run on the reference interpreter's kernels. codegen/Registration.h
// registers it under the name "cpu" with its options.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "codegen/CodegenOptions.h"
#include "codegen/KernelSource.h"
#include "codegen/Program.h"
#include "runtime/Backend.h"
#include "runtime/StepProfile.h"

namespace friction::codegen {

// The cpu backend's statistics are its program's.
using CpuStats = ProgramStats;

// How the cpu backend compiles and reports, beyond code generation.
struct CpuBackendOptions {
  std::string name = "cpu";  // the backend's name (halide: the same program, Halide's kernels)
  CodegenOptions codegen;
  bool profile = false;      // profile=on: time every step (CompiledModel::profile())
  int profileSlowest = kSlowestStepsNamed;  // steps the profile lists by name, slowest first (profile=all: every one)
  bool compileEach = false;  // compile=each: one module per kernel, so per-kernel compile phases are measured
};

// The backend over `source`, which lives as long as the backend; compiled
// kernels are cached in the backend, so identical kernels compile once
// across compile() calls too.
std::unique_ptr<Backend> createCpuBackend(const CpuBackendOptions& options, std::unique_ptr<KernelSource> source);

// A cpu model of `graph` (which must outlive it) with kernels from `source`
// and no cache beyond this call; `what` names the source in description();
// `options` as the kernels were compiled under (an artifact's manifest).
std::unique_ptr<CompiledModel> compileCpuModel(const Graph& graph, KernelSource& source, const std::string& what,
                                               const CodegenOptions& options = {});

// Statistics of a model compiled by the cpu backend (nullptr for other models).
const CpuStats* cpuStats(const CompiledModel& model);

}  // namespace friction::codegen
