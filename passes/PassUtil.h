// Small utilities shared by passes: rewiring uses, reading constants,
// re-running inference after a rewrite.
#pragma once
#include <functional>
#include <unordered_map>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/Graph.h"

namespace friction {

// Redirects every use of `from` (node inputs and graph outputs) to `to`. One
// sweep over the graph; for many rewrites use UseIndex instead. The caller
// makes sure `to` is defined before every user of `from`.
void replaceAllUses(Graph& g, Value* from, Value* to);
// The same for many values at once (one sweep); nodes for which `skip` is true keep their inputs.
void replaceAllUses(Graph& g, const std::unordered_map<const Value*, Value*>& replace,
                    const std::function<bool(const Node&)>& skip = nullptr);

// Users of every value, kept current by its rewiring methods, so a pass
// doing many rewrites does not sweep the graph for each one.
class UseIndex {
 public:
  explicit UseIndex(Graph& g);
  // Nodes reading `v`, once per input slot (a node reading v twice is listed twice).
  const std::vector<Node*>& users(const Value* v) const;
  bool isGraphOutput(const Value* v) const;
  // No node reads it and it is not a graph output.
  bool unused(const Value* v) const { return users(v).empty() && !isGraphOutput(v); }
  // True when no output of `n` is used (the node is dead).
  bool unused(const Node& n) const;
  // Sets input `i` of `n` to `v` (nullptr detaches it).
  void setInput(Node& n, size_t i, Value* v);
  // Redirects node inputs and graph outputs reading `from` to `to`.
  void replaceAllUses(Value* from, Value* to);

 private:
  Graph& g_;
  std::unordered_map<const Value*, std::vector<Node*>> users_;
  std::unordered_map<const Value*, int> outputs_;  // graph-output count per value
};

// The data of `v` when it is an initializer or a Constant node's output, else nullptr.
const Tensor* constantData(const Value* v);
// The static integer elements of a small 1-D/0-D value: from its data or from
// shape tracking (knownContents). Nullopt when any element is unknown or symbolic.
std::optional<std::vector<int64_t>> staticInts(const Value* v);
// True when every element of `t` equals `x`.
bool isSplat(const Tensor& t, double x);
// True when the node has a subgraph attribute (Fused, If, Loop, ...).
bool hasRegion(const Node& n);
// Ops whose every evaluation may give another result: never fold or merge them.
bool isNondeterministic(const std::string& op);

// Re-runs inference on `n` after its inputs changed. A stored output type
// that refines the new inference (knows a dim inference leaves unknown, e.g.
// from the model's declaration) is kept, as the verifier allows. Returns true
// when an output type or tracked contents changed.
bool reinferNode(Node& n);

}  // namespace friction
