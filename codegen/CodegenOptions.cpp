#include "codegen/CodegenOptions.h"

#include "ir/Error.h"
#include "ir/Spec.h"

namespace friction::codegen {

const char* targetName(Target t) {
  switch (t) {
    case Target::Cpu: return "cpu";
    case Target::Cuda: return "cuda";
    case Target::CudaNests: return "cuda-nests";
    case Target::Halide: return "halide";
  }
  return "?";
}

const std::vector<CodegenStage>& codegenStages() {
  static const std::vector<CodegenStage> stages = {
#define FRICTION_CODEGEN_STAGE(fn, name, switchable, targets, summary) {name, switchable, targets, summary},
#include "codegen/CodegenStages.def"
#undef FRICTION_CODEGEN_STAGE
  };
  return stages;
}

std::set<std::string> defaultOffStages() {
  std::set<std::string> off;
  for (const CodegenStage& s : codegenStages())
    if (s.switchable == kOff) off.insert(s.name);
  return off;
}

std::string stageSwitchList(unsigned targets) {
  std::string list;
  for (const CodegenStage& s : codegenStages())
    if (s.switchable != kRequired && (s.targets & targets)) list += (list.empty() ? "" : ", ") + std::string(s.name) + "=on|off";
  return list;
}

bool isStageSwitch(const std::string& name) {
  for (const CodegenStage& s : codegenStages())
    if (s.switchable != kRequired && name == s.name) return true;
  return false;
}

bool isStage(const std::string& name) {
  for (const CodegenStage& s : codegenStages())
    if (name == s.name) return true;
  return false;
}

const CodegenStage& codegenStage(const std::string& name) {
  for (const CodegenStage& s : codegenStages())
    if (name == s.name) return s;
  throw Error("codegen: no stage '" + name + "'");
}

int64_t parseThreadOutputs(const std::string& who, const std::string& key, const std::string& value) {
  auto n = Spec::integer(value, 1, 64);
  FRICTION_CHECK(n && (*n & (*n - 1)) == 0, who + ": " + key + " must be a power of 2 from 1 to 64, got '" + value + "'");
  return *n;
}

int64_t parseCoarsenMinThreads(const std::string& who, const std::string& key, const std::string& value) {
  auto n = Spec::integer(value, 1, int64_t(1) << 30);
  FRICTION_CHECK(n, who + ": " + key + " must be a thread count from 1 to 1073741824, got '" + value + "'");
  return *n;
}

void CodegenOptions::set(const std::string& stage, const std::string& value) {
  std::string switches;
  for (const CodegenStage& s : codegenStages()) {
    FRICTION_CHECK(s.switchable != kRequired || stage != s.name,
                   "codegen: stage '" + stage + "' is required: it cannot be switched");
    if (s.switchable != kRequired) switches += (switches.empty() ? "" : ", ") + std::string(s.name);
  }
  FRICTION_CHECK(isStageSwitch(stage), "codegen: '" + stage + "' is not a stage that can be switched (stages: " +
                                           switches + ")");
  FRICTION_CHECK(value == "on" || value == "off", "codegen: " + stage + " must be on or off, got '" + value + "'");
  if (value == "off") disabled.insert(stage);
  else disabled.erase(stage);
}

void CodegenOptions::setSwitch(const std::string& setting) {
  const size_t eq = setting.find('=');
  FRICTION_CHECK(eq != std::string::npos, "codegen: a stage switch is NAME=on|off, got '" + setting + "'");
  const std::string stage = setting.substr(0, eq);
  set(stage, setting.substr(eq + 1));
  requireInTarget(stage, "codegen");
}

void CodegenOptions::requireInTarget(const std::string& stage, const std::string& who) const {
  FRICTION_CHECK(codegenStage(stage).in(target),
                 who + ": stage '" + stage + "' is not in the " + targetName(target) + " pipeline");
}

std::string CodegenOptions::str() const {
  std::string s;
  for (const CodegenStage& stage : codegenStages())
    if (stage.switchable != kRequired && enabled(stage.name) != (stage.switchable == kOn))
      s += (s.empty() ? "" : ",") + std::string(stage.name) + (enabled(stage.name) ? "=on" : "=off");
  return s.empty() ? "default stages" : s;
}

}  // namespace friction::codegen
