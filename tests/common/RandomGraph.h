// Random valid graphs for differential testing of the compiler (the way
// NNSmith and YARPGen find compiler bugs): a seed gives a small f32 graph of
// static shapes whose ops are drawn from op families (activations read from
// the registry's Activation trait, so a new activation is covered without
// touching this file, SiLU written as x * Sigmoid(x) and GELU as x/2 (1 + Erf(x/sqrt 2))), with shapes,
// attributes and constants drawn within
// each op's rules, including the patterns the passes look for (conv + bias +
// activation + residual, layout-sensitive ops between elementwise ones,
// softmax and layer normalization, shape ops).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction::test {

struct RandomGraphOptions {
  int minOps = 3, maxOps = 10;
};

// The same seed gives the same graph. Every value has a static f32 type.
std::unique_ptr<Graph> randomGraph(uint64_t seed, const RandomGraphOptions& options = {});

// `g` in half precision: its f32 inputs and constants become `half` (f16 or bf16) ones, and its ops follow
// them by inference (as onnxruntime's float16 converter makes a model, without keeping f32 inputs).
void toHalfPrecision(Graph& g, DType half);

// The op families the generator draws from, for reports.
std::vector<std::string> randomGraphFamilies();

}  // namespace friction::test
