// The reference interpreter: the numerical oracle for every pass, backend and
// bridge. Runs nodes in order with the kernels of KernelRegistry, frees each
// intermediate after its last use, and checks inputs against the graph's
// declared types (binding symbolic dims such as the batch).
#pragma once
#include <vector>

#include "ir/Graph.h"

namespace friction::interp {

// Runs `graph` on `inputs` (one per graph input, in order) and returns its outputs.
std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace friction::interp
