// The zoo's registry and spec parsing; one file per archetype builds the graphs.
#include "frontend/zoo/Zoo.h"

#include "frontend/zoo/Blocks.h"
#include "ir/Error.h"
#include "ir/Spec.h"

namespace friction::zoo {
namespace {

const std::vector<Arch>& archs() {
  static const std::vector<Arch> a = {resnetArch(), mobilenetV2Arch(), convnextArch(), vitArch(), mixerArch(), mlpArch()};
  return a;
}

}  // namespace

ZooSpec parseSpec(const std::string& text) {
  Spec s = Spec::parse(text, "zoo spec");
  return {s.name(), s.optionMap()};
}

std::unique_ptr<Graph> build(const ZooSpec& spec) {
  for (const auto& a : archs())
    if (a.info.name == spec.arch) return a.build(spec);
  std::string known;
  for (const auto& a : archs()) known += (known.empty() ? "" : ", ") + a.info.name;
  throw Error("unknown zoo architecture '" + spec.arch + "' (available: " + known + ")");
}

std::vector<ArchInfo> list() {
  std::vector<ArchInfo> r;
  for (const auto& a : archs()) r.push_back(a.info);
  return r;
}

}  // namespace friction::zoo
