// widen-half: structure (before/expected) and numerics (the interpreter on the model before and after the
// pass gives the same bits: each op's f32 result rounded as the interpreter rounds an f16 op's).
#include <unistd.h>

#include <filesystem>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/onnx/OnnxImport.h"
#include "ir/Builder.h"
#include "runtime/interp/Interpreter.h"
#include "tests/common/BackendTestUtil.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

// Conv and Add round their results; Relu, Concat and Reshape only select elements; the input is widened once,
// the weight at compile time, and the output narrowed once under its own name.
TEST(WidenHalf, ComputingOpsRoundTheirResultsAndSelectingOpsDoNot) {
  auto stats = expectPassRewrites("widen-half", R"(
graph "g" opset 17 {
  input %x : f16[1,2,3,3]
  const %w : f16[2,2,1,1] = hex"003c0000000000bc"
  const %shape : i64[2] = hex"0200000000000000ffffffffffffffff"
  %c : f16[1,2,3,3] = Conv(%x, %w) @"conv"
  %a : f16[1,2,3,3] = Add(%c, %x) @"add"
  %r : f16[1,2,3,3] = Relu(%a) @"relu"
  %j : f16[1,4,3,3] = Concat(%r, %x) {axis = 1} @"concat"
  %y : f16[2,18] = Reshape(%j, %shape) @"reshape"
  output %y
}
)",
                                  R"(
graph "g" opset 17 {
  input %x : f16[1,2,3,3]
  const %shape : i64[2] = hex"0200000000000000ffffffffffffffff"
  const %w : f32[2,2,1,1] = hex"0000803f0000000000000000000080bf"
  %xw : f32[1,2,3,3] = Cast(%x) {to = 1} @"x/f32"
  %c : f32[1,2,3,3] = Conv(%xw, %w) @"conv"
  %cr : f32[1,2,3,3] = ReducePrecision(%c) {to = 10} @"c/rounded"
  %a : f32[1,2,3,3] = Add(%cr, %xw) @"add"
  %ar : f32[1,2,3,3] = ReducePrecision(%a) {to = 10} @"a/rounded"
  %r : f32[1,2,3,3] = Relu(%ar) @"relu"
  %j : f32[1,4,3,3] = Concat(%r, %xw) {axis = 1} @"concat"
  %yw : f32[2,18] = Reshape(%j, %shape) @"reshape"
  %y : f16[2,18] = Cast(%yw) {to = 10} @"y/half"
  output %y
}
)");
  EXPECT_EQ(stats["nodes widened"], 5);
}

// Nothing in half precision: nothing changes.
TEST(WidenHalf, LeavesF32ModelsAlone) {
  const std::string text = R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %y : f32[2,3] = Relu(%x) @"y"
  output %y
}
)";
  auto stats = expectPassRewrites("widen-half", text, text);
  EXPECT_EQ(stats["nodes widened"], 0);
}

namespace {

// The graph after exactly `passes`, on its own copy.
std::shared_ptr<Graph> optimized(const Graph& g, std::vector<std::string> passes) {
  std::shared_ptr<Graph> copy = cloneGraph(g);
  runPipeline(*copy, buildPipeline(exactly(std::move(passes))));
  return copy;
}

void expectSameBits(const Graph& before, const Graph& after, const std::vector<Tensor>& in) {
  auto want = interp::run(before, in), got = interp::run(after, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    EXPECT_TRUE(got[i].bitwiseEqual(want[i])) << "output " << i;
  }
}

}  // namespace

// f16 and bf16 ops, a Cast into half precision inside the graph, a Softmax and a MatMul: the same bits as the
// interpreter computing the half model; after simplify-algebra the Cast pair is one ReducePrecision.
TEST(WidenHalf, GivesTheInterpretersBitsInF16AndBf16) {
  for (DType half : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtypeName(half)));
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {half, Shape::fromStatic({4, 8})});
    Value* w = b.constant(test::randomTensor({8, 8}, 5).castTo(half));
    Value* h = b.op("Tanh", {b.op("MatMul", {x, w})});
    Value* wide = b.op("Cast", {h}, {{"to", int64_t(dtypeToOnnxCode(DType::F32))}});
    Value* s = b.op("Softmax", {b.op("Mul", {wide, wide})}, {{"axis", int64_t(-1)}});
    Value* back = b.op("Cast", {s}, {{"to", int64_t(dtypeToOnnxCode(half))}});
    b.output(b.op("Add", {back, x}));
    b.output(b.op("ArgMax", {h}, {{"axis", int64_t(1)}}));
    // EyeLike's result type is its attribute's: widened, it still makes a half value, which is widened after.
    b.output(b.op("Mul", {b.op("EyeLike", {x}, {{"dtype", int64_t(dtypeToOnnxCode(half))}}), x}));
    std::vector<Tensor> in = {test::randomTensor({4, 8}, 6, -2, 2).castTo(half)};
    auto widened = optimized(g, {"widen-half"});
    expectSameBits(g, *widened, in);
    for (const auto& n : widened->nodes())
      if (n->op() != "Cast")
        for (const Value* v : n->inputs()) EXPECT_FALSE(v && isHalf(v->dtype())) << n->describe();
    auto simplified = optimized(g, {"widen-half", "simplify-algebra"});
    expectSameBits(g, *simplified, in);
    int64_t casts = 0, roundings = 0;
    for (const auto& n : simplified->nodes()) {
      casts += n->op() == "Cast";
      roundings += n->op() == "ReducePrecision";
    }
    EXPECT_EQ(casts, 4);  // x in, EyeLike's half result widened, the sum and the product out (rounding them)
    // MatMul; Tanh for ArgMax and again as the model's own cast pair (eliminate-common-subexpressions merges
    // the two); the Softmax cast to half and back
    EXPECT_EQ(roundings, 4);
    // Exported, ReducePrecision is a Cast there and back: the ONNX checker accepts it, and it reads back the same.
    const auto path =
        std::filesystem::temp_directory_path() / ("friction_widen_half_" + std::to_string(::getpid()) + ".onnx");
    onnxio::exportOnnxFile(*simplified, path.string());
    auto reimported = onnxio::importOnnxFile(path.string());
    std::filesystem::remove(path);
    expectSameBits(g, *reimported, in);
  }
}
