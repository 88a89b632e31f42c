// The model zoo: parametric archetypes built in code (no downloads). A spec
// is `ARCH?key=value&...`, e.g. `resnet?depth=4&width=64&resolution=224`.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::zoo {

struct ZooSpec {
  std::string arch;
  std::map<std::string, std::string> params;
};

struct ArchInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> knobs;  // "depth=2" style, with defaults
};

ZooSpec parseSpec(const std::string& text);
std::unique_ptr<Graph> build(const ZooSpec& spec);
std::vector<ArchInfo> list();

}  // namespace friction::zoo
