#include "runtime/StepProfile.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace friction {

std::string profileReport(const std::vector<StepTime>& steps, long runs, int top, const std::string& runsNote) {
  if (runs <= 0) return "";
  struct Group {
    double ms = 0;
    long calls = 0;
  };
  std::map<std::string, Group> groups;
  double total = 0;
  for (const StepTime& s : steps) {
    groups[s.label].ms += s.ms;
    groups[s.label].calls += s.calls;
    total += s.ms;
  }
  std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  auto share = [&](double ms) { return total > 0 ? 100 * ms / total : 0.0; };
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "  profile over %ld runs%s: %.3f ms per run in %zu steps\n    %9s %7s %6s  %s\n", runs,
                runsNote.c_str(), total / double(runs), steps.size(), "ms/run", "share", "calls", "step kind");
  out += line;
  for (const auto& [label, g] : sorted) {
    std::snprintf(line, sizeof line, "    %9.3f %6.1f%% %6.0f  %s\n", g.ms / double(runs), share(g.ms),
                  double(g.calls) / double(runs), label.c_str());
    out += line;
  }
  std::vector<const StepTime*> slowest;
  for (const StepTime& s : steps) slowest.push_back(&s);
  std::sort(slowest.begin(), slowest.end(), [](const StepTime* a, const StepTime* b) { return a->ms > b->ms; });
  slowest.resize(std::min(slowest.size(), size_t(std::max(top, 0))));
  if (!slowest.empty()) out += "    slowest steps:\n";
  for (const StepTime* s : slowest) {
    std::snprintf(line, sizeof line, "    %9.3f %6.1f%%         %s: %s\n", s->ms / double(runs), share(s->ms),
                  s->label.c_str(), s->where.c_str());
    out += line;
  }
  return out;
}

}  // namespace friction
