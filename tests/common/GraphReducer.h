// Minimizes a failing graph for a regression test (the step after a
// differential mismatch, as C-Reduce or NNSmith's reducer do it): greedy
// shrinking while a predicate -- "the failure still shows" -- holds.
#pragma once
#include <functional>
#include <memory>

#include "ir/Graph.h"

namespace friction::test {

// A graph no larger than `g` for which `stillFails` holds (`g` itself must
// satisfy it). Two moves, repeated until neither shrinks the graph: keep a
// single value as the only output (what does not feed it is dropped), trying
// values in graph order; and bypass a node whose output has the type of one
// of its inputs (its readers take that input; the node is dropped). Each
// candidate is a fresh copy; `stillFails` may throw (counted as "no").
std::unique_ptr<Graph> minimizeGraph(const Graph& g, const std::function<bool(const Graph&)>& stillFails);

}  // namespace friction::test
