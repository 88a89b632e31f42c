// Who reads which value: the one use index of the IR, shared by the passes,
// the code generators and the vendor bridges. Built in one sweep over a graph;
// the rewiring methods keep it current, so a pass doing many rewrites never
// sweeps the graph again for each one.
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/Graph.h"

namespace friction {

class UseIndex {
 public:
  // Read-only: the rewiring methods below refuse to work on it.
  explicit UseIndex(const Graph& g);
  // Rewirable: setInput and replaceAllUses change `g`.
  explicit UseIndex(Graph& g);

  // Nodes reading `v`, once per input slot (a node reading v twice is listed twice).
  const std::vector<Node*>& users(const Value* v) const;
  bool isGraphOutput(const Value* v) const { return outputs_.count(v) > 0; }
  // The one node reading `v`, when `v` has exactly one use and is not a graph output.
  Node* soleUser(const Value* v) const;
  // No node reads it and it is not a graph output.
  bool unused(const Value* v) const { return users(v).empty() && !isGraphOutput(v); }
  // True when no output of `n` is used (the node is dead).
  bool unused(const Node& n) const;
  // The position of `n` in the graph's (topological) node order when the
  // index was built: nodes added later or a re-sorted graph need a new index.
  size_t position(const Node* n) const { return position_.at(n); }

  // Sets input `i` of `n` to `v` (nullptr detaches it).
  void setInput(Node& n, size_t i, Value* v);
  // Redirects node inputs and graph outputs reading `from` to `to`.
  void replaceAllUses(Value* from, Value* to);

 private:
  const Graph& g_;
  Graph* mutable_ = nullptr;
  std::unordered_map<const Value*, std::vector<Node*>> users_;
  std::unordered_map<const Value*, int> outputs_;  // graph-output count per value
  std::unordered_map<const Node*, size_t> position_;
};

}  // namespace friction
