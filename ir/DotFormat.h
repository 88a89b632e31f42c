// Pictures of graphs: a friction Graph as Graphviz DOT. Fused regions are
// labelled clusters holding their body (kind, the ops inside, and the ONNX
// nodes they replaced); the instances of one dedup pattern share a colour;
// layout transposes and channels-last (nhwc) regions are marked; edges carry
// the tensor's shape. Initializers and Constants are left out (a node says
// how many constant operands it has), so a picture shows the computation.
#pragma once
#include <string>

#include "ir/Graph.h"

namespace friction {

struct DotOptions {
  std::string title;  // drawn above the graph; empty: the graph's name
};

std::string printDot(const Graph& graph, const DotOptions& options = {});

// DOT text rendered as SVG text by Graphviz's `dot` (Debian's graphviz package). Throws Error when `dot` is
// missing or fails.
std::string renderSvg(const std::string& dot);

}  // namespace friction
