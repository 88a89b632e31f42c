#include <set>

#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/FusedRegion.h"
#include "ir/Specialize.h"
#include "ir/TextFormat.h"
#include "ir/Verifier.h"
#include "runtime/interp/Interpreter.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {

std::map<std::string, int64_t> plan(Graph& g) {
  RunOptions r;
  r.verifyEach = true;
  return runPipeline(g, buildPipeline(PipelineOptions{.passes = {"plan-memory"}}), r).back().stats;
}

template <typename T>
const T& meta(const Graph& g, const std::string& k) {
  return std::get<T>(g.metadata().at(k));
}

// No two values whose live intervals overlap share bytes, but for a Concat input placed in its result
// (memory.within), which lies inside the result's bytes; arena <= naive.
void checkPlan(const Graph& g) {
  const auto& names = meta<std::vector<std::string>>(g, "memory.values");
  const auto& offsets = meta<std::vector<int64_t>>(g, "memory.offsets");
  const auto& sizes = meta<std::vector<int64_t>>(g, "memory.sizes");
  const auto& within = meta<std::vector<std::string>>(g, "memory.within");
  ASSERT_EQ(names.size(), within.size());
  int64_t arena = meta<int64_t>(g, "memory.arena_bytes"), naive = meta<int64_t>(g, "memory.naive_bytes");
  ASSERT_EQ(names.size(), offsets.size());
  ASSERT_EQ(names.size(), sizes.size());
  EXPECT_LE(arena, naive);
  // Live intervals recomputed independently, from the node order.
  std::map<std::string, std::pair<int, int>> live;
  for (int i = 0; i < int(g.nodes().size()); ++i) {
    for (const Value* in : g.nodes()[i]->inputs())
      if (in && live.count(in->name())) live[in->name()].second = i;
    for (const Value* out : g.nodes()[i]->outputs()) live[out->name()] = {i, i};
  }
  for (size_t a = 0; a < names.size(); ++a) {
    EXPECT_EQ(offsets[a] % 64, 0);
    EXPECT_LE(offsets[a] + sizes[a], arena);
    for (size_t b = 0; b < names.size(); ++b) {
      if (within[a] == names[b]) {
        EXPECT_TRUE(offsets[b] <= offsets[a] && offsets[a] + sizes[a] <= offsets[b] + sizes[b]) << names[a];
      }
    }
    for (size_t b = a + 1; b < names.size(); ++b) {
      if (within[a] == names[b] || within[b] == names[a]) continue;
      auto [da, la] = live.at(names[a]);
      auto [db, lb] = live.at(names[b]);
      bool liveTogether = da <= lb && db <= la;
      bool shareBytes = offsets[a] < offsets[b] + sizes[b] && offsets[b] < offsets[a] + sizes[a];
      ASSERT_FALSE(liveTogether && shareBytes) << names[a] << " and " << names[b];
    }
  }
}

}  // namespace

TEST(PlanMemory, ChainNeedsTwoBuffers) {
  // a -> b -> c -> d, 4 KiB each: two buffers suffice (d is the output: not planned).
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1024]
  %a : f32[1024] = Relu(%x) @"n1"
  %b : f32[1024] = Neg(%a) @"n2"
  %c : f32[1024] = Relu(%b) @"n3"
  %e : f32[1024] = Neg(%c) @"n4"
  %d : f32[1024] = Relu(%e) @"n5"
  output %d
}
)");
  auto stats = plan(*g);
  checkPlan(*g);
  EXPECT_EQ(stats["values planned"], 4);
  EXPECT_EQ(stats["naive bytes"], 4 * 4096);
  EXPECT_LE(stats["arena bytes"], 2 * 4096);
  EXPECT_EQ(stats["peak live bytes"], 2 * 4096);
}

// NCHW channels at batch 1 are contiguous blocks of the Concat's result: both inputs are placed inside it, so
// their producers write the result and the Concat copies nothing. At batch 2 the blocks interleave: no.
TEST(PlanMemory, ConcatInputsArePlacedInTheResultWhenContiguous) {
  for (int batch : {1, 2}) {
    auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[)" + std::to_string(batch) + R"(,16,8,8]
  %a : f32[)" + std::to_string(batch) + R"(,16,8,8] = Relu(%x) @"n1"
  %b : f32[)" + std::to_string(batch) + R"(,16,8,8] = Neg(%x) @"n2"
  %c : f32[)" + std::to_string(batch) + R"(,32,8,8] = Concat(%a, %b) {axis = 1} @"n3"
  %d : f32[)" + std::to_string(batch) + R"(,32,8,8] = Relu(%c) @"n4"
  output %d
}
)");
    auto stats = plan(*g);
    checkPlan(*g);
    const auto& names = meta<std::vector<std::string>>(*g, "memory.values");
    const auto& offsets = meta<std::vector<int64_t>>(*g, "memory.offsets");
    const auto& within = meta<std::vector<std::string>>(*g, "memory.within");
    std::map<std::string, std::pair<int64_t, std::string>> at;
    for (size_t i = 0; i < names.size(); ++i) at[names[i]] = {offsets[i], within[i]};
    if (batch == 1) {
      EXPECT_EQ(stats["concat inputs in place"], 2);
      EXPECT_EQ(at["a"], std::make_pair(at["c"].first, std::string("c")));
      EXPECT_EQ(at["b"], std::make_pair(at["c"].first + 16 * 64 * 4, std::string("c")));
    } else {
      EXPECT_EQ(stats["concat inputs in place"], 0);
      EXPECT_EQ(at["a"].second, "");
    }
  }
}

TEST(PlanMemory, SkipsSymbolicShapes) {
  auto g = zoo::build(zoo::parseSpec("mlp?depth=2"));
  auto stats = plan(*g);
  EXPECT_EQ(stats["skipped (symbolic shapes)"], 1);
  EXPECT_FALSE(g->metadata().count("memory.values"));
}

TEST(PlanMemory, OnlyAnnotates) {
  auto g = zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=16&batch=1"));
  std::string before = structuralText(*g);
  plan(*g);
  g->metadata().clear();
  EXPECT_EQ(structuralText(*g), before);
}

class PlanZoo : public ::testing::TestWithParam<const char*> {};
TEST_P(PlanZoo, NoOverlapAndSameNumerics) {
  std::string spec = GetParam();
  auto g = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*g, batchBindings(*g, 2));
  auto stats = plan(*g);
  checkPlan(*g);
  EXPECT_LE(stats["peak live bytes"], stats["arena bytes"]);
  std::printf("%s: arena %lld B, naive %lld B, peak live %lld B\n", spec.c_str(), (long long)stats["arena bytes"],
              (long long)stats["naive bytes"], (long long)stats["peak live bytes"]);
}
INSTANTIATE_TEST_SUITE_P(Archetypes, PlanZoo,
                         ::testing::Values("resnet?depth=3&width=8&resolution=16", "mobilenetv2?depth=2&width=8&resolution=16",
                                           "convnext?depth=3&width=16&resolution=32",
                                           "vit?depth=3&width=16&resolution=16&patch=8&heads=2",
                                           "mixer?depth=3&width=16&resolution=16&patch=8", "mlp?depth=3"));

TEST(PlanMemory, AfterTheDefaultPipeline) {
  // Planned last, over Fused regions; still no overlap.
  auto g = zoo::build(zoo::parseSpec("resnet?depth=3&width=8&resolution=16"));
  bindInputDims(*g, batchBindings(*g, 1));
  RunOptions r;
  r.verifyEach = true;
  runPipeline(*g, buildPipeline(PipelineOptions{}), r);
  checkPlan(*g);
}


// dedup-patterns' instances share one body; plan-memory gives it a plan of its own, checked like the top level's.
TEST(PlanMemory, PlansEachPatternBodyOnce) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 16}});
  for (int i = 0; i < 3; ++i) x = b.op("Tanh", {b.op("Relu", {b.op("Neg", {x})})});
  b.output(x);
  runPipeline(g, buildPipeline(PipelineOptions{.passes = {"dedup-patterns"}}));
  std::set<const Graph*> bodies;
  for (const auto& n : g.nodes())
    if (auto r = FusedRegion::of(*n); r && r->kind() == RegionKind::Pattern) bodies.insert(&r->body());
  ASSERT_EQ(bodies.size(), 1u) << printGraph(g);
  auto stats = plan(g);
  EXPECT_EQ(stats["pattern bodies planned"], 1);
  const Graph& body = **bodies.begin();
  checkPlan(body);
  EXPECT_EQ(meta<std::vector<std::string>>(body, "memory.values").size(), 2u) << "Neg's and Relu's results";
  EXPECT_EQ(meta<int64_t>(body, "memory.arena_bytes"), 2 * 4 * 16 * 4) << "live together at Relu";
}

TEST(PlanMemory, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"plan-memory"}); }
