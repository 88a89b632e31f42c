// What a pass sees: the graph and a context for statistics and options.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

struct PassContext {
  // Counters a pass reports ("nodes removed", "patterns found", ...), printed per pass.
  std::map<std::string, int64_t> stats;
  void count(const std::string& what, int64_t n = 1) { stats[what] += n; }
};

using PassFn = void (*)(Graph&, PassContext&);

struct PassInfo {
  std::string name;
  std::string summary;
  std::vector<std::string> prerequisites;
  std::vector<std::string> invalidates;
  PassFn run;
};

// Every pass, in default pipeline order (from PassRegistry.def).
const std::vector<PassInfo>& allPasses();
const PassInfo* findPass(const std::string& name);  // nullptr when unknown

#define FRICTION_PASS(fn, name, summary, prereq, invalidates) void fn(Graph&, PassContext&);
#include "passes/PassRegistry.def"
#undef FRICTION_PASS

}  // namespace friction
