// Shared code of the fusion passes (fuse-epilogues, fuse-reductions,
// fuse-elementwise): the single-use chain matcher, the convexity (no-cycle)
// check, and the region builder that turns a set of nodes into one `Fused`
// node. (The use index and the Erf-GELU matcher are in ir/Uses.h and
// ir/Patterns.h.)
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/FusedRegion.h"
#include "ir/Patterns.h"
#include "ir/Uses.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction {

// Follows single-use edges from `start`'s first output while `accept` takes
// the next node (it sees the value flowing in). Returns the nodes taken, in order.
template <typename Accept>
std::vector<Node*> followSingleUse(const UseIndex& u, const Node* start, Accept accept) {
  std::vector<Node*> chain;
  const Value* cur = start->output(0);
  while (Node* next = u.soleUser(cur)) {
    if (next->numOutputs() != 1 || !accept(next, cur)) break;
    chain.push_back(next);
    cur = next->output(0);
  }
  return chain;
}

// True when no path leaves `region` and re-enters it, i.e. contracting it
// into one node keeps the graph acyclic.
bool isConvex(const UseIndex& u, const std::unordered_set<const Node*>& region);

// Where the small integer constants a region's nodes read (isStructuralConst) go: the fusion passes make
// them operands like any value; legalize()'s regions copy them into the body, where a whole-body kernel
// (KernelAnalysis.h's Graph kind) reads Slice bounds as it reads them outside.
enum class StructuralConstants { Operands, CopiedIn };

// Replaces `nodes` of `g` by one Fused node of `kind` whose body holds them.
// Region inputs are the values they use but do not define (in first-use
// order); region outputs are the values used after the region or returned
// by the graph. Returns nullptr (and counts "regions rejected (cycle)") when
// the region is not convex in the current graph, or (counting "regions left
// alone (dead)") when none of its values is used after it. Counts "regions" and
// "nodes fused"; re-sorts `g`. Other nodes of `g` stay valid.
Node* fuseRegion(Graph& g, const std::vector<Node*>& nodes, RegionKind kind, PassContext& ctx);
// The same for many disjoint regions with exactly one output each (chains),
// with one use analysis and one sort for all: linear in graph size.
void fuseSingleOutputRegions(Graph& g, const std::vector<std::vector<Node*>>& regions, RegionKind kind,
                             PassContext& ctx);
// The same for disjoint regions of any number of outputs, given in an order where none depends, directly or
// through other nodes, on a later one (the steps of an unrolled loop): contracting them together then cannot
// close a cycle.
void fuseRegionsInOrder(Graph& g, const std::vector<std::vector<Node*>>& regions, RegionKind kind, PassContext& ctx,
                        StructuralConstants constants = StructuralConstants::Operands);

}  // namespace friction
