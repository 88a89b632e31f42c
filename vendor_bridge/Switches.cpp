// Vendor switches that are boolean backend options: `friction ablate --backend
// onednn` attributes latency to oneDNN post-op fusion by measuring
// onednn?postops=off against the default (on).
#include <algorithm>
#include <map>

#include "ir/Error.h"
#include "ir/Spec.h"
#include "vendor_bridge/Bridges.h"

namespace friction::vendor {
namespace {

const std::map<std::string, std::vector<std::string>>& table() {
  static const std::map<std::string, std::vector<std::string>> t = {{"onednn", {"postops"}}};
  return t;
}

}  // namespace

std::vector<std::string> booleanSwitches(const std::string& backendSpec) {
  auto it = table().find(Spec::parse(backendSpec, "backend").name());
  return it == table().end() ? std::vector<std::string>{} : it->second;
}

std::string withBooleanSwitchesOff(const std::string& backendSpec, const std::vector<std::string>& off) {
  std::vector<std::string> known = booleanSwitches(backendSpec);
  Spec spec = Spec::parse(backendSpec, "backend");
  for (const auto& s : off) {
    FRICTION_CHECK(std::find(known.begin(), known.end(), s) != known.end(),
                   "'" + s + "' is not a switch of backend " + backendSpec);
    FRICTION_CHECK(!spec.has(s), "ablating vendor switches needs a backend spec without its own " + s + "= option");
    spec.set(s, "off");
  }
  return spec.print();
}

}  // namespace friction::vendor
