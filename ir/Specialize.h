// Binding symbolic dims (the batch) to concrete sizes and re-inferring.
#pragma once
#include <map>
#include <string>

#include "ir/Graph.h"

namespace friction {

using DimBindings = std::map<std::string, int64_t>;

// Binds every symbolic dim found at axis 0 of a graph input to `batch`.
DimBindings batchBindings(const Graph& graph, int64_t batch);
// Replaces symbolic input dims listed in `bindings` and re-infers all nodes.
// Fails when a bound input dim is static with another value.
void bindInputDims(Graph& graph, const DimBindings& bindings);

}  // namespace friction
