// Transpose algebra shared by simplify-algebra and convert-layout. A perm is
// ONNX's: Transpose(x, p) has dim i = x's dim p[i].
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/Graph.h"

namespace friction {

using Perm = std::vector<int64_t>;

// The node's `perm`, or ONNX's default (the dims reversed) for `rank`.
Perm permOf(const Node& transpose, size_t rank);
// Transpose(Transpose(x, p), q) == Transpose(x, composePerms(p, q)).
Perm composePerms(const Perm& p, const Perm& q);
Perm invertPerm(const Perm& p);
bool isIdentityPerm(const Perm& p);
// True when Transpose(x, p) leaves x's elements in memory order (only dims of
// size 1 move relative to the others), so the transpose is a reshape.
bool keepsMemoryOrder(const std::vector<int64_t>& xDims, const Perm& p);

// True for a Transpose node with static shapes whose perm keeps memory order: a reshape in disguise.
bool isReshapingTranspose(const Node& n);

// Reshape(Transpose(x, p), z) written as Transpose(Reshape(Transpose(x, b), u), a):
// the reshape splits and merges groups of dims; b orders x's dims so that
// each group is consecutive (groups by their first dim in x), u is z's dims
// in that group order, and a restores z's order. When b keeps memory order
// the transpose has moved below the reshape; when a does, it has moved above.
// Dims of size 1 go first in b's and u's order. Nullopt for a zero-size dim.
struct TransposedReshape {
  Perm b;
  std::vector<int64_t> u;
  Perm a;
};
std::optional<TransposedReshape> reshapeThroughTranspose(const std::vector<int64_t>& xDims, const Perm& p,
                                                         const std::vector<int64_t>& zDims);

}  // namespace friction
