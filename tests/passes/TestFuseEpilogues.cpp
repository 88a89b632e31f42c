#include <algorithm>

#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

TEST(FuseEpilogues, ConvBiasReluResidual) {
  auto stats = expectPassRewrites("fuse-epilogues", R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  input %res : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
  %r : f32[N,2,4,4] = Relu(%a) @"relu"
  %y : f32[N,2,4,4] = Add(%r, %res) @"residual"
  output %y
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  input %res : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %y : f32[N,2,4,4] = Fused(%x, %w, %b, %res) {body = graph "epilogue" opset 17 {
    input %x : f32[N,2,4,4]
    input %w : f32[2,2,1,1]
    input %b : f32[2,1,1]
    input %res : f32[N,2,4,4]
    %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
    %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
    %r : f32[N,2,4,4] = Relu(%a) @"relu"
    %y : f32[N,2,4,4] = Add(%r, %res) @"residual"
    output %y
  }, kind = "epilogue"} @"f"
  output %y
}
)");
  EXPECT_EQ(stats["regions"], 1);
  EXPECT_EQ(stats["nodes fused"], 4);
}

TEST(FuseEpilogues, MatMulBiasErfGelu) {
  expectPassRewrites("fuse-epilogues", R"(
graph "g" opset 17 {
  input %x : f32[N,3,2]
  const %w : f32[2,2] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2] = hex"0000803f00000040"
  const %sqrt2 : f32[] = hex"f304b53f"
  const %one : f32[] = hex"0000803f"
  const %half : f32[] = hex"0000003f"
  %m : f32[N,3,2] = MatMul(%x, %w) @"fc"
  %a : f32[N,3,2] = Add(%m, %b) @"bias"
  %d : f32[N,3,2] = Div(%a, %sqrt2) @"div"
  %e : f32[N,3,2] = Erf(%d) @"erf"
  %p : f32[N,3,2] = Add(%e, %one) @"plus"
  %q : f32[N,3,2] = Mul(%a, %p) @"mul"
  %y : f32[N,3,2] = Mul(%q, %half) @"half"
  output %y
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[N,3,2]
  const %w : f32[2,2] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2] = hex"0000803f00000040"
  const %sqrt2 : f32[] = hex"f304b53f"
  const %one : f32[] = hex"0000803f"
  const %half : f32[] = hex"0000003f"
  %y : f32[N,3,2] = Fused(%x, %w, %b, %sqrt2, %one, %half) {body = graph "epilogue" opset 17 {
    input %x : f32[N,3,2]
    input %w : f32[2,2]
    input %b : f32[2]
    input %sqrt2 : f32[]
    input %one : f32[]
    input %half : f32[]
    %m : f32[N,3,2] = MatMul(%x, %w) @"fc"
    %a : f32[N,3,2] = Add(%m, %b) @"bias"
    %d : f32[N,3,2] = Div(%a, %sqrt2) @"div"
    %e : f32[N,3,2] = Erf(%d) @"erf"
    %p : f32[N,3,2] = Add(%e, %one) @"plus"
    %q : f32[N,3,2] = Mul(%a, %p) @"mul"
    %y : f32[N,3,2] = Mul(%q, %half) @"half"
    output %y
  }, kind = "epilogue"} @"f"
  output %y
}
)");
}

TEST(FuseEpilogues, ConvBiasSilu) {
  // SiLU as exporters write it: the biased result feeds both the Sigmoid and the Mul.
  auto stats = expectPassRewrites("fuse-epilogues", R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
  %s : f32[N,2,4,4] = Sigmoid(%a) @"sigmoid"
  %y : f32[N,2,4,4] = Mul(%s, %a) @"silu"
  output %y
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %y : f32[N,2,4,4] = Fused(%x, %w, %b) {body = graph "epilogue" opset 17 {
    input %x : f32[N,2,4,4]
    input %w : f32[2,2,1,1]
    input %b : f32[2,1,1]
    %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
    %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
    %s : f32[N,2,4,4] = Sigmoid(%a) @"sigmoid"
    %y : f32[N,2,4,4] = Mul(%s, %a) @"silu"
    output %y
  }, kind = "epilogue"} @"f"
  output %y
}
)");
  EXPECT_EQ(stats["nodes fused"], 4);
}

TEST(FuseEpilogues, ConvSiluOfAHalfModel) {
  // widen-half's form of an f16 conv and SiLU: every result rounded, the sigmoid's before the Mul.
  auto stats = expectPassRewrites("fuse-epilogues", R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %cr : f32[N,2,4,4] = ReducePrecision(%c) {to = 10} @"conv/rounded"
  %s : f32[N,2,4,4] = Sigmoid(%cr) @"sigmoid"
  %sr : f32[N,2,4,4] = ReducePrecision(%s) {to = 10} @"sigmoid/rounded"
  %m : f32[N,2,4,4] = Mul(%cr, %sr) @"silu"
  %y : f32[N,2,4,4] = ReducePrecision(%m) {to = 10} @"silu/rounded"
  output %y
}
)",
                                   R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  %y : f32[N,2,4,4] = Fused(%x, %w) {body = graph "epilogue" opset 17 {
    input %x : f32[N,2,4,4]
    input %w : f32[2,2,1,1]
    %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
    %cr : f32[N,2,4,4] = ReducePrecision(%c) {to = 10} @"conv/rounded"
    %s : f32[N,2,4,4] = Sigmoid(%cr) @"sigmoid"
    %sr : f32[N,2,4,4] = ReducePrecision(%s) {to = 10} @"sigmoid/rounded"
    %m : f32[N,2,4,4] = Mul(%cr, %sr) @"silu"
    %y : f32[N,2,4,4] = ReducePrecision(%m) {to = 10} @"silu/rounded"
    output %y
  }, kind = "epilogue"} @"f"
  output %y
}
)");
  EXPECT_EQ(stats["nodes fused"], 6);
}

TEST(FuseEpilogues, KeepsASiluWhoseInputHasAThirdUse) {
  // The biased result is also an output: the Sigmoid and Mul stay outside (the bias still joins).
  expectPassRewrites("fuse-epilogues", R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
  %s : f32[N,2,4,4] = Sigmoid(%a) @"sigmoid"
  %y : f32[N,2,4,4] = Mul(%a, %s) @"silu"
  output %y
  output %a
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %a : f32[N,2,4,4] = Fused(%x, %w, %b) {body = graph "epilogue" opset 17 {
    input %x : f32[N,2,4,4]
    input %w : f32[2,2,1,1]
    input %b : f32[2,1,1]
    %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
    %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
    output %a
  }, kind = "epilogue"} @"f"
  %s : f32[N,2,4,4] = Sigmoid(%a) @"sigmoid"
  %y : f32[N,2,4,4] = Mul(%a, %s) @"silu"
  output %y
  output %a
}
)");
}

TEST(FuseEpilogues, KeepsMultiUseIntermediates) {
  // The conv result is also a graph output, so nothing after it can join.
  const char* g = R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[2,1,1] = hex"0000803f00000040"
  %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
  %r : f32[N,2,4,4] = Relu(%a) @"relu"
  output %r
  output %c
}
)";
  EXPECT_EQ(expectPassRewrites("fuse-epilogues", g, g)["regions"], 0);
}

TEST(FuseEpilogues, KeepsAddThatIsNotAChannelBias) {
  // [4] broadcasts along W, not along the channels.
  const char* g = R"(
graph "g" opset 17 {
  input %x : f32[N,2,4,4]
  const %w : f32[2,2,1,1] = hex"0000803f0000803f0000803f0000803f"
  const %b : f32[4] = hex"0000803f000000400000803f00000040"
  %c : f32[N,2,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} @"conv"
  %a : f32[N,2,4,4] = Add(%c, %b) @"bias"
  output %a
}
)";
  expectPassRewrites("fuse-epilogues", g, g);
}

TEST(FuseEpilogues, SameNumericsOnEveryModel) { expectSameNumericsOnAllModels({"fuse-epilogues"}); }

TEST(FuseEpilogues, SameNumericsAfterFoldBatchnorm) {
  expectSameNumericsOnAllModels({"fold-batchnorm", "fuse-epilogues"});
}

TEST(FuseEpilogues, EveryResnetConvEndsInAnEpilogue) {
  // After folding, each conv's BN is its bias: every conv heads an epilogue,
  // except a shortcut conv whose residual Add the block's last conv took;
  // that one feeds the epilogue directly.
  auto records = expectExportRoundTrip("resnet?depth=2&width=8&resolution=16", {"fold-batchnorm", "fuse-epilogues"});
  ASSERT_EQ(records.size(), 2u);
  auto g = modelBuilder("resnet?depth=2&width=8&resolution=16")();
  runPipeline(*g, buildPipeline(exactly({"fold-batchnorm", "fuse-epilogues"})));
  int64_t regions = 0, fusedNodes = 0;
  for (const auto& n : g->nodes())
    for (const auto& m : g->nodes()) {
      if (n->op() == "Conv" && std::count(m->inputs().begin(), m->inputs().end(), n->output(0))) {
        EXPECT_EQ(m->op(), "Fused") << n->name() << " feeds " << m->name();
      }
    }
  for (const auto& n : g->nodes()) {
    EXPECT_NE(n->op(), "Relu");
    EXPECT_NE(n->op(), "BatchNormalization");
    if (auto region = FusedRegion::of(*n)) {
      regions++;
      fusedNodes += int64_t(region->body().nodes().size());
      EXPECT_EQ(region->kind(), RegionKind::Epilogue);
    }
  }
  EXPECT_GT(regions, 0);
  EXPECT_EQ(records[1].stats["regions"], regions);
  EXPECT_EQ(records[1].stats["nodes fused"], fusedNodes);
  EXPECT_EQ(records[1].after.fusedRegions, regions);
}

TEST(FuseEpilogues, FusesNhwcConvolutionsAfterConvertLayout) {
  // The default pipeline runs convert-layout first: its NHWC conv regions must still anchor epilogues.
  auto g = modelBuilder("resnet?depth=2&width=8&resolution=16")();
  auto records = runPipeline(*g, buildPipeline(exactly({"fold-batchnorm", "convert-layout", "fuse-epilogues"})));
  EXPECT_GT(records.back().stats["regions"], 0);
  int epilogueOverNhwc = 0;
  for (const auto& n : g->nodes())
    if (auto region = FusedRegion::of(*n); region && region->kind() == RegionKind::Epilogue)
      for (const auto& m : region->body().nodes())
        if (auto inner = FusedRegion::of(*m)) epilogueOverNhwc += inner->nhwcOp() != nullptr;
  EXPECT_GT(epilogueOverNhwc, 0);
  expectSameNumerics(modelBuilder("resnet?depth=2&width=8&resolution=16"),
                     exactly({"fold-batchnorm", "convert-layout", "fuse-epilogues"}));
}
