// The verifier catches every kind of broken graph a pass could produce.
#include <gtest/gtest.h>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Verifier.h"

using namespace friction;

namespace {

struct Small {
  Graph g;
  Value *x, *a, *b;
  Small() {
    GraphBuilder bld(g);
    x = bld.input("x", {DType::F32, Shape({Dim::sym("N"), 4})});
    a = bld.op("Relu", {x}, {}, "a");
    b = bld.op("Neg", {a}, {}, "b");
    bld.output(b);
  }
};

void expectVerifyError(Graph& g, const std::string& part) {
  try {
    verify(g);
    FAIL() << "expected a verifier error mentioning " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Verifier, AcceptsAWellFormedGraph) {
  Small s;
  EXPECT_NO_THROW(verify(s.g));
}

TEST(Verifier, RejectsUseBeforeDefinition) {
  Small s;
  // Make `a` consume `b`, which is defined after it: a cycle.
  s.g.nodes()[0]->setInput(0, s.b);
  expectVerifyError(s.g, "not defined before use");
}

TEST(Verifier, RejectsWrongArity) {
  Small s;
  s.g.nodes()[1]->setInputs({s.a, s.a});
  expectVerifyError(s.g, "inputs");
}

TEST(Verifier, RejectsUnknownAndMistypedAttributes) {
  Small s;
  s.g.nodes()[0]->setAttr("alpha", 0.5f);
  expectVerifyError(s.g, "unknown attribute 'alpha'");
  Small t;
  GraphBuilder b(t.g);
  Value* l = b.op("LeakyRelu", {t.b}, {{"alpha", 0.1f}});
  t.g.nodes().back()->setAttr("alpha", int64_t(1));
  (void)l;
  expectVerifyError(t.g, "should be float");
}

TEST(Verifier, RejectsStaleTypes) {
  Small s;
  s.b->setType({DType::I64, s.b->shape()});
  expectVerifyError(s.g, "inference gives");
}

TEST(Verifier, RejectsUndefinedGraphOutput) {
  Small s;
  Graph other;
  Value* stray = other.addInput("stray", {DType::F32, Shape({1})});
  s.g.addOutput(stray);
  expectVerifyError(s.g, "graph output 'stray'");
}

TEST(Verifier, ChecksRegionBodies) {
  Small s;
  auto body = std::make_shared<Graph>("body");
  Value* in = body->addInput("in", {DType::F32, Shape({Dim::sym("N"), 4})});
  Graph elsewhere;
  Value* ghost = elsewhere.addInput("ghost", {DType::F32, Shape({1})});
  Node* n = body->addNode("Add", {in, ghost}, {"out"}, {}, "add");
  body->addOutput(n->output(0));
  s.g.addNode("Fused", {s.b}, {"f"}, {{"body", body}}, "region");
  expectVerifyError(s.g, "region");
}
