// eliminate-dead-code: removes nodes no graph output depends on, then
// initializers nothing uses. Walks backwards from the outputs (through
// region bodies' inputs, which are the region node's inputs).
#include <unordered_set>

#include "passes/Pass.h"

namespace friction {

void eliminateDeadCode(Graph& g, PassContext& ctx) {
  std::unordered_set<const Value*> live(g.outputs().begin(), g.outputs().end());
  std::unordered_set<const Node*> liveNodes;
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    const Node& n = **it;
    bool needed = false;
    for (const Value* out : n.outputs()) needed |= live.count(out) > 0;
    if (!needed) continue;
    liveNodes.insert(&n);
    for (const Value* in : n.inputs())
      if (in) live.insert(in);
  }
  size_t before = g.nodes().size();
  g.eraseNodes([&](const Node& n) { return !liveNodes.count(&n); });
  ctx.count("nodes removed", int64_t(before - g.nodes().size()));
  size_t inits = g.initializers().size();
  g.eraseInitializers([&](const Value* v) { return !live.count(v); });
  ctx.count("initializers removed", int64_t(inits - g.initializers().size()));
}

}  // namespace friction
