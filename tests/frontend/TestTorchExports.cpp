// Shape inference on PyTorch's dynamic-batch exports: the symbolic batch must
// flow through Shape/Gather/Concat/Reshape arithmetic to the logits.
#include <gtest/gtest.h>

#include "frontend/onnx/OnnxImport.h"
#include "ir/Specialize.h"
#include "ir/Verifier.h"

using namespace friction;

class TorchExport : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchExport, BatchStaysSymbolicAndBindsToStatic) {
  std::string path = std::string(FRICTION_SOURCE_DIR) + "/tests/models/torch/" + GetParam() + "/model.onnx";
  auto g = onnxio::importOnnxFile(path);
  verify(*g);
  EXPECT_EQ(g->inputs()[0]->shape().str(), "[N,3,32,32]");
  EXPECT_EQ(g->outputs()[0]->shape().str(), "[N,10]");
  bindInputDims(*g, batchBindings(*g, 2));
  verify(*g);
  for (const auto& n : g->nodes())
    for (const Value* v : n->outputs()) EXPECT_TRUE(v->shape().isStatic()) << n->describe() << ": " << v->type().str();
}

// Swin's padding arithmetic (2-D shuffles of pad amounts) is beyond shape
// tracking; fold-constants resolves it. Its outputs still run correctly.
INSTANTIATE_TEST_SUITE_P(Architectures, TorchExport,
                         ::testing::Values("resnet_basic", "resnet_bottleneck", "mobilenet_v2", "mobilenet_v3_small",
                                           "vit", "convnext"));
