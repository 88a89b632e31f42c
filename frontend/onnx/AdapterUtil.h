// The building blocks the opset adapters' rewrites share (OpsetAdapters.cpp, DecomposeAttention.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::onnxio {

// Adds `op` over `in` before `n` is rewritten (the import sorts the nodes afterwards), inferred; its output.
Value* addInferred(Graph& g, const Node& n, const std::string& op, std::vector<Value*> in,
                   std::map<std::string, Attribute> attrs = {});
// Rewrites `n` in place as `op` over `in` (its output value, and so its users, stay).
void becomes(Node& n, const std::string& op, std::vector<Value*> in, std::map<std::string, Attribute> attrs = {});
// The rank of `n`'s input 0, which a rewrite needs; an Error otherwise.
int64_t knownRank(const Node& n);

// Attention (23 and later) written with MatMul, Softmax and the ops of its masks.
void decomposeAttention(Graph& g, Node& n);

}  // namespace friction::onnxio
