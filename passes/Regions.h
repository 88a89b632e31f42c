// Shared code of the fusion passes (fuse-epilogues, fuse-reductions,
// fuse-elementwise): use analysis, the single-use chain and Erf-GELU
// matchers, the convexity (no-cycle) check, and the region builder that turns
// a set of nodes into one `Fused` node.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "passes/Pass.h"

namespace friction {

// Who uses what, and the topological position of every node, for one state
// of a graph (recompute after rewriting it).
class UseInfo {
 public:
  explicit UseInfo(const Graph& g);
  // Consumer nodes, one entry per use (a node using a value twice appears twice).
  const std::vector<Node*>& users(const Value* v) const;
  bool isGraphOutput(const Value* v) const { return graphOutputs_.count(v) > 0; }
  // The consumer of `v` when it has exactly one use and is not a graph output.
  Node* soleUser(const Value* v) const;
  size_t index(const Node* n) const { return index_.at(n); }
  const Graph& graph() const { return g_; }

 private:
  const Graph& g_;
  std::unordered_map<const Value*, std::vector<Node*>> users_;
  std::unordered_set<const Value*> graphOutputs_;
  std::unordered_map<const Node*, size_t> index_;
};

// The data of an initializer or a Constant node's output, else nullptr.
const Tensor* constantOf(const Value* v);
inline bool isOp(const Node* n, const char* op) { return n && n->op() == op; }

// Follows single-use edges from `start`'s first output while `accept` takes
// the next node (it sees the value flowing in). Returns the nodes taken, in order.
template <typename Accept>
std::vector<Node*> followSingleUse(const UseInfo& u, const Node* start, Accept accept) {
  std::vector<Node*> chain;
  const Value* cur = start->output(0);
  while (Node* next = u.soleUser(cur)) {
    if (next->numOutputs() != 1 || !accept(next, cur)) break;
    chain.push_back(next);
    cur = next->output(0);
  }
  return chain;
}

// Erf-GELU as exporters write it: x/√2 (or x·(1/√2)) → Erf → +1 → ·x → ·0.5,
// the two Muls in either order. Returns its nodes when every value between x
// and the result stays inside the pattern (x itself may have other uses).
std::vector<Node*> matchErfGelu(const UseInfo& u, const Value* x);

// True when no path leaves `region` and re-enters it, i.e. contracting it
// into one node keeps the graph acyclic.
bool isConvex(const UseInfo& u, const std::unordered_set<const Node*>& region);

// Replaces `nodes` of `g` by one Fused node of `kind` whose body holds them.
// Region inputs are the values they use but do not define (in first-use
// order); region outputs are the values used after the region or returned
// by the graph. Returns nullptr (and counts "regions rejected (cycle)") when
// the region is not convex in the current graph. Counts "regions" and
// "nodes fused"; re-sorts `g`. Other nodes of `g` stay valid.
Node* fuseRegion(Graph& g, const std::vector<Node*>& nodes, const std::string& kind, PassContext& ctx);
// The same for many disjoint regions with exactly one output each (chains),
// with one use analysis and one sort for all: linear in graph size.
void fuseSingleOutputRegions(Graph& g, const std::vector<std::vector<Node*>>& regions, const std::string& kind,
                             PassContext& ctx);

}  // namespace friction
