// fuse-elementwise: groups of connected elementwise/broadcast ops become one
// `Fused` node of kind "elementwise" (groups of two or more ops).
//
// Groups grow from consumers to producers, visiting nodes in reverse
// topological order. A producer joins the group of its consumers when all
// its uses are in that group (its value stays inside the kernel). When only
// some uses are, it may still join with its value as a region output, but
// only if the group stays convex: no path may leave the group and re-enter
// it (contracting it would create a cycle). Each group is checked again when
// it is built, since contracting earlier groups can close a cycle too.
//
// Elementwise ops are the ops with the Elementwise trait (ir/OpTraits.def).
// Skipped: ops on shape arithmetic (values with known contents, which
// fold-constants and shape inference rely on), ops on constants only, and
// multi-output ops (Dropout).
#include "ir/OpRegistry.h"
#include "passes/Regions.h"

namespace friction {
namespace {

bool isElementwise(const Node& n) {
  if (!hasTrait(n, OpTrait::Elementwise) || n.numOutputs() != 1 || n.output(0)->knownContents()) return false;
  for (const Value* v : n.inputs())
    if (v && !constantData(v)) return true;
  return false;
}

}  // namespace

void fuseElementwise(Graph& g, PassContext& ctx) {
  UseIndex u(g);
  std::unordered_map<const Node*, size_t> groupOf;
  struct Group {
    std::vector<Node*> nodes;
    std::unordered_set<const Node*> set;
  };
  std::vector<Group> groups;
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    Node* n = it->get();
    if (!isElementwise(*n)) continue;
    const auto& users = u.users(n->output(0));
    // The group of the first consumer that has one.
    size_t join = SIZE_MAX;
    bool allInside = !users.empty() && !u.isGraphOutput(n->output(0));
    for (Node* c : users) {
      auto found = groupOf.find(c);
      if (join == SIZE_MAX && found != groupOf.end()) join = found->second;
      allInside &= found != groupOf.end() && found->second == join;
    }
    if (join != SIZE_MAX && !allInside) {
      // Joining as a region output: only when no path leads back into the group.
      groups[join].set.insert(n);
      if (isConvex(u, groups[join].set)) {
        groups[join].nodes.push_back(n);
      } else {
        groups[join].set.erase(n);
        ctx.count("joins rejected (cycle)");
        join = SIZE_MAX;
      }
    } else if (join != SIZE_MAX) {
      groups[join].nodes.push_back(n);  // all uses inside: stays convex
      groups[join].set.insert(n);
    }
    if (join == SIZE_MAX) {
      join = groups.size();
      groups.push_back({{n}, {n}});
    }
    groupOf[n] = join;
  }
  for (const auto& group : groups)
    if (group.nodes.size() >= 2) fuseRegion(g, group.nodes, RegionKind::Elementwise, ctx);
}

}  // namespace friction
