// The text IR round-trips exactly, and malformed text gets a located error.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/TextFormat.h"

using namespace friction;

namespace {

std::unique_ptr<Graph> attributeZoo() {
  auto g = std::make_unique<Graph>("attrs");
  GraphBuilder b(*g);
  Value* x = b.input("x", {DType::F32, Shape({Dim::sym("N"), 3, 8, 8})});
  Value* w = b.constant(Tensor::fromVector<float>(DType::F32, {4, 3, 1, 1}, std::vector<float>(12, 0.5f)), "w");
  Value* y = b.op("Conv", {x, w}, {{"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"strides", std::vector<int64_t>{1, 1}}},
                  "conv with spaces");
  Value* c = b.op("Constant", {}, {{"value", Tensor::fromVector<float>(DType::F32, {1}, {NAN})}});
  Value* k = b.op("Clip", {y, b.constant(Tensor::scalarF32(-INFINITY)), b.constant(Tensor::scalarF32(1e-7f))});
  Value* l = b.op("LeakyRelu", {k}, {{"alpha", 0.1f}});
  Value* s = b.op("Add", {l, c});
  b.output(s);
  g->metadata()["memory.offsets"] = std::vector<int64_t>{0, 64, 128};
  g->metadata()["note"] = std::string("kept");
  return g;
}

}  // namespace

TEST(TextFormat, RoundTripIsExact) {
  auto g = attributeZoo();
  std::string once = printGraph(*g);
  auto parsed = parseGraph(once, "test");
  EXPECT_EQ(printGraph(*parsed), once);
  ASSERT_EQ(parsed->initializers().size(), g->initializers().size());
  for (size_t i = 0; i < g->initializers().size(); ++i)
    EXPECT_TRUE(parsed->initializers()[i]->constant().bitwiseEqual(g->initializers()[i]->constant()));
  EXPECT_EQ(parsed->nodes()[0]->name(), "conv with spaces");
  EXPECT_EQ(parsed->nodes()[0]->output(0)->shape().str(), "[N,4,8,8]");
}

TEST(TextFormat, RoundTripsZooModel) {
  auto g = zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=16"));
  std::string once = printGraph(*g);
  EXPECT_EQ(printGraph(*parseGraph(once)), once);
}

TEST(TextFormat, FloatAttributesKeepEveryBit) {
  for (float f : {0.1f, 1e-5f, 3.4028235e38f, 1.17549435e-38f, -0.0f, 1.0f, 7.0f}) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", {DType::F32, Shape({2})});
    b.output(b.op("LeakyRelu", {x}, {{"alpha", f}}));
    auto p = parseGraph(printGraph(g));
    float back = p->nodes()[0]->attrFloat("alpha", 0);
    EXPECT_EQ(std::signbit(back), std::signbit(f));
    EXPECT_EQ(back, f);
  }
}

TEST(TextFormat, EmptyListsKeepTheirKind) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape({2, 3})});
  b.output(b.op("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}}));
  g.nodes()[0]->setAttr("perm", std::vector<int64_t>{});
  std::string text = printGraph(g);
  EXPECT_NE(text.find("perm = ints[]"), std::string::npos);
}

TEST(TextFormat, ErrorsNameLineAndColumn) {
  const char* text = "graph \"g\" opset 17 {\n  input %x : f32[2]\n  %y : f32[2] = Relu(%nope) @\"r\"\n  output %y\n}\n";
  try {
    parseGraph(text, "bad.fir");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.fir:3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
}

TEST(TextFormat, RejectsWrongConstantSizeAndBadTypes) {
  EXPECT_THROW(parseGraph("graph \"g\" opset 17 {\n const %w : f32[2] = hex\"00\"\n}"), Error);
  EXPECT_THROW(parseGraph("graph \"g\" opset 17 {\n input %x : q7[2]\n}"), Error);
  EXPECT_THROW(parseGraph("graph \"g\" opset 17 {\n input %x : f32[2]\n input %x : f32[2]\n}"), Error);
  EXPECT_THROW(parseGraph("graph \"g\" opset 17 {\n input %x : f32[2]"), Error);
}

TEST(TextFormat, ParsedGraphIsVerified) {
  // Relu's output typed i64 contradicts inference from an f32 input.
  const char* text = "graph \"g\" opset 17 {\n  input %x : f32[2]\n  %y : i64[2] = Relu(%x) @\"r\"\n  output %y\n}\n";
  EXPECT_THROW(parseGraph(text), Error);
}

// A shape input of billions of entries (the fuzzer's find: a Reshape's i64[3555555555]) is refused in one line
// naming the node, not taken as that many dims to allocate.
TEST(TextFormat, AShapeInputOfTooManyDimsIsRefused) {
  const char* text = "graph \"g\" opset 17 {\n  input %x : f32[2,3,4]\n  input %s : i64[3555555555]\n"
                     "  %y : f32[2,6,2] = Reshape(%x, %s) @\"r\"\n  output %y\n}\n";
  try {
    parseGraph(text, "huge.fir");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Reshape 'r'"), std::string::npos) << what;
    EXPECT_NE(what.find("3555555555 dims"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}
