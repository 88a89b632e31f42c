// Subgraph patterns that more than one part of friction recognizes (the
// fusion passes, the vendor bridges), matched in one place.
#pragma once
#include <functional>
#include <vector>

#include "ir/Graph.h"
#include "ir/Uses.h"

namespace friction {

// Erf-GELU as exporters write it, y = x * 0.5 * (1 + erf(x / sqrt 2)):
// x/√2 (or x·(1/√2)) → Erf → +1 → ·x → ·0.5, the two Muls in either order.
struct GeluMatch {
  // The pattern's five nodes, the last computing y; empty when there is no
  // match. Every value between x and y has its one use inside the pattern
  // (x itself may have other uses).
  std::vector<Node*> nodes;
  // The constants are √2 (or 1/√2), 1 and 0.5 as f32 scalars: y is GELU
  // exactly. Otherwise the nodes have GELU's shape with other constants.
  bool exact = false;
};
// `constantOf` resolves a value to its constant data (a region body's
// inputs may be bound to constants outside it).
GeluMatch matchErfGelu(const UseIndex& uses, const Value* x,
                       const std::function<const Tensor*(const Value*)>& constantOf = constantData);

// SiLU (Swish) as exporters write it, y = x * sigmoid(x): Sigmoid(x) and a
// Mul of x and its result, in either order; in a half model widened by
// widen-half the Sigmoid's result is rounded (ReducePrecision) before the Mul.
// The nodes (Sigmoid, the rounding if any, Mul last) when the Sigmoid and the
// Mul are x's only uses, x is not a graph output and each node's result has
// the next as its one use; empty otherwise.
std::vector<Node*> matchSilu(const UseIndex& uses, const Value* x);

}  // namespace friction
