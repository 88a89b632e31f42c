// Conversions between ONNX TensorProto and friction tensors, and the .pb
// tensor files of the ONNX backend-test layout (input_0.pb, output_0.pb).
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/Tensor.h"

namespace friction::onnxio {

// Converts `proto`, moving its raw_data into the tensor (no copy). `baseDir`
// resolves external data files. `context` names the tensor in errors.
Tensor tensorFromProto(onnx::TensorProto& proto, const std::string& baseDir, const std::string& context);
onnx::TensorProto tensorToProto(const Tensor& t, const std::string& name);

// Reads / writes one serialized TensorProto (.pb file).
Tensor readTensorFile(const std::string& path, std::string* name = nullptr);
void writeTensorFile(const std::string& path, const Tensor& t, const std::string& name);

}  // namespace friction::onnxio
