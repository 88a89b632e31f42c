// The IR utilities every part of friction shares: the use index, Fused
// region accessors, structural printing and the Erf-GELU matcher.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"
#include "ir/Patterns.h"
#include "ir/Structural.h"
#include "ir/TextFormat.h"
#include "ir/Uses.h"

using namespace friction;

namespace {

Tensor scalar(float v) {
  Tensor t(DType::F32, {});
  t.data<float>()[0] = v;
  return t;
}

// y = gelu(x) as exporters write it; `scaleBy` is x's multiplier (1/√2) or divisor (√2).
Value* erfGelu(GraphBuilder& b, Value* x, bool divide, float scaleBy, bool halfFirst) {
  Value* scaled = b.op(divide ? "Div" : "Mul", {x, b.constant(scalar(scaleBy))});
  Value* plus = b.op("Add", {b.op("Erf", {scaled}), b.constant(scalar(1))});
  if (halfFirst) return b.op("Mul", {b.op("Mul", {x, b.constant(scalar(0.5f))}), plus});
  return b.op("Mul", {b.op("Mul", {x, plus}), b.constant(scalar(0.5f))});
}

}  // namespace

TEST(UseIndex, UsersSoleUserAndPosition) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4}});
  Value* sq = b.op("Mul", {x, x}, {}, "square");
  Value* y = b.op("Relu", {sq}, {}, "relu");
  b.output(y);
  UseIndex u(static_cast<const Graph&>(g));
  EXPECT_EQ(u.users(x).size(), 2u);         // one entry per input slot
  EXPECT_EQ(u.soleUser(x), nullptr);        // two uses
  EXPECT_EQ(u.soleUser(sq), y->producer());
  EXPECT_EQ(u.soleUser(y), nullptr);        // a graph output
  EXPECT_TRUE(u.isGraphOutput(y));
  EXPECT_FALSE(u.unused(*sq->producer()));
  EXPECT_EQ(u.position(sq->producer()), 0u);
  EXPECT_EQ(u.position(y->producer()), 1u);
  EXPECT_THROW(u.replaceAllUses(sq, x), Error);  // built over a const graph
}

TEST(UseIndex, RewiringKeepsTheIndexCurrent) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4}});
  Value* a = b.op("Neg", {x});
  Value* c = b.op("Abs", {a});
  b.output(a);
  UseIndex u(g);
  u.replaceAllUses(a, x);
  EXPECT_EQ(c->producer()->input(0), x);
  EXPECT_EQ(g.outputs()[0], x);
  EXPECT_TRUE(u.unused(a));
  EXPECT_EQ(u.users(x).size(), 2u);
  u.setInput(*c->producer(), 0, a);
  EXPECT_EQ(u.users(a).size(), 1u);
  EXPECT_EQ(u.users(x).size(), 1u);
}

TEST(Graph, ANewNodeTakesAMultiOutputNodesLastOutput) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {6}});
  std::vector<Value*> parts = b.opN("Split", {x, b.constant(Tensor::vectorI64({2, 4}))}, 2);
  Value* user = b.op("Neg", {parts[1]});
  Node* split = parts[0]->producer();
  Node* abs = g.addNodeTakingLastOutput(*split, "Abs", {x});
  ASSERT_EQ(split->numOutputs(), 1u);
  EXPECT_EQ(parts[1]->producer(), abs);  // the value, its name and its users stay
  EXPECT_EQ(parts[1]->producerIndex(), 0);
  EXPECT_EQ(abs->output(0), parts[1]);
  EXPECT_EQ(user->producer()->input(0), parts[1]);
  EXPECT_THROW(g.addNodeTakingLastOutput(*split, "Abs", {x}), Error);  // a node keeps one output
}

TEST(FusedRegion, KindsRoundTripAndUnknownKindsAreErrors) {
  for (RegionKind k : {RegionKind::Generic, RegionKind::Epilogue, RegionKind::Elementwise, RegionKind::Reduction,
                       RegionKind::Pattern, RegionKind::Nhwc})
    EXPECT_EQ(parseRegionKind(regionKindName(k)), k);
  EXPECT_THROW(parseRegionKind("fusion"), Error);
  const char* text = R"(graph "g" opset 17 {
  input %x : f32[2]
  %y : f32[2] = Fused(%x) {body = graph "b" opset 17 {
    input %a : f32[2]
    %b : f32[2] = Relu(%a) @"relu"
    output %b
  }, kind = "fusion"} @"f"
  output %y
})";
  try {
    parseGraph(text, "test");
    FAIL() << "a Fused node of an unknown kind parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown region kind 'fusion'"), std::string::npos) << e.what();
  }
}

TEST(FusedRegion, OperandsAndTheNhwcOp) {
  const char* text = R"(graph "g" opset 17 {
  input %x : f32[1,4,4,2]
  const %w : f32[3,2,1,1] = hex"000000000000000000000000000000000000000000000000"
  %y : f32[1,4,4,3] = Fused(%x, %w) {body = graph "b" opset 17 {
    input %xh : f32[1,4,4,2]
    input %wb : f32[3,2,1,1]
    %xc : f32[1,2,4,4] = Transpose(%xh) {perm = [0, 3, 1, 2]} @"t0"
    %c : f32[1,3,4,4] = Conv(%xc, %wb) @"conv"
    %ch : f32[1,4,4,3] = Transpose(%c) {perm = [0, 2, 3, 1]} @"t1"
    output %ch
  }, kind = "nhwc"} @"f"
  output %y
})";
  auto g = parseGraph(text, "test");
  const Node& fused = *g->nodes()[0];
  auto region = FusedRegion::of(fused);
  ASSERT_TRUE(region);
  EXPECT_EQ(region->kind(), RegionKind::Nhwc);
  EXPECT_EQ(region->label(), "region nhwc");
  const Node* conv = region->nhwcOp();
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->op(), "Conv");
  EXPECT_EQ(region->operandFor(region->body().inputs()[1]), g->findValue("w"));
  std::vector<const Value*> outer = region->outerInputs(*conv);
  EXPECT_EQ(outer[0], conv->input(0));  // computed inside the body
  EXPECT_EQ(outer[1], g->findValue("w"));
  EXPECT_FALSE(FusedRegion::of(*region->body().nodes()[0]));  // a Transpose is no region
}

TEST(Structural, NamesDoNotMatterButStructureDoes) {
  auto build = [](const std::string& prefix, float c, const char* act) {
    auto g = std::make_unique<Graph>(prefix);
    GraphBuilder b(*g);
    Value* x = b.input(prefix + "x", {DType::F32, {2}});
    b.output(b.op(act, {b.op("Add", {x, b.constant(scalar(c), prefix + "c")}, {}, prefix + "add")}));
    return g;
  };
  auto a = build("a_", 1, "Relu"), b = build("b_", 1, "Relu"), c = build("c_", 2, "Relu"), d = build("d_", 1, "Tanh");
  EXPECT_EQ(structuralText(*a), structuralText(*b));
  EXPECT_NE(structuralText(*a), structuralText(*c));  // constant data
  EXPECT_NE(structuralText(*a), structuralText(*d));  // op
  StructureOptions hashed{/*hashTensors=*/true};
  EXPECT_EQ(structuralText(*a, hashed), structuralText(*b, hashed));
  EXPECT_NE(structuralText(*a, hashed), structuralText(*c, hashed));
  EXPECT_NE(structuralText(*a, hashed).find("#"), std::string::npos);
}

TEST(Structural, NodeStructureMarksRepeatedOperands) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2}});
  Value* y = b.input("y", {DType::F32, {2}});
  Node* square = b.op("Mul", {x, x})->producer();
  Node* product = b.op("Mul", {x, y})->producer();
  EXPECT_EQ(nodeStructure(*square), "Mul(f32[2], f32[2]=#0) -> (f32[2])");
  EXPECT_EQ(nodeStructure(*product), "Mul(f32[2], f32[2]) -> (f32[2])");
}

TEST(Patterns, ErfGeluInEveryWriting) {
  for (bool divide : {true, false})
    for (bool halfFirst : {true, false}) {
      Graph g;
      GraphBuilder b(g);
      Value* x = b.input("x", {DType::F32, {4}});
      Value* y = erfGelu(b, x, divide, divide ? std::sqrt(2.0f) : std::sqrt(0.5f), halfFirst);
      b.output(y);
      GeluMatch m = matchErfGelu(UseIndex(static_cast<const Graph&>(g)), x);
      ASSERT_EQ(m.nodes.size(), 5u) << divide << halfFirst;
      EXPECT_EQ(m.nodes.back()->output(0), y);
      EXPECT_TRUE(m.exact);
    }
}

TEST(Patterns, ErfGeluWithOtherConstantsIsNotExact) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4}});
  b.output(erfGelu(b, x, true, 1.5f, false));
  GeluMatch m = matchErfGelu(UseIndex(static_cast<const Graph&>(g)), x);
  EXPECT_EQ(m.nodes.size(), 5u);
  EXPECT_FALSE(m.exact);
}

TEST(Patterns, SiluEitherOperandOrderAndItsMisses) {
  for (bool sigmoidFirst : {true, false}) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {4}});
    Value* s = b.op("Sigmoid", {x});
    Value* y = sigmoidFirst ? b.op("Mul", {s, x}) : b.op("Mul", {x, s});
    b.output(y);
    std::vector<Node*> m = matchSilu(UseIndex(static_cast<const Graph&>(g)), x);
    ASSERT_EQ(m.size(), 2u) << sigmoidFirst;
    EXPECT_EQ(m[0], s->producer());
    EXPECT_EQ(m[1], y->producer());
  }
  // A half model's SiLU: the Sigmoid's result rounded before the Mul.
  {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {4}});
    Value* s = b.op("Sigmoid", {x});
    Value* rounded = b.op("ReducePrecision", {s}, {{"to", int64_t(10)}});
    Value* y = b.op("Mul", {x, rounded});
    b.output(y);
    std::vector<Node*> m = matchSilu(UseIndex(static_cast<const Graph&>(g)), x);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0], s->producer());
    EXPECT_EQ(m[1], rounded->producer());
    EXPECT_EQ(m[2], y->producer());
  }
  // Misses: x also an output; the sigmoid's result also an output; a Mul of another value.
  for (int miss = 0; miss < 3; ++miss) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, {4}});
    Value* other = b.input("other", {DType::F32, {4}});
    Value* s = b.op("Sigmoid", {x});
    b.output(b.op("Mul", {miss == 2 ? other : x, s}));
    if (miss == 0) b.output(x);
    if (miss == 1) b.output(s);
    EXPECT_TRUE(matchSilu(UseIndex(static_cast<const Graph&>(g)), x).empty()) << miss;
  }
}

TEST(Patterns, ErfGeluWhoseInnerValueEscapesIsNoMatch) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4}});
  Value* y = erfGelu(b, x, true, std::sqrt(2.0f), false);
  b.output(y);
  b.output(y->producer()->input(0));  // x * (1 + erf): used outside the pattern
  EXPECT_TRUE(matchErfGelu(UseIndex(static_cast<const Graph&>(g)), x).nodes.empty());
}
