// Choices of the MLIR code generator: which stages of its pipeline
// (codegen/CodegenStages.def) run. Backends take them as options
// (`cpu?ukernels=off&approximate=off`); no MLIR types here.
#pragma once
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace friction::codegen {

struct CodegenStage {
  const char* name;
  bool switchable;  // false: the pipeline needs it
  const char* summary;
};
// Every stage, in pipeline order.
const std::vector<CodegenStage>& codegenStages();

struct CodegenOptions {
  std::set<std::string> disabled;  // switchable stages turned off, by name
  // Debugging only, no effect on the code: print the module after each stage to stderr.
  bool dumpStages = false;

  bool enabled(std::string_view stage) const { return !disabled.count(std::string(stage)); }
  bool ukernels() const { return enabled("ukernels"); }
  // Turns a stage on or off from a backend option NAME=on|off; throws Error
  // for unknown stages, stages that cannot be switched and other values.
  void set(const std::string& stage, const std::string& value);
  // "ukernels=off,approximate=off", or "all stages" when none is off.
  std::string str() const;
};

// True when `name` is a stage of the pipeline; a switchable one (a backend option key).
bool isStage(const std::string& name);
bool isStageSwitch(const std::string& name);

}  // namespace friction::codegen
