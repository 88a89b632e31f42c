#include "ir/OpRegistry.h"
#include "ir/Specialize.h"
#include "ir/TextFormat.h"
#include "ir/Verifier.h"
#include "tests/passes/PassTestUtil.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

TEST(FoldConstants, FoldsConstantNodesAndTheirArithmetic) {
  // a = [1, 2], b = [1, 1]: c = a + b = [2, 3]; the inputs become unused and go.
  auto stats = expectPassRewrites("fold-constants", R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %a : f32[2] = hex"0000803f00000040"
  %b : f32[2] = Constant() {value = tensor<f32[2]> hex"0000803f0000803f"} @"b"
  %c : f32[2] = Add(%a, %b) @"c"
  %y : f32[2] = Mul(%x, %c) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %c : f32[2] = hex"0000004000004040"
  %y : f32[2] = Mul(%x, %c) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["nodes folded"], 2);
  EXPECT_EQ(stats["bytes folded"], 16);
}

TEST(FoldConstants, ResolvesShapeArithmeticOfAStaticShape) {
  // PyTorch's flatten: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> Reshape(x, [2, -1]).
  expectPassRewrites("fold-constants", R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %zero : i64[] = hex"0000000000000000"
  const %axes : i64[1] = hex"0000000000000000"
  const %minus1 : i64[1] = hex"ffffffffffffffff"
  %s : i64[3] = Shape(%x) @"s"
  %n : i64[] = Gather(%s, %zero) {axis = 0} @"n"
  %n1 : i64[1] = Unsqueeze(%n, %axes) @"n1"
  %t : i64[2] = Concat(%n1, %minus1) {axis = 0} @"t"
  %y : f32[2,12] = Reshape(%x, %t) @"y"
  output %y
}
)",
                     R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %t : i64[2] = hex"0200000000000000ffffffffffffffff"
  %y : f32[2,12] = Reshape(%x, %t) @"y"
  output %y
}
)");
}

TEST(FoldConstants, FoldsStaticDimsOfASymbolicShape) {
  // With x : [N,3,4], Shape(x) stays, but dims 1 and 2 are known: the target becomes [-1, 12].
  auto stats = expectPassRewrites("fold-constants", R"(
graph "g" opset 17 {
  input %x : f32[N,3,4]
  const %one : i64[] = hex"0100000000000000"
  const %two : i64[] = hex"0200000000000000"
  const %axes : i64[1] = hex"0000000000000000"
  const %minus1 : i64[1] = hex"ffffffffffffffff"
  %s : i64[3] = Shape(%x) @"s"
  %d1 : i64[] = Gather(%s, %one) {axis = 0} @"d1"
  %d2 : i64[] = Gather(%s, %two) {axis = 0} @"d2"
  %d : i64[] = Mul(%d1, %d2) @"d"
  %d_1 : i64[1] = Unsqueeze(%d, %axes) @"d_1"
  %t : i64[2] = Concat(%minus1, %d_1) {axis = 0} @"t"
  %y : f32[N,12] = Reshape(%x, %t) @"y"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f32[N,3,4]
  const %t : i64[2] = hex"ffffffffffffffff0c00000000000000"
  %s : i64[3] = Shape(%x) @"s"
  %y : f32[N,12] = Reshape(%x, %t) @"y"
  output %y
}
)");
  EXPECT_EQ(stats["nodes folded"], 5);
}

TEST(FoldConstants, LeavesHugeResultsAndNonConstantInputs) {
  // ConstantOfShape([2048, 4096]) would store 32 MiB in the model; Add reads an input.
  const char* text = R"(
graph "g" opset 17 {
  input %x : f32[4096]
  const %shape : i64[2] = hex"00080000000000000010000000000000"
  %big : f32[2048,4096] = ConstantOfShape(%shape) @"big"
  %y : f32[2048,4096] = Add(%big, %x) @"y"
  output %y
}
)";
  auto stats = expectPassRewrites("fold-constants", text, text);
  EXPECT_EQ(stats["nodes folded"], 0);
}

TEST(FoldConstants, LeavesResultsThatGrowAWeightPastAMebibyte) {
  // Expand of a 1 MiB weight to 4 MiB would grow the model; Neg of it keeps the size and folds.
  Graph g;
  Value* x = g.addInput("x", {DType::F32, Shape{4, 262144}});
  Value* w = g.addInitializer("w", Tensor(DType::F32, {1, 262144}));
  Value* shape = g.addInitializer("shape", Tensor::vectorI64({4, 262144}));
  Node* expand = g.addNode("Expand", {w, shape}, {"e"});
  Node* neg = g.addNode("Neg", {w}, {"n"});
  Node* add = g.addNode("Add", {x, expand->output(0)}, {"a"});
  Node* mul = g.addNode("Mul", {add->output(0), neg->output(0)}, {"y"});
  g.addOutput(mul->output(0));
  inferGraph(g);
  PassContext ctx;
  foldConstants(g, ctx);
  verify(g);
  EXPECT_EQ(ctx.stats["nodes folded"], 1);
  EXPECT_EQ(g.nodes().front()->op(), "Expand");
  EXPECT_TRUE(g.findValue("n")->isConstant());
}

TEST(FoldConstants, FoldsADequantizedWeightPastAMebibyte) {
  // A quantized model's int8 weight of 1 MiB dequantized to 4 MiB of f32: elementwise over as many elements, so
  // it folds (the kernels then pack a constant weight once); the Expand above would not.
  Graph g;
  Value* x = g.addInput("x", {DType::F32, Shape{4, 1024}});
  Value* w = g.addInitializer("w", Tensor(DType::I8, {1024, 1024}));
  Node* wide = g.addNode("Cast", {w}, {"wide"}, {{"to", int64_t(dtypeToOnnxCode(DType::F32))}});
  Node* scaled = g.addNode("Mul", {wide->output(0), g.addInitializer("s", Tensor::scalarF32(0.02f))}, {"scaled"});
  Node* y = g.addNode("MatMul", {x, scaled->output(0)}, {"y"});
  g.addOutput(y->output(0));
  inferGraph(g);
  PassContext ctx;
  foldConstants(g, ctx);
  verify(g);
  EXPECT_EQ(ctx.stats["nodes folded"], 2);
  EXPECT_TRUE(g.findValue("scaled")->isConstant());
}

TEST(FoldConstants, LeavesDivisionByConstantZeroToRunTime) {
  const char* text = R"(
graph "g" opset 17 {
  input %x : i32[1]
  const %a : i32[1] = hex"01000000"
  const %z : i32[1] = hex"00000000"
  %q : i32[1] = Div(%a, %z) @"q"
  %y : i32[1] = Add(%x, %q) @"y"
  output %y
}
)";
  expectPassRewrites("fold-constants", text, text);
}

TEST(FoldConstants, FoldedGraphOutputKeepsItsName) {
  auto g = parseGraph(R"(
graph "g" opset 17 {
  input %x : f32[1]
  const %a : f32[1] = hex"0000803f"
  %y : f32[1] = Neg(%a) @"y"
  %z : f32[1] = Add(%x, %y) @"z"
  output %y
  output %z
}
)");
  PassContext ctx;
  foldConstants(*g, ctx);
  verify(*g);
  ASSERT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  ASSERT_TRUE(g->outputs()[0]->isConstant());
  EXPECT_EQ(g->outputs()[0]->constant().elementAsDouble(0), -1.0);
  EXPECT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(g->nodes()[0]->input(1), g->outputs()[0]);
  EXPECT_EQ(g->findValue("a"), nullptr);  // folded away
}

TEST(FoldConstants, MakesEveryShapeOfSwinStaticAtBatch2) {
  // Swin's window partitioning computes Reshape targets from Shape at run time,
  // through arithmetic that shape tracking alone does not resolve.
  auto g = modelBuilder("torch/swin")();
  bindInputDims(*g, batchBindings(*g, 2));
  PassContext ctx;
  foldConstants(*g, ctx);
  verify(*g);
  EXPECT_GT(ctx.stats["nodes folded"], 0);
  for (const auto& n : g->nodes())
    for (const Value* out : n->outputs())
      EXPECT_TRUE(out->shape().isStatic()) << n->describe() << ": " << out->name() << " is " << out->type().str();
}

class FoldConstantsNumerics : public ::testing::TestWithParam<std::string> {};

TEST_P(FoldConstantsNumerics, MatchesUnoptimized) {
  auto build = modelBuilder(GetParam());
  expectSameNumerics(build, PipelineOptions{.passes = {"fold-constants"}});
  expectSameNumericsSymbolic(build, {"fold-constants"});
}

INSTANTIATE_TEST_SUITE_P(Models, FoldConstantsNumerics, ::testing::ValuesIn(kNumericsModels), testNameOf);
