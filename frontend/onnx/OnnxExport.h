// ONNX export: friction Graph -> a standard opset-17 ModelProto that passes
// the ONNX checker. Zoo models, passes and vendor bridges all go through it.
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/Graph.h"

namespace friction::onnxio {

onnx::ModelProto exportOnnx(const Graph& graph);
// Exports, runs the ONNX checker, and writes `path`.
void exportOnnxFile(const Graph& graph, const std::string& path);

}  // namespace friction::onnxio
