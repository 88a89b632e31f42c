// Deterministic model inputs for run, bench and tests.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/Graph.h"

namespace friction {

// One tensor per graph input: floats uniform in [-1, 1) from a seeded
// generator, integers and bools zero (safe as indices). Fails on dims that
// are still symbolic, naming the input.
std::vector<Tensor> seededInputs(const Graph& graph, uint64_t seed);

}  // namespace friction
