// Small utilities shared by passes: rewiring uses, reading constants,
// re-running inference after a rewrite. (The use index, constant data and
// region accessors every part of friction shares are in ir/: Uses.h,
// Graph.h, FusedRegion.h.)
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/Graph.h"
#include "ir/Uses.h"

namespace friction {

// Redirects every use of `from` (node inputs and graph outputs) to `to`. One
// sweep over the graph; for many rewrites use UseIndex (ir/Uses.h) instead. The caller
// makes sure `to` is defined before every user of `from`.
void replaceAllUses(Graph& g, Value* from, Value* to);
// The same for many values at once (one sweep); nodes for which `skip` is true keep their inputs.
void replaceAllUses(Graph& g, const std::unordered_map<const Value*, Value*>& replace,
                    const std::function<bool(const Node&)>& skip = nullptr);

// The static integer elements of a small 1-D/0-D value: from its data or from
// shape tracking (knownContents). Nullopt when any element is unknown or symbolic.
std::optional<std::vector<int64_t>> staticInts(const Value* v);
// A small integer (or bool) constant: structure rather than data (shapes, axes, indices, Slice bounds), which a
// region's body holds itself so shape inference and the kernel builders inside it still see it.
bool isStructuralConst(const Value* v);
// True when every element of `t` equals `x`.
bool isSplat(const Tensor& t, double x);
// True when the node has a subgraph attribute (Fused, If, Loop, ...).
bool hasRegion(const Node& n);
inline bool isOp(const Node* n, const char* op) { return n && n->op() == op; }

// Re-runs inference on `n` after its inputs changed. A stored output type
// that refines the new inference (knows a dim inference leaves unknown, e.g.
// from the model's declaration) is kept, as the verifier allows. Returns true
// when an output type or tracked contents changed.
bool reinferNode(Node& n);

}  // namespace friction
