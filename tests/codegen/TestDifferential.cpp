// Differential testing of the compiler: random valid graphs
// (tests/common/RandomGraph.h) through every pass configuration (default,
// all-off, every leave-one-out) on `cpu`, and default and all-off on
// `cpu?ukernels=off` (MLIR-generated convolutions and matmuls) and on
// `cpu?target=cuda-nests` (the cuda target's loop nests on the host), and on
// `halide` (friction's schedule, producers inlined and materialized), each against
// the reference interpreter on the unoptimized graph; the same graphs in f16
// and bf16 too. A mismatch prints the
// seed, the configuration, the graph in friction's text format and the graph
// minimized (tests/common/GraphReducer.h) to the nodes the mismatch needs;
// FRICTION_DIFFERENTIAL_SAVE=DIR also writes the minimized graph there, to
// keep under tests/codegen/regressions/ (checked by RegressionGraphs below).
// FRICTION_DIFFERENTIAL_SEEDS=N runs seeds [0, N) instead of the bounded CI
// set; FRICTION_DIFFERENTIAL_BACKENDS="SPEC ..." adds backends (default and
// all-off on each), such as Halide's autoschedulers, which take seconds a
// graph and are checked on fixed models in CI (TestHalideBackend.cpp).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/Registration.h"
#include "codegen/halide/Registration.h"
#include "ir/Builder.h"
#include "ir/OpRegistry.h"
#include "ir/TextFormat.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "tests/common/BackendTestUtil.h"
#include "tests/common/GraphReducer.h"
#include "tests/common/RandomGraph.h"

namespace friction {
namespace {

struct Config {
  std::string label;
  PipelineOptions options;
  std::string backend = "cpu";
};

std::vector<Config> everyConfiguration() {
  std::vector<Config> configs = {{"default", {}}, {"none", {}}};
  configs[1].options.passes = {"none"};
  for (const PassInfo& p : allPasses()) {
    configs.push_back({"without " + p.name, {}});
    configs.back().options.disable = {p.name};
  }
  const std::string mlirKernels = "cpu?ukernels=off";
  configs.push_back({"default on " + mlirKernels, {}, mlirKernels});
  configs.push_back({"none on " + mlirKernels, configs[1].options, mlirKernels});
  // The cuda target's loop nests on the host: the GPU's tiling and indexing, Structured kernels included.
  const std::string gpuNests = "cpu?target=cuda-nests&gpu-block=32";
  configs.push_back({"default on " + gpuNests, {}, gpuNests});
  configs.push_back({"none on " + gpuNests, configs[1].options, gpuNests});
  // The second kernel compiler: every kernel a Halide pipeline, loop-level fusion both ways.
  for (const std::string halide : {"halide", "halide?fusion=root"}) {
    configs.push_back({"default on " + halide, {}, halide});
    configs.push_back({"none on " + halide, configs[1].options, halide});
  }
  // More backends by request (the autoschedulers take seconds a graph, too long for every CI seed).
  const char* extraBackends = std::getenv("FRICTION_DIFFERENTIAL_BACKENDS");
  std::istringstream extra(extraBackends ? extraBackends : "");
  for (std::string spec; extra >> spec;) {
    configs.push_back({"default on " + spec, {}, spec});
    configs.push_back({"none on " + spec, configs[1].options, spec});
  }
  return configs;
}

// How close a program's outputs must be to interp's: rtol relative to each element, with a floor of
// rtol * floor * the output's largest magnitude (test::Tolerance).
struct Tolerances {
  double rtol = 1e-4, floor = 1e-2;
};

// The first output of `c`'s program on `g` that differs from interp beyond the tolerance, or "".
std::string firstMismatch(const Graph& g, const Config& c, Backend& backend, const std::vector<Tensor>& inputs,
                          const std::vector<Tensor>& want, const Tolerances& tol) {
  auto optimized = cloneGraph(g);
  runPipeline(*optimized, buildPipeline(c.options));
  auto got = backend.compile(*optimized)->run(inputs);
  if (got.size() != want.size()) return "output count";
  for (size_t i = 0; i < want.size(); ++i)
    if (!test::closeEnough(got[i], want[i], tol.rtol, tol.floor)) return "output " + std::to_string(i);
  return "";
}

// Prints (and with FRICTION_DIFFERENTIAL_SAVE writes) `g` minimized to what still mismatches under `c`.
void reportMinimized(const Graph& g, const Config& c, Backend& backend, uint64_t inputSeed, const std::string& what,
                     const Tolerances& tol) {
  auto still = [&](const Graph& candidate) {
    auto inputs = seededInputs(candidate, inputSeed);
    return !firstMismatch(candidate, c, backend, inputs, interp::run(candidate, inputs), tol).empty();
  };
  if (!still(g)) return;  // a failure the reducer cannot reproduce (a crash in the comparison itself)
  auto small = test::minimizeGraph(g, still);
  std::cout << what << " minimized to " << small->nodes().size() << " of " << g.nodes().size()
            << " nodes, still mismatching under " << c.label << ":\n" << printGraph(*small) << "\n";
  if (const char* dir = std::getenv("FRICTION_DIFFERENTIAL_SAVE")) {
    std::string name = what;
    for (char& ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    std::ofstream(std::filesystem::path(dir) / (name + ".fir")) << printGraph(*small);
  }
}

// Runs the graph `make` builds under every configuration on one cpu backend;
// returns the nodes left to the interpreter, summed over configurations.
int64_t expectEveryConfigurationMatches(const std::function<std::unique_ptr<Graph>()>& make, const std::string& what,
                                        uint64_t inputSeed, const Tolerances& tol = {}) {
  auto reference = make();
  // For a crash or a hang, which print nothing: the graph before it runs.
  if (std::getenv("FRICTION_DIFFERENTIAL_PRINT")) std::cout << what << ":\n" << printGraph(*reference) << std::endl;
  auto inputs = seededInputs(*reference, inputSeed);
  auto want = interp::run(*reference, inputs);
  std::map<std::string, std::shared_ptr<Backend>> backends;  // one kernel cache per backend spec
  int64_t interpNodes = 0;
  bool printed = false;
  for (const Config& c : everyConfiguration()) {
    auto& backend = backends[c.backend];
    if (!backend) backend = createBackend(c.backend);
    auto g = make();
    runPipeline(*g, buildPipeline(c.options));
    auto model = backend->compile(*g);
    auto got = model->run(inputs);
    interpNodes += model->interpNodes();
    EXPECT_EQ(got.size(), want.size()) << what << ", " << c.label;
    if (got.size() != want.size()) continue;
    for (size_t i = 0; i < want.size(); ++i)
      test::expectClose(got[i], want[i], tol.rtol, what + ", " + c.label + ", output " + std::to_string(i), tol.floor);
    if (!printed && ::testing::Test::HasFailure()) {
      std::cout << what << " mismatches under " << c.label << "; the graph:\n" << printGraph(*reference) << "\n";
      reportMinimized(*reference, c, *backend, inputSeed, what, tol);
      printed = true;
    }
  }
  return interpNodes;
}

class Differential : public ::testing::TestWithParam<uint64_t> {
 protected:
  static void SetUpTestSuite() {
    codegen::registerCpuBackend();
    codegen::halide::registerHalideBackend();
  }
};

TEST_P(Differential, RandomGraphMatchesInterpUnderEveryConfiguration) {
  const uint64_t seed = GetParam();
  int64_t interpNodes = expectEveryConfigurationMatches([&] { return test::randomGraph(seed); },
                                                        "random graph seed " + std::to_string(seed), seed);
  std::cout << "seed " << seed << ": " << everyConfiguration().size() << " configurations, " << interpNodes
            << " nodes on the interpreter over all of them\n";
}

// The random graphs in half precision (every fourth bf16, the others f16), against the interpreter computing each
// op in f32 and rounding its result: widen-half (or, with it off, legalize) must keep that rounding op by op.
// Within four ulps of the type, or two of the output's largest magnitude: kernels sum in other orders than the
// interpreter and approximate exp and tanh otherwise, so a result may round to its neighbour, and a later sum
// that cancels (x * sigmoid(x) + c) or a recurrence carries that ulp of its operands into a smaller result.
class DifferentialHalf : public Differential {};

TEST_P(DifferentialHalf, HalfPrecisionRandomGraphMatchesInterpUnderEveryConfiguration) {
  const uint64_t seed = GetParam();
  const DType half = seed % 4 == 3 ? DType::BF16 : DType::F16;
  const double ulp = half == DType::F16 ? 1.0 / 1024 : 1.0 / 128;
  auto make = [&] {
    auto g = test::randomGraph(seed);
    test::toHalfPrecision(*g, half);
    return g;
  };
  int64_t interpNodes = expectEveryConfigurationMatches(
      make, std::string(dtypeName(half)) + " random graph seed " + std::to_string(seed), seed, {4 * ulp, 0.5});
  std::cout << dtypeName(half) << " seed " << seed << ": " << interpNodes
            << " nodes on the interpreter over all configurations\n";
}

std::vector<uint64_t> seeds(uint64_t bounded) {
  uint64_t n = bounded;  // the bounded CI run
  if (const char* env = std::getenv("FRICTION_DIFFERENTIAL_SEEDS")) n = std::strtoull(env, nullptr, 10);
  std::vector<uint64_t> s(n);
  for (uint64_t i = 0; i < n; ++i) s[i] = i;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Seeds, Differential, ::testing::ValuesIn(seeds(48)));
INSTANTIATE_TEST_SUITE_P(Seeds, DifferentialHalf, ::testing::ValuesIn(seeds(16)));

// The reducer keeps what a failure needs: with "contains a Sigmoid" (or a Conv) as the failure, a chain
// around it shrinks to that one node (same-type neighbours bypassed, everything after it cut off); a
// predicate the graph does not satisfy after a move keeps that move from happening.
TEST(GraphReducer, ShrinksToTheNodesTheFailureNeeds) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape::fromStatic({1, 4, 6, 6})});
  Value* t = b.op("Tanh", {b.op("Sigmoid", {b.op("Relu", {x})})});
  Value* conv = b.op("Conv", {t, b.constant(test::randomTensor({8, 4, 3, 3}, 1))},
                     {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.output(b.op("Add", {conv, conv}));
  inferGraph(g);
  auto contains = [](const std::string& op) {
    return [op](const Graph& c) {
      return std::any_of(c.nodes().begin(), c.nodes().end(), [&](const auto& n) { return n->op() == op; });
    };
  };
  for (const std::string op : {"Sigmoid", "Conv"}) {
    auto small = test::minimizeGraph(g, contains(op));
    ASSERT_EQ(small->nodes().size(), 1u) << printGraph(*small);
    EXPECT_EQ(small->nodes()[0]->op(), op);
  }
  // Needing both the Relu and the Add: the nodes between them that keep the types stay bypassable, the Conv
  // (which changes the channels) stays.
  auto both = test::minimizeGraph(g, [&](const Graph& c) { return contains("Relu")(c) && contains("Add")(c); });
  std::vector<std::string> ops;
  for (const auto& n : both->nodes()) ops.push_back(n->op());
  EXPECT_EQ(ops, (std::vector<std::string>{"Relu", "Conv", "Add"})) << printGraph(*both);
}

// Graphs a differential run once found wrong, minimized by hand, kept as regressions.
TEST(DifferentialRegressions, RegressionGraphsMatchInterp) {
  codegen::registerCpuBackend();
  codegen::halide::registerHalideBackend();
  const std::filesystem::path dir = FRICTION_SOURCE_DIR "/tests/codegen/regressions";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no regression graphs yet";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".fir") continue;
    std::ifstream f(e.path());
    std::stringstream text;
    text << f.rdbuf();
    expectEveryConfigurationMatches([&] { return parseGraph(text.str(), e.path().string()); },
                                    e.path().filename().string(), 7);
  }
}

}  // namespace
}  // namespace friction
