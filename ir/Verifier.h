// The IR verifier: run after import, after every pass in tests and debug runs.
#pragma once
#include "ir/Graph.h"

namespace friction {

// Structural checks: every value defined exactly once (graph input,
// initializer, or one node output), every node input defined before use
// (hence acyclic and topologically ordered), graph outputs defined, arity and
// attributes valid for the op. Throws Error naming the node or value.
void verifyStructure(const Graph& graph);
// verifyStructure plus types: re-runs inference on every node and checks
// that the stored output types match what inference computes.
void verify(Graph& graph);

}  // namespace friction
