// The model zoo: parametric archetypes built in code (no downloads). A spec
// is `ARCH?key=value&...`, e.g. `resnet?depth=4&width=64&resolution=224`, or
// `vit?preset=vit_b&depth=24` (a preset sets defaults; explicit knobs win).
// docs/zoo.md describes every archetype, its block, knobs and presets.
#pragma once
#include <cstdint>
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

// A named configuration close to a published model.
struct PresetInfo {
  std::string name;
  std::string knobs;                // "depth=8&width=64&..." (spec query syntax)
  int64_t publishedParams = 0;      // parameter count of the published model
};

struct ArchInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> knobs;   // "depth=2" style, with defaults
  std::vector<PresetInfo> presets;
};

ZooSpec parseSpec(const std::string& text);
std::unique_ptr<Graph> build(const ZooSpec& spec);
std::vector<ArchInfo> list();

}  // namespace friction::zoo
