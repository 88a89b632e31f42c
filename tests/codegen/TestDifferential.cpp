// Differential testing of the compiler: random valid graphs
// (tests/common/RandomGraph.h) through every pass configuration (default,
// all-off, every leave-one-out) on `cpu`, each against the reference
// interpreter on the unoptimized graph. A mismatch prints the seed, the
// configuration and the graph in friction's text format: save it under
// tests/codegen/regressions/ (checked by RegressionGraphs below) once
// minimized. FRICTION_DIFFERENTIAL_SEEDS=N runs seeds [0, N) instead of the
// bounded CI set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/Registration.h"
#include "ir/TextFormat.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "tests/common/BackendTestUtil.h"
#include "tests/common/RandomGraph.h"

namespace friction {
namespace {

struct Config {
  std::string label;
  PipelineOptions options;
};

std::vector<Config> everyConfiguration() {
  std::vector<Config> configs = {{"default", {}}, {"none", {}}};
  configs[1].options.passes = {"none"};
  for (const PassInfo& p : allPasses()) {
    configs.push_back({"without " + p.name, {}});
    configs.back().options.disable = {p.name};
  }
  return configs;
}

// Runs the graph `make` builds under every configuration on one cpu backend;
// returns the nodes left to the interpreter, summed over configurations.
int64_t expectEveryConfigurationMatches(const std::function<std::unique_ptr<Graph>()>& make, const std::string& what,
                                        uint64_t inputSeed) {
  auto reference = make();
  // For a crash or a hang, which print nothing: the graph before it runs.
  if (std::getenv("FRICTION_DIFFERENTIAL_PRINT")) std::cout << what << ":\n" << printGraph(*reference) << std::endl;
  auto inputs = seededInputs(*reference, inputSeed);
  auto want = interp::run(*reference, inputs);
  auto backend = createBackend("cpu");
  int64_t interpNodes = 0;
  bool printed = false;
  for (const Config& c : everyConfiguration()) {
    auto g = make();
    runPipeline(*g, buildPipeline(c.options));
    auto model = backend->compile(*g);
    auto got = model->run(inputs);
    interpNodes += model->interpNodes();
    EXPECT_EQ(got.size(), want.size()) << what << ", " << c.label;
    if (got.size() != want.size()) continue;
    for (size_t i = 0; i < want.size(); ++i)
      test::expectClose(got[i], want[i], 1e-4, what + ", " + c.label + ", output " + std::to_string(i));
    if (!printed && ::testing::Test::HasFailure()) {
      std::cout << what << " mismatches under " << c.label << "; the graph:\n" << printGraph(*reference) << "\n";
      printed = true;
    }
  }
  return interpNodes;
}

class Differential : public ::testing::TestWithParam<uint64_t> {
 protected:
  static void SetUpTestSuite() { codegen::registerCpuBackend(); }
};

TEST_P(Differential, RandomGraphMatchesInterpUnderEveryConfiguration) {
  const uint64_t seed = GetParam();
  int64_t interpNodes = expectEveryConfigurationMatches([&] { return test::randomGraph(seed); },
                                                        "random graph seed " + std::to_string(seed), seed);
  std::cout << "seed " << seed << ": " << everyConfiguration().size() << " configurations, " << interpNodes
            << " nodes on the interpreter over all of them\n";
}

std::vector<uint64_t> seeds() {
  uint64_t n = 48;  // the bounded CI run
  if (const char* env = std::getenv("FRICTION_DIFFERENTIAL_SEEDS")) n = std::strtoull(env, nullptr, 10);
  std::vector<uint64_t> s(n);
  for (uint64_t i = 0; i < n; ++i) s[i] = i;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Seeds, Differential, ::testing::ValuesIn(seeds()));

// Graphs a differential run once found wrong, minimized by hand, kept as regressions.
TEST(DifferentialRegressions, RegressionGraphsMatchInterp) {
  codegen::registerCpuBackend();
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
