// ONNX import: ModelProto -> friction Graph. Other opsets are normalized to
// opset-17 semantics (see OpsetAdapters.cpp), shapes are inferred, and every
// problem in the file is reported as an Error naming the file, node or field.
#pragma once
#include <memory>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/Graph.h"

namespace friction::onnxio {

// Oldest and newest default-domain opsets the importer accepts: up to the newest of the onnx package in the
// project venv (1.23), whose every change to a supported op since 17 is an entry of OpsetAdapters.cpp
// (tests/python/test_opsets.py checks that against the package's schemas).
constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 28;

std::unique_ptr<Graph> importOnnxFile(const std::string& path);
// Imports from memory (fuzzing, tests). `name` appears in errors.
std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& name);
// Consumes `model` (initializer bytes are moved, not copied).
std::unique_ptr<Graph> importOnnxModel(onnx::ModelProto& model, const std::string& baseDir,
                                       const std::string& name);

}  // namespace friction::onnxio
