#include <chrono>
#include <cstdio>

#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/TextFormat.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {

std::map<std::string, int64_t> runDedup(Graph& g) {
  RunOptions r;
  r.verifyEach = true;
  auto records = runPipeline(g, buildPipeline(PipelineOptions{.passes = {"dedup-patterns"}}), r);
  return records.back().stats;
}

std::vector<const Node*> fusedPatterns(const Graph& g) {
  std::vector<const Node*> r;
  for (const auto& n : g.nodes())
    if (auto region = FusedRegion::of(*n); region && region->kind() == RegionKind::Pattern) r.push_back(n.get());
  return r;
}

const Graph* bodyOf(const Node* n) { return &FusedRegion::of(*n)->body(); }

// x -> [MatMul(w_i) -> Relu] x 3, each block with its own weights.
const char* kChain = R"(
graph "g" opset 17 {
  input %x : f32[1,2]
  const %w1 : f32[2,2] = hex"0000803f00000000000000000000803f"
  const %w2 : f32[2,2] = hex"00000040000000000000000000000040"
  const %w3 : f32[2,2] = hex"000080bf0000803f0000803f0000003f"
  %m1 : f32[1,2] = MatMul(%x, %w1) @"m1"
  %r1 : f32[1,2] = Relu(%m1) @"r1"
  %m2 : f32[1,2] = MatMul(%r1, %w2) @"m2"
  %r2 : f32[1,2] = Relu(%m2) @"r2"
  %m3 : f32[1,2] = MatMul(%r2, %w3) @"m3"
  %r3 : f32[1,2] = Relu(%m3) @"r3"
  output %r3
}
)";

}  // namespace

TEST(DedupPatterns, ThreeBlockChainBecomesThreeRegionsOfOnePattern) {
  const char* body = R"(graph "b" opset 17 {
      input %a : f32[1,2]
      input %w : f32[2,2]
      %m : f32[1,2] = MatMul(%a, %w) @"n1"
      %r : f32[1,2] = Relu(%m) @"n2"
      output %r
    })";
  std::string hash = "bc6b18e1ad0a6b66";
  std::string attrs = std::string("{body = ") + body + ", kind = \"pattern\", pattern = \"" + hash + "\"} @\"p\"";
  std::string expected = R"(
graph "g" opset 17 {
  input %x : f32[1,2]
  const %w1 : f32[2,2] = hex"0000803f00000000000000000000803f"
  const %w2 : f32[2,2] = hex"00000040000000000000000000000040"
  const %w3 : f32[2,2] = hex"000080bf0000803f0000803f0000003f"
  %p1 : f32[1,2] = Fused(%x, %w1) )" + attrs + R"(
  %p2 : f32[1,2] = Fused(%p1, %w2) )" + attrs + R"(
  %p3 : f32[1,2] = Fused(%p2, %w3) )" + attrs + R"(
  output %p3
}
)";
  auto stats = expectPassRewrites("dedup-patterns", kChain, expected);
  EXPECT_EQ(stats["patterns"], 1);
  EXPECT_EQ(stats["instances"], 3);
  EXPECT_EQ(stats["nodes covered"], 6);

  // One body object shared by every instance; the summary is in the metadata.
  auto g = parseGraph(kChain);
  runDedup(*g);
  auto regions = fusedPatterns(*g);
  ASSERT_EQ(regions.size(), 3u);
  EXPECT_EQ(bodyOf(regions[0]), bodyOf(regions[1]));
  EXPECT_EQ(bodyOf(regions[0]), bodyOf(regions[2]));
  EXPECT_EQ(std::get<std::vector<std::string>>(g->metadata().at("dedup.patterns")),
            std::vector<std::string>{hash + ":3:2"});
}

TEST(DedupPatterns, DifferentShapesAreDifferentPatterns) {
  // Two blocks on width 2, a widening block, two blocks on width 3.
  auto stats = [] {
    auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1,2]
  const %a : f32[2,2] = hex"0000803f00000000000000000000803f"
  const %b : f32[2,3] = hex"0000803f00000000000000000000803f0000803f00000000"
  const %c : f32[3,3] = hex"0000803f0000000000000000000000000000803f000000000000000000000000000080bf"
  %m1 : f32[1,2] = MatMul(%x, %a) @"n3"
  %r1 : f32[1,2] = Relu(%m1) @"n4"
  %m2 : f32[1,2] = MatMul(%r1, %a) @"n5"
  %r2 : f32[1,2] = Relu(%m2) @"n6"
  %m3 : f32[1,3] = MatMul(%r2, %b) @"n7"
  %r3 : f32[1,3] = Relu(%m3) @"n8"
  %m4 : f32[1,3] = MatMul(%r3, %c) @"n9"
  %r4 : f32[1,3] = Relu(%m4) @"n10"
  %m5 : f32[1,3] = MatMul(%r4, %c) @"n11"
  %r5 : f32[1,3] = Relu(%m5) @"n12"
  output %r5
}
)");
    auto s = runDedup(*g);
    auto regions = fusedPatterns(*g);
    EXPECT_EQ(regions.size(), 4u);
    if (regions.size() == 4) {
      EXPECT_EQ(bodyOf(regions[0]), bodyOf(regions[1]));
      EXPECT_EQ(bodyOf(regions[2]), bodyOf(regions[3]));
      EXPECT_NE(regions[0]->attrString("pattern", ""), regions[2]->attrString("pattern", ""));
    }
    return s;
  }();
  EXPECT_EQ(stats["patterns"], 2);
  EXPECT_EQ(stats["instances"], 4);
}

TEST(DedupPatterns, BlockWithSideBranchIsNotAnInstance) {
  // Block 3 has an extra branch inside (MatMul -> Neg -> Add -> Relu): it is
  // not an instance; blocks 1-2 and 4-5 are, of one pattern. (A side branch
  // hanging off a block's output, outside it, would not stop the block from
  // being an instance: the value just becomes a region output.)
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1,2]
  const %w : f32[2,2] = hex"0000803f00000000000000000000803f"
  %m1 : f32[1,2] = MatMul(%x, %w) @"m1"
  %r1 : f32[1,2] = Relu(%m1) @"r1"
  %m2 : f32[1,2] = MatMul(%r1, %w) @"m2"
  %r2 : f32[1,2] = Relu(%m2) @"r2"
  %m3 : f32[1,2] = MatMul(%r2, %w) @"m3"
  %n3 : f32[1,2] = Neg(%m3) @"n3"
  %a3 : f32[1,2] = Add(%m3, %n3) @"a3"
  %r3 : f32[1,2] = Relu(%a3) @"r3"
  %m4 : f32[1,2] = MatMul(%r3, %w) @"m4"
  %r4 : f32[1,2] = Relu(%m4) @"r4"
  %m5 : f32[1,2] = MatMul(%r4, %w) @"m5"
  %r5 : f32[1,2] = Relu(%m5) @"r5"
  output %r5
}
)");
  auto stats = runDedup(*g);
  EXPECT_EQ(stats["patterns"], 1) << printGraph(*g);
  EXPECT_EQ(stats["instances"], 4);
  int matmuls = 0, negs = 0;
  for (const auto& n : g->nodes()) matmuls += n->op() == "MatMul", negs += n->op() == "Neg";
  EXPECT_EQ(matmuls, 1) << printGraph(*g);
  EXPECT_EQ(negs, 1);
}

TEST(DedupPatterns, NothingRepeatedNothingChanged) {
  expectPassRewrites("dedup-patterns", R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a : f32[2] = Relu(%x) @"n24"
  %b : f32[2] = Neg(%a) @"n25"
  output %b
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a : f32[2] = Relu(%x) @"n26"
  %b : f32[2] = Neg(%a) @"n27"
  output %b
}
)");
}

TEST(DedupPatterns, VitDepthNGivesOnePatternWithNInstances) {
  for (int depth : {2, 4, 8}) {
    auto g = zoo::build(zoo::parseSpec("vit?depth=" + std::to_string(depth) + "&width=16&resolution=16&patch=8&heads=2"));
    auto t0 = std::chrono::steady_clock::now();
    auto stats = runDedup(*g);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("vit depth %d: %zu nodes after, %.2f ms (pass + verify)\n", depth, g->nodes().size(), ms);
    EXPECT_EQ(stats["patterns"], 1) << "depth " << depth;
    EXPECT_EQ(stats["instances"], depth) << "depth " << depth;
  }
}

TEST(DedupPatterns, WorksAfterFusion) {
  // Fused nodes count as ops, hashed by their bodies' structure.
  auto g = zoo::build(zoo::parseSpec("vit?depth=4&width=16&resolution=16&patch=8&heads=2"));
  RunOptions r;
  r.verifyEach = true;
  auto records = runPipeline(
      *g, buildPipeline(PipelineOptions{.passes = {"fuse-epilogues", "fuse-reductions", "fuse-elementwise", "dedup-patterns"}}),
      r);
  EXPECT_EQ(records.back().stats["instances"], 4);
  expectSameNumerics([] { return zoo::build(zoo::parseSpec("vit?depth=4&width=16&resolution=16&patch=8&heads=2")); },
                     PipelineOptions{.passes = {"fuse-epilogues", "fuse-reductions", "fuse-elementwise", "dedup-patterns"}});
}

TEST(DedupPatterns, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"dedup-patterns"}); }

