// The zoo's registry and spec parsing; one file per archetype builds the graphs.
#include "frontend/zoo/Zoo.h"

#include "frontend/zoo/Blocks.h"
#include "ir/Error.h"

namespace friction::zoo {
namespace {

const std::vector<Arch>& archs() {
  static const std::vector<Arch> a = {resnetArch(), mobilenetV2Arch(), convnextArch(), vitArch(), mixerArch(), mlpArch()};
  return a;
}

}  // namespace

ZooSpec parseSpec(const std::string& text) {
  ZooSpec s;
  size_t q = text.find('?');
  s.arch = text.substr(0, q);
  FRICTION_CHECK(!s.arch.empty(), "zoo spec '" + text + "' names no architecture");
  if (q == std::string::npos) return s;
  std::string rest = text.substr(q + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t amp = rest.find('&', pos);
    std::string kv = rest.substr(pos, amp == std::string::npos ? std::string::npos : amp - pos);
    if (!kv.empty()) {
      size_t eq = kv.find('=');
      FRICTION_CHECK(eq != std::string::npos && eq > 0, "zoo spec '" + text + "': expected key=value, got '" + kv + "'");
      s.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return s;
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
