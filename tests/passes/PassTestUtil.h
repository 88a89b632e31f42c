// Helpers for pass tests, in two styles:
//  - structure (TVM style): run a pass on a `before` graph written in text IR
//    and compare with an `expected` graph, up to value and node names;
//  - numerics (ONNX Runtime TransformerTester style): run a model with and
//    without a pass on the reference interpreter and compare outputs.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/Graph.h"
#include "passes/PassManager.h"

namespace friction::testing {

// Text IR without names: values are numbered in definition order and node
// names dropped, so two graphs compare equal when they have the same
// structure, types, attributes and constants.
std::string canonicalText(const Graph& g);

// Parses `before`, runs `pass` (verifying after), and expects the result to
// equal `expected` structurally. Returns the pass's statistics.
std::map<std::string, int64_t> expectPassRewrites(const std::string& pass, const std::string& before,
                                                  const std::string& expected);

// Runs `pipeline` on a copy of `model` (built twice by `build`) and expects the
// outputs on seeded inputs to match the unoptimized model within tolerances.
// `batch` binds the symbolic batch first.
void expectSameNumerics(const std::function<std::unique_ptr<Graph>()>& build, const PipelineOptions& pipeline,
                        int64_t batch = 2, double rtol = 1e-4, double atol = 1e-5);

}  // namespace friction::testing
