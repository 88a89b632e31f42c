// The friction text IR (.fir). Printing then parsing a graph gives the same
// graph: same values, types, attributes, initializer bytes and node order.
//
//   graph "main" opset 17 {
//     input %x : f32[N,3,8,8]
//     const %w : f32[4,3,3,3] = hex"0000803f..."
//     %y : f32[N,4,8,8] = Conv(%x, %w, _) {pads = [1, 1, 1, 1]} @"conv1"
//     output %y
//     meta "memory.peak_bytes" = 4096
//   }
#pragma once
#include <memory>
#include <string>

#include "ir/Graph.h"

namespace friction {

struct PrintOptions {
  // Initializers larger than this many bytes print as `<N bytes>` (not parseable); -1 prints all.
  int64_t maxConstantBytes = -1;
};

std::string printGraph(const Graph& graph, const PrintOptions& options = {});
// One attribute value as the text format writes it (tensors as `tensor<..> hex"..."`).
std::string printAttribute(const Attribute& a);
// Parses text produced by printGraph. `source` names the input in errors
// ("file.fir:12:5: ..."). The result is verified.
std::unique_ptr<Graph> parseGraph(const std::string& text, const std::string& source = "<text>");

}  // namespace friction
