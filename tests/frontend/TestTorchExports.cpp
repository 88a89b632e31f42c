// Shape inference on PyTorch's dynamic-batch exports: the symbolic batch must
// flow through Shape/Gather/Concat/Reshape arithmetic to the outputs.
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
  for (const Value* v : g->inputs()) {
    EXPECT_EQ(v->shape()[0].str(), "N") << v->name();
    for (size_t d = 1; d < v->shape().rank(); ++d) EXPECT_TRUE(v->shape()[d].isStatic()) << v->name();
  }
  for (const Value* v : g->outputs()) EXPECT_EQ(v->shape()[0].str(), "N") << v->name();
  bindInputDims(*g, batchBindings(*g, 2));
  verify(*g);
  for (const auto& n : g->nodes())
    for (const Value* v : n->outputs()) EXPECT_TRUE(v->shape().isStatic()) << n->describe() << ": " << v->type().str();
}

// Swin's (V1 and V2) padding arithmetic (2-D shuffles of pad amounts) is beyond
// shape tracking; fold-constants resolves it. Its outputs still run correctly.
INSTANTIATE_TEST_SUITE_P(Architectures, TorchExport,
                         ::testing::Values("resnet_basic", "resnet_bottleneck", "resnext", "wide_resnet", "mobilenet_v2",
                                           "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet",
                                           "efficientnet_v2", "regnet_x", "regnet_y", "shufflenet_v2", "squeezenet",
                                           "inception", "densenet", "mnasnet", "convnext", "vit", "maxvit", "gpt",
                                           "bert", "lstm_tagger", "gru_speech"));
