// Helpers for pass tests, in two styles:
//  - structure (TVM style): run a pass on a `before` graph written in text IR
//    and compare with an `expected` graph, up to value and node names;
//  - numerics (ONNX Runtime TransformerTester style): run a model with and
//    without a pass on the reference interpreter and compare outputs.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/FusedRegion.h"
#include "ir/Graph.h"
#include "ir/Structural.h"
#include "passes/PassManager.h"

namespace friction::testing {

// Parses `before`, runs `pass` (verifying after), and expects the result to
// equal `expected` structurally. Returns the pass's statistics.
std::map<std::string, int64_t> expectPassRewrites(const std::string& pass, const std::string& before,
                                                  const std::string& expected);

using ModelBuilder = std::function<std::unique_ptr<Graph>()>;

// Every zoo archetype at small knobs and every PyTorch fixture ("torch/NAME"
// is tests/models/torch/NAME/model.onnx): the models numerics tests run on.
extern const std::vector<std::string> kNumericsModels;
// Builds (or imports) the model fresh on each call.
ModelBuilder modelBuilder(const std::string& spec);
// A gtest-safe name for a parameterized test over kNumericsModels.
std::string testNameOf(const ::testing::TestParamInfo<std::string>& info);
// A pipeline of exactly these passes.
PipelineOptions exactly(std::vector<std::string> passes);

// Runs `pipeline` on a copy of the model (built twice by `build`) and expects
// the outputs on seeded inputs to match the unoptimized model within
// tolerances. `batch` binds the symbolic batch first.
void expectSameNumerics(const ModelBuilder& build, const PipelineOptions& pipeline, int64_t batch = 2,
                        double rtol = 1e-4, double atol = 1e-5);
// The same, but the passes run while the batch is still symbolic; batch 2 is bound afterwards.
void expectSameNumericsSymbolic(const ModelBuilder& build, const std::vector<std::string>& passes,
                                double rtol = 1e-4, double atol = 1e-5);
// expectSameNumerics with exactly `passes` on every model of kNumericsModels.
void expectSameNumericsOnAllModels(const std::vector<std::string>& passes);
// Runs `passes` on a zoo model (batch symbolic), exports to ONNX (the checker
// runs), re-imports, and expects the same outputs at batch 2. Returns the records.
std::vector<PassRecord> expectExportRoundTrip(const std::string& spec, const std::vector<std::string>& passes);

}  // namespace friction::testing
