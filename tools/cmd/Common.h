// Helpers shared by CLI commands.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::cli {

// Loads MODEL and, when the graph has a symbolic batch, binds it to `batch`.
std::unique_ptr<Graph> loadForBatch(const std::string& spec, int64_t batch);
// Deterministic inputs for every graph input: floats uniform in [-1, 1),
// integers and bools zero. Fails on dims that are still symbolic.
std::vector<Tensor> makeInputs(const Graph& graph, uint64_t seed);
// "1.23 G" style numbers.
std::string humanCount(double v);

}  // namespace friction::cli
