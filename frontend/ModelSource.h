// Resolves the MODEL argument of every command: a path to an .onnx file, a
// friction text-IR file (.fir), or a zoo spec such as `zoo:resnet?depth=4`.
#pragma once
#include <memory>
#include <string>

#include "ir/Graph.h"

namespace friction {

std::unique_ptr<Graph> loadModel(const std::string& spec);

// Writes `graph` to `path`: friction text IR for a .fir path (constants in full, so it parses back), ONNX
// (checked by the ONNX checker) for any other.
void saveModel(const Graph& graph, const std::string& path);

}  // namespace friction
