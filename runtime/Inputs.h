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

// Checks run-time inputs against the graph's (count, dtype, shape; each symbolic dim bound to one extent): the
// one-line error every executor of friction's own gives for a wrong input, before a kernel reads it.
void checkInputs(const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace friction
