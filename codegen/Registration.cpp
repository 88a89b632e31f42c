#include "codegen/Registration.h"

#include <limits>
#include <map>

#include "codegen/CpuBackend.h"
#include "codegen/aot/Artifact.h"
#include "codegen/mlir/Codegen.h"
#include "ir/Error.h"
#include "ir/Spec.h"

namespace friction::codegen {
namespace {

bool onOff(const std::string& key, const std::string& value) {
  FRICTION_CHECK(value == "on" || value == "off", "backend cpu: " + key + " must be on or off, got '" + value + "'");
  return value == "on";
}

std::string optionList() {
  return stageSwitchList(kCpu | kCudaNests) + ", profile=on|off|all, compile=batch|each, dump=on|off, target=cpu|cuda-nests, gpu-block=N, gpu-thread-outputs=N, gpu-thread-columns=N, gpu-shared-columns=N, gpu-coarsen-min-threads=N, aot=FILE";
}

std::unique_ptr<Backend> makeCpuBackend(const std::map<std::string, std::string>& options) {
  if (options.count("aot")) {  // an ahead-of-time artifact, compiled with its own options
    FRICTION_CHECK(options.size() == 1, "backend cpu: aot=FILE takes no other option (the artifact fixed them)");
    return createAotBackend(options.at("aot"));
  }
  CpuBackendOptions cpu;
  for (const auto& [key, value] : options) {
    if (key == "compile") {
      FRICTION_CHECK(value == "batch" || value == "each",
                     "backend cpu: compile must be batch or each, got '" + value + "'");
      cpu.compileEach = value == "each";
    } else if (key == "profile") {
      FRICTION_CHECK(value == "on" || value == "off" || value == "all",
                     "backend cpu: profile must be on, off or all, got '" + value + "'");
      cpu.profile = value != "off";
      if (value == "all") cpu.profileSlowest = std::numeric_limits<int>::max();
    } else if (key == "target") {
      FRICTION_CHECK(value == "cpu" || value == "cuda-nests",
                     "backend cpu: target must be cpu or cuda-nests, got '" + value + "'");
      cpu.codegen.target = value == "cpu" ? Target::Cpu : Target::CudaNests;
    } else if (key == "gpu-block") {
      auto threads = Spec::integer(value, 1, 1024);
      FRICTION_CHECK(threads, "backend cpu: gpu-block must be a thread count from 1 to 1024, got '" + value + "'");
      cpu.codegen.gpuBlockSize = *threads;
    } else if (key == "gpu-thread-outputs") {
      cpu.codegen.gpuThreadOutputs = parseThreadOutputs("backend cpu", key, value);
    } else if (key == "gpu-thread-columns") {
      cpu.codegen.gpuThreadColumns = parseThreadOutputs("backend cpu", key, value);
    } else if (key == "gpu-shared-columns") {
      cpu.codegen.gpuSharedColumns = parseThreadOutputs("backend cpu", key, value);
    } else if (key == "gpu-coarsen-min-threads") {
      cpu.codegen.gpuCoarsenMinThreads = parseCoarsenMinThreads("backend cpu", key, value);
    } else if (key == "dump") {
      cpu.codegen.dumpStages = onOff(key, value);
    } else {
      FRICTION_CHECK(isStage(key), "backend cpu: unknown option '" + key + "' (options: " + optionList() + ")");
      cpu.codegen.set(key, onOff(key, value) ? "on" : "off");
    }
  }
  for (const char* gpuOnly : {"gpu-block", "gpu-thread-outputs", "gpu-thread-columns", "gpu-shared-columns", "gpu-coarsen-min-threads"})
    FRICTION_CHECK(!options.count(gpuOnly) || cpu.codegen.target != Target::Cpu,
                   std::string("backend cpu: ") + gpuOnly + " needs target=cuda-nests");
  for (const auto& option : options)  // after the loop: target= may follow a stage
    if (isStage(option.first)) cpu.codegen.requireInTarget(option.first, "backend cpu");
  return createCpuBackend(cpu, createJitSource(cpu.codegen, cpu.compileEach));
}

}  // namespace

void registerCpuBackend() { registerBackend("cpu", makeCpuBackend); }

}  // namespace friction::codegen
