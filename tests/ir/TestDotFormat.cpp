// Pictures of graphs: fused regions as labelled clusters with their provenance, convert-layout regions as one
// box, dedup instances coloured by pattern, constants left out, edges labelled with shapes.
#include <gtest/gtest.h>

#include <regex>

#include "ir/DotFormat.h"
#include "ir/TextFormat.h"

using namespace friction;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}

// The fill colour of the cluster whose label starts with `label`.
std::string clusterFill(const std::string& dot, const std::string& label) {
  std::smatch m;
  std::regex re("fillcolor=\"(#[0-9a-f]+)\"; [^\\n]*\\n[^\\n]*label=\"" + label);
  EXPECT_TRUE(std::regex_search(dot, m, re)) << label;
  return m.size() > 1 ? m[1].str() : "";
}

const char* kRegions = R"(graph "g" opset 17 {
  input %x : f32[1,4]
  const %w : f32[4,4] = hex"0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f0000803f"
  %a : f32[1,4] = Fused(%x, %w) {body = graph "epilogue" opset 17 {
    input %bx : f32[1,4]
    input %bw : f32[4,4]
    %m : f32[1,4] = MatMul(%bx, %bw) @"mm"
    %r : f32[1,4] = Relu(%m) @"relu"
    output %r
  }, kind = "epilogue", provenance = ["mm", "relu"]} @"epilogue:relu"
  %t : f32[4,1] = Transpose(%a) {perm = [1, 0]} @"t"
  const %s : i64[2] = hex"01000000000000000400000000000000"
  %y : f32[1,4] = Reshape(%t, %s) @"back"
  output %y
}
)";

TEST(DotFormat, RegionsAreClustersWithTheirProvenanceAndConstantsAreCounted) {
  std::string dot = printDot(*parseGraph(kRegions), {.title = "after"});
  EXPECT_EQ(count(dot, "subgraph cluster_"), 1);
  EXPECT_NE(dot.find("label=\"region epilogue\\nfrom: mm, relu\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"MatMul\\n+1 const\""), std::string::npos) << dot;  // the weight, not drawn
  EXPECT_NE(dot.find("label=\"Transpose [1,0]\""), std::string::npos) << dot;
  EXPECT_EQ(dot.find("0000803f"), std::string::npos);                       // no constant data
  EXPECT_NE(dot.find("[label=\"4x1\"]"), std::string::npos) << dot;          // the transpose's result shape
  EXPECT_NE(dot.find("label=\"after\""), std::string::npos);
  // Every edge joins drawn nodes: the region's output is its Relu, the graph output reads the Reshape.
  std::smatch m;
  std::string rest = dot;
  int edges = 0;
  for (std::regex e("(n[0-9]+) -> (n[0-9]+)"); std::regex_search(rest, m, e); rest = m.suffix()) {
    edges++;
    EXPECT_NE(dot.find("  " + m[1].str() + " ["), std::string::npos) << m[1];
  }
  EXPECT_EQ(edges, 5);  // x->MatMul, MatMul->Relu, Relu->Transpose, Transpose->Reshape, Reshape->y
}

TEST(DotFormat, PatternInstancesShareAColourAndNhwcRegionsAreOneBox) {
  const char* text = R"(graph "g" opset 17 {
  input %x : f32[1,4,4,2]
  %a : f32[1,4,4,2] = Fused(%x) {body = graph "nhwc" opset 17 {
    input %bx : f32[1,4,4,2]
    %b : f32[1,2,4,4] = Transpose(%bx) {perm = [0, 3, 1, 2]} @"b"
    %c : f32[1,2,4,4] = Relu(%b) @"c"
    %d : f32[1,4,4,2] = Transpose(%c) {perm = [0, 2, 3, 1]} @"d"
    output %d
  }, kind = "nhwc", provenance = ["c"]} @"nhwc:c"
  %p1 : f32[1,4,4,2] = Fused(%a) {body = graph "p" opset 17 {
    input %i : f32[1,4,4,2]
    %o : f32[1,4,4,2] = Sigmoid(%i) @"s"
    output %o
  }, kind = "pattern", provenance = ["s1"]} @"pattern:1"
  %p2 : f32[1,4,4,2] = Fused(%p1) {body = graph "p" opset 17 {
    input %i : f32[1,4,4,2]
    %o : f32[1,4,4,2] = Sigmoid(%i) @"s"
    output %o
  }, kind = "pattern", provenance = ["s2"]} @"pattern:2"
  %p3 : f32[1,4,4,2] = Fused(%p2) {body = graph "q" opset 17 {
    input %i : f32[1,4,4,2]
    %o : f32[1,4,4,2] = Tanh(%i) @"t"
    output %o
  }, kind = "pattern", provenance = ["t1"]} @"pattern:3"
  output %p3
}
)";
  std::string dot = printDot(*parseGraph(text));
  EXPECT_EQ(count(dot, "subgraph cluster_"), 3) << dot;  // the pattern instances; the nhwc region is a box
  EXPECT_NE(dot.find("label=\"Relu (nhwc)\""), std::string::npos) << dot;
  EXPECT_EQ(dot.find("Transpose"), std::string::npos) << dot;  // the region's own transposes run in its kernel
  EXPECT_EQ(clusterFill(dot, "pattern 1, instance 1\\\\nfrom: s1"), clusterFill(dot, "pattern 1, instance 2\\\\nfrom: s2"));
  EXPECT_NE(clusterFill(dot, "pattern 1, instance 1"), clusterFill(dot, "pattern 2, instance 1\\\\nfrom: t1"));
}

}  // namespace
