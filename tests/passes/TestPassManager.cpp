// Pipeline resolution rules, on a small registry with prerequisites.
#include <gtest/gtest.h>

#include "ir/Error.h"
#include "passes/PassManager.h"

using namespace friction;

namespace {

void noop(Graph&, PassContext&) {}

// a <- b <- c: b needs a, c needs b.
const std::vector<PassInfo> kRegistry = {
    {"a", "", {}, {"plan"}, noop},
    {"b", "", {"a"}, {}, noop},
    {"c", "", {"b"}, {}, noop},
    {"plan", "", {}, {}, noop},
};

std::vector<std::string> names(const std::vector<const PassInfo*>& p) {
  std::vector<std::string> r;
  for (const auto* x : p) r.push_back(x->name);
  return r;
}

template <typename F>
void expectError(F&& f, const std::string& part) {
  try {
    f();
    FAIL() << "expected an error mentioning " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(PassManager, DefaultIsRegistryOrder) {
  EXPECT_EQ(names(buildPipelineFrom(kRegistry, {})), (std::vector<std::string>{"a", "b", "c", "plan"}));
}

TEST(PassManager, OnlyAddsPrerequisitesWithANote) {
  std::vector<std::string> notes;
  EXPECT_EQ(names(buildPipelineFrom(kRegistry, PipelineOptions{.only = {"c"}}, &notes)),
            (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "c needs b: added");
}

TEST(PassManager, DisablingAPrerequisiteIsRefused) {
  expectError([] { buildPipelineFrom(kRegistry, PipelineOptions{.disable = {"a"}}); }, "cannot disable a: b needs it");
  // Disabling the dependents too is fine.
  EXPECT_EQ(names(buildPipelineFrom(kRegistry, PipelineOptions{.disable = {"a", "b", "c"}})),
            (std::vector<std::string>{"plan"}));
}

TEST(PassManager, ExplicitOrderMustRespectPrerequisites) {
  EXPECT_EQ(names(buildPipelineFrom(kRegistry, PipelineOptions{.passes = {"a", "b"}})),
            (std::vector<std::string>{"a", "b"}));
  expectError([] { buildPipelineFrom(kRegistry, PipelineOptions{.passes = {"b", "a"}}); }, "b needs a to run before it");
}

TEST(PassManager, UnknownNamesAndMixedSwitchesAreRefused) {
  expectError([] { buildPipelineFrom(kRegistry, PipelineOptions{.disable = {"zap"}}); }, "unknown pass 'zap'");
  expectError([] { buildPipelineFrom(kRegistry, PipelineOptions{.disable = {"c"}, .only = {"a"}}); }, "only one of");
}

TEST(PassManager, InvalidatedAnalysisRerunsAtTheEnd) {
  // `plan` first, then `a`, which invalidates it: plan runs again last.
  std::vector<const PassInfo*> pipeline = {&kRegistry[3], &kRegistry[0]};
  Graph g;
  auto records = runPipeline(g, pipeline);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2].name, "plan");
}

// The design's eleven, and widen-half first (friction's extension: half-precision models on f32 kernels).
TEST(PassManager, RealRegistryHasTheElevenPassesOfTheDesign) {
  std::vector<std::string> want = {"widen-half", "fold-constants", "simplify-algebra", "eliminate-common-subexpressions",
                                   "eliminate-dead-code", "fold-batchnorm", "convert-layout", "fuse-epilogues",
                                   "fuse-reductions", "fuse-elementwise", "dedup-patterns", "plan-memory"};
  EXPECT_EQ(names(buildPipeline({})), want);
}
