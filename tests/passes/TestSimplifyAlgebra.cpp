#include "ir/TextFormat.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {
void expectUnchanged(const std::string& text) {
  auto stats = expectPassRewrites("simplify-algebra", text, text);
  EXPECT_TRUE(stats.empty()) << stats.begin()->first;
}
}  // namespace

TEST(SimplifyAlgebra, RemovesIdentity) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4] = Identity(%x) @"a"
  %y : f32[N,4] = Relu(%a) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %y : f32[N,4] = Relu(%x) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["identities removed"], 1);
}

TEST(SimplifyAlgebra, KeepsNoOpsThatProduceGraphOutputs) {
  // Removing them would rename the model's outputs.
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %one : f32[1] = hex"0000803f"
  %r : f32[N,4] = Relu(%x) @"r"
  %y : f32[N,4] = Identity(%r) @"y"
  %z : f32[N,4] = Mul(%x, %one) @"z"
  output %y
  output %z
}
)");
}

TEST(SimplifyAlgebra, RemovesInferenceDropout) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %ratio : f32[] = hex"0000003f"
  const %training : bool[] = hex"00"
  %a : f32[N,4] = Dropout(%x) @"a"
  %b : f32[N,4] = Dropout(%a, %ratio, %training) @"b"
  %y : f32[N,4] = Relu(%b) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %y : f32[N,4] = Relu(%x) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["dropouts removed"], 2);
}

TEST(SimplifyAlgebra, KeepsDropoutWhoseMaskIsUsed) {
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4], %mask : bool[N,4] = Dropout(%x) @"a"
  %y : f32[N,4] = Relu(%a) @"y"
  output %y
  output %mask
}
)");
}

TEST(SimplifyAlgebra, RemovesNeutralArithmetic) {
  // x * 1, 0 + x, x - 0, x / 1, with per-channel constants that broadcast into x.
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,2]
  const %ones : f32[2] = hex"0000803f0000803f"
  const %zero : f32[1,1] = hex"00000000"
  const %one : f32[] = hex"0000803f"
  %a : f32[N,2] = Mul(%x, %ones) @"a"
  %b : f32[N,2] = Add(%zero, %a) @"b"
  %c : f32[N,2] = Sub(%b, %zero) @"c"
  %d : f32[N,2] = Div(%c, %one) @"d"
  %e : f32[N,2] = Mul(%one, %d) @"e"
  %y : f32[N,2] = Relu(%e) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,2]
  %y : f32[N,2] = Relu(%x) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["neutral arithmetic removed"], 5);
}

TEST(SimplifyAlgebra, KeepsArithmeticThatBroadcastsOrIsNotNeutral) {
  // ones[2,4] makes x[4] bigger; zeros[4] stretches x[N,1]; 0 - x and x * 2 are not x.
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[4]
  input %w : f32[N,1]
  const %ones : f32[2,4] = hex"0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f"
  const %zeros : f32[4] = hex"00000000000000000000000000000000"
  const %two : f32[] = hex"00000040"
  %a : f32[2,4] = Mul(%x, %ones) @"a"
  %b : f32[N,4] = Add(%w, %zeros) @"b"
  %c : f32[4] = Sub(%zeros, %x) @"c"
  %d : f32[4] = Mul(%x, %two) @"d"
  output %a
  output %b
  output %c
  output %d
}
)");
}

TEST(SimplifyAlgebra, RemovesSameTypeCast) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %a : f32[N,4] = Cast(%x) {to = 1} @"a"
  %b : f16[N,4] = Cast(%a) {to = 10} @"b"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %b : f16[N,4] = Cast(%x) {to = 10} @"b"
  output %b
}
)");
  EXPECT_EQ(stats["casts removed"], 1);
}

// A quantize-dequantize pair: the value cast to int8 is already an integer inside int8's range, so the casts
// to int8 and back change nothing and go; the f32 arithmetic left fuses.
TEST(SimplifyAlgebra, RemovesAnIntegerCastRoundTripOfAClippedRoundedValue) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %s : f32[] = hex"0000003e"
  const %lo : f32[] = hex"000000c3"
  const %hi : f32[] = hex"0000fe42"
  %d : f32[N,4] = Div(%x, %s) @"d"
  %r : f32[N,4] = Round(%d) @"r"
  %c : f32[N,4] = Clip(%r, %lo, %hi) @"c"
  %q : i8[N,4] = Cast(%c) {to = 3} @"q"
  %f : f32[N,4] = Cast(%q) {to = 1} @"f"
  %y : f32[N,4] = Mul(%f, %s) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %s : f32[] = hex"0000003e"
  const %lo : f32[] = hex"000000c3"
  const %hi : f32[] = hex"0000fe42"
  %d : f32[N,4] = Div(%x, %s) @"d"
  %r : f32[N,4] = Round(%d) @"r"
  %c : f32[N,4] = Clip(%r, %lo, %hi) @"c"
  %y : f32[N,4] = Mul(%c, %s) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["integer cast round trips removed"], 1);
}

TEST(SimplifyAlgebra, KeepsIntegerCastRoundTripsThatRoundOrSaturate) {
  // Clip to [-128, 127] without a Round: the casts truncate. Round, then Clip to [0, 255] into int8: they wrap.
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %lo : f32[] = hex"000000c3"
  const %hi : f32[] = hex"0000fe42"
  const %zero : f32[] = hex"00000000"
  const %top : f32[] = hex"00007f43"
  %c : f32[N,4] = Clip(%x, %lo, %hi) @"c"
  %q : i8[N,4] = Cast(%c) {to = 3} @"q"
  %f : f32[N,4] = Cast(%q) {to = 1} @"f"
  %r : f32[N,4] = Round(%x) @"r"
  %u : f32[N,4] = Clip(%r, %zero, %top) @"u"
  %w : i8[N,4] = Cast(%u) {to = 3} @"w"
  %g : f32[N,4] = Cast(%w) {to = 1} @"g"
  %y : f32[N,4] = Add(%f, %g) @"y"
  output %y
}
)");
}

TEST(SimplifyAlgebra, RemovesReshapeToTheSameShape) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,12]
  const %t : i64[2] = hex"ffffffffffffffff0c00000000000000"
  %a : f32[N,12] = Reshape(%x, %t) @"a"
  %y : f32[N,12] = Relu(%a) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,12]
  %y : f32[N,12] = Relu(%x) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["reshapes removed"], 1);
}

TEST(SimplifyAlgebra, KeepsReshapeToAnUnknownShape) {
  // The target is computed at run time: the output shape is not provably x's.
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[N,12]
  input %t : i64[2]
  %a : f32[?,?] = Reshape(%x, %t) @"a"
  %y : f32[?,?] = Relu(%a) @"y"
  output %y
}
)");
}

TEST(SimplifyAlgebra, RemovesExpandToTheSameShape) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %s : i64[2] = hex"01000000000000000400000000000000"
  const %s2 : i64[3] = hex"030000000000000001000000000000000400000000000000"
  %a : f32[N,4] = Expand(%x, %s) @"a"
  %b : f32[3,N,4] = Expand(%a, %s2) @"b"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  const %s2 : i64[3] = hex"030000000000000001000000000000000400000000000000"
  %b : f32[3,N,4] = Expand(%x, %s2) @"b"
  output %b
}
)");
  EXPECT_EQ(stats["expands removed"], 1);
}

TEST(SimplifyAlgebra, FoldsReshapeOfReshape) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %t1 : i64[2] = hex"06000000000000000400000000000000"
  const %t2 : i64[2] = hex"0400000000000000ffffffffffffffff"
  %a : f32[6,4] = Reshape(%x, %t1) @"a"
  %b : f32[4,6] = Reshape(%a, %t2) @"b"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %t2 : i64[2] = hex"0400000000000000ffffffffffffffff"
  %b : f32[4,6] = Reshape(%x, %t2) @"b"
  output %b
}
)");
  EXPECT_EQ(stats["reshapes folded"], 1);
}

TEST(SimplifyAlgebra, FoldsReshapeOfFlattenKeepingASharedProducer) {
  // The Flatten has another user, so it stays.
  expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %t : i64[3] = hex"040000000000000003000000000000000200000000000000"
  %a : f32[2,12] = Flatten(%x) {axis = 1} @"a"
  %b : f32[4,3,2] = Reshape(%a, %t) @"b"
  %c : f32[2,12] = Relu(%a) @"c"
  output %b
  output %c
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %t : i64[3] = hex"040000000000000003000000000000000200000000000000"
  %a : f32[2,12] = Flatten(%x) {axis = 1} @"a"
  %b : f32[4,3,2] = Reshape(%x, %t) @"b"
  %c : f32[2,12] = Relu(%a) @"c"
  output %b
  output %c
}
)");
}

TEST(SimplifyAlgebra, KeepsReshapeOfReshapeWhenTheTargetCopiesADim) {
  // A 0 in the outer target copies a dim of the intermediate [6,4], not of x.
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %t1 : i64[2] = hex"06000000000000000400000000000000"
  const %t2 : i64[2] = hex"0000000000000000ffffffffffffffff"
  %a : f32[6,4] = Reshape(%x, %t1) @"a"
  %b : f32[6,4] = Reshape(%a, %t2) @"b"
  output %b
}
)");
}

TEST(SimplifyAlgebra, ComposesTransposes) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  %a : f32[3,2,4] = Transpose(%x) {perm = [1, 0, 2]} @"a"
  %b : f32[3,4,2] = Transpose(%a) {perm = [0, 2, 1]} @"b"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  %b : f32[3,4,2] = Transpose(%x) {perm = [1, 2, 0]} @"b"
  output %b
}
)");
  EXPECT_EQ(stats["transposes composed"], 1);
}

// [1,3,1,5] -> [1,1,3,5] moves only a dim of 1: the elements stay in order, so it is a Reshape (a view).
TEST(SimplifyAlgebra, TransposeOfUnitDimsBecomesAReshape) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[1,3,1,5]
  %a : f32[1,1,3,5] = Transpose(%x) {perm = [0, 2, 1, 3]} @"a"
  %b : f32[1,1,3,5] = Relu(%a) @"b"
  output %b
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[1,3,1,5]
  const %s : i64[4] = hex"0100000000000000010000000000000003000000000000000500000000000000"
  %a : f32[1,1,3,5] = Reshape(%x, %s) @"a"
  %b : f32[1,1,3,5] = Relu(%a) @"b"
  output %b
}
)");
  EXPECT_EQ(stats["transposes of unit dims made reshapes"], 1);
}

// [2,3,1] -> [3,2,1] moves real dims: it stays a transpose.
TEST(SimplifyAlgebra, KeepsTransposeThatReordersElements) {
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[2,3,1]
  %a : f32[3,2,1] = Transpose(%x) {perm = [1, 0, 2]} @"a"
  output %a
}
)");
  runPipeline(*g, buildPipeline(PipelineOptions{.passes = {"simplify-algebra"}}));
  EXPECT_EQ(g->nodes().front()->op(), "Transpose");
}

TEST(SimplifyAlgebra, RemovesTransposesThatCancel) {
  // NCHW -> NHWC -> NCHW, with a symbolic batch.
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,3,4,5]
  %a : f32[N,4,5,3] = Transpose(%x) {perm = [0, 2, 3, 1]} @"a"
  %b : f32[N,3,4,5] = Transpose(%a) {perm = [0, 3, 1, 2]} @"b"
  %y : f32[N,3,4,5] = Relu(%b) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,3,4,5]
  %y : f32[N,3,4,5] = Relu(%x) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["transposes composed"], 1);
  EXPECT_EQ(stats["transposes removed"], 1);
}

TEST(SimplifyAlgebra, CancelsSqueezeUnsqueezePairs) {
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f32[N,1,4]
  const %one : i64[1] = hex"0100000000000000"
  const %last : i64[1] = hex"ffffffffffffffff"
  const %three : i64[1] = hex"0300000000000000"
  %a : f32[N,4] = Squeeze(%x, %one) @"a"
  %b : f32[N,1,4] = Unsqueeze(%a, %one) @"b"
  %c : f32[N,1,4,1] = Unsqueeze(%b, %last) @"c"
  %d : f32[N,1,4] = Squeeze(%c, %three) @"d"
  %y : f32[N,1,4] = Relu(%d) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,1,4]
  %y : f32[N,1,4] = Relu(%x) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["squeeze pairs cancelled"], 2);
}

TEST(SimplifyAlgebra, KeepsSqueezeUnsqueezeOnOtherAxes) {
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[N,1,4]
  const %zero : i64[1] = hex"0000000000000000"
  const %one : i64[1] = hex"0100000000000000"
  %a : f32[N,4] = Squeeze(%x, %one) @"a"
  %b : f32[1,N,4] = Unsqueeze(%a, %zero) @"b"
  output %b
}
)");
}

class SimplifyAlgebraNumerics : public ::testing::TestWithParam<std::string> {};

TEST_P(SimplifyAlgebraNumerics, MatchesUnoptimized) {
  auto build = modelBuilder(GetParam());
  expectSameNumerics(build, PipelineOptions{.passes = {"simplify-algebra"}});
  expectSameNumericsSymbolic(build, {"simplify-algebra"});
  // After fold-constants more reshape targets are constant, so the chain rewrites fire more.
  expectSameNumerics(build, PipelineOptions{.passes = {"fold-constants", "simplify-algebra"}});
  expectSameNumericsSymbolic(build, {"fold-constants", "simplify-algebra"});
}

INSTANTIATE_TEST_SUITE_P(Models, SimplifyAlgebraNumerics, ::testing::ValuesIn(kNumericsModels), testNameOf);

TEST(SimplifyAlgebra, FloatCastRoundTrips) {
  // f16 -> f32 -> f16 gives back x; f32 -> f16 -> f32 is the rounding, one ReducePrecision; f32 -> f16 -> f64
  // and bf16 -> f16 -> bf16 are neither.
  auto stats = expectPassRewrites("simplify-algebra", R"(
graph "g" opset 17 {
  input %x : f16[4]
  input %z : f32[4]
  input %b : bf16[4]
  %w : f32[4] = Cast(%x) {to = 1} @"w"
  %n : f16[4] = Cast(%w) {to = 10} @"n"
  %h : f16[4] = Cast(%z) {to = 10} @"h"
  %r : f32[4] = Cast(%h) {to = 1} @"r"
  %d : f64[4] = Cast(%h) {to = 11} @"d"
  %bh : f16[4] = Cast(%b) {to = 10} @"bh"
  %bb : bf16[4] = Cast(%bh) {to = 16} @"bb"
  %s : f16[4] = Add(%n, %x) @"s"
  %y : f32[4] = Relu(%r) @"y"
  %e : bf16[4] = Neg(%bb) @"e"
  output %s
  output %y
  output %d
  output %e
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f16[4]
  input %z : f32[4]
  input %b : bf16[4]
  %h : f16[4] = Cast(%z) {to = 10} @"h"
  %r : f32[4] = ReducePrecision(%z) {to = 10} @"r"
  %d : f64[4] = Cast(%h) {to = 11} @"d"
  %bh : f16[4] = Cast(%b) {to = 10} @"bh"
  %bb : bf16[4] = Cast(%bh) {to = 16} @"bb"
  %s : f16[4] = Add(%x, %x) @"s"
  %y : f32[4] = Relu(%r) @"y"
  %e : bf16[4] = Neg(%bb) @"e"
  output %s
  output %y
  output %d
  output %e
}
)");
  EXPECT_EQ(stats["float round trips through a wider type removed"], 1);
  EXPECT_EQ(stats["narrowing cast round trips made ReducePrecision"], 1);
}
