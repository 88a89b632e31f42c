// ResNet: a stem (7x7/2 conv + 3x3/2 max pool), 4 stages of residual blocks
// at widths w, 2w, 4w, 8w (the first block of stages 2-4 halves the
// resolution), global average pool and a classifier.
#include "frontend/zoo/Blocks.h"

namespace friction::zoo {
namespace {

// Conv3x3-BN-Relu, Conv3x3-BN, + shortcut, Relu. Returns the output.
Value* basicBlock(Net& n, Value* x, int64_t cin, int64_t c, int64_t stride, const std::string& p) {
  Value* y = n.convBn(x, cin, c, 3, stride, p + ".conv1", "relu");
  y = n.convBn(y, c, c, 3, 1, p + ".conv2", "");
  // A 1x1 projection when the shape changes, as in the published ResNets.
  Value* shortcut = stride != 1 || cin != c ? n.convBn(x, cin, c, 1, stride, p + ".downsample", "") : x;
  return n.relu(n.add(y, shortcut, p + ".add"), p + ".relu");
}

// Conv1x1-BN-Relu, Conv3x3(stride)-BN-Relu, Conv1x1(x4)-BN, + shortcut, Relu (ResNet v1.5).
Value* bottleneckBlock(Net& n, Value* x, int64_t cin, int64_t m, int64_t stride, const std::string& p) {
  Value* y = n.convBn(x, cin, m, 1, 1, p + ".conv1", "relu");
  y = n.convBn(y, m, m, 3, stride, p + ".conv2", "relu");
  y = n.convBn(y, m, 4 * m, 1, 1, p + ".conv3", "");
  Value* shortcut = stride != 1 || cin != 4 * m ? n.convBn(x, cin, 4 * m, 1, stride, p + ".downsample", "") : x;
  return n.relu(n.add(y, shortcut, p + ".add"), p + ".relu");
}

std::unique_ptr<Graph> build(const ZooSpec& spec, const ArchInfo& info) {
  Knobs k(spec, info);
  bool bottleneck = k.choice("block", {"basic", "bottleneck"}) == "bottleneck";
  int64_t width = k.get("width"), res = k.get("resolution", 4, 8192), classes = k.get("classes");
  auto g = std::make_unique<Graph>("resnet");
  Net n(*g, k.seed());
  Value* h = n.convBn(imageInput(n, k, res), 3, width, 7, 2, "stem.conv", "relu");
  h = n.b.op("MaxPool", {h},
             {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
              {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
             "stem.pool");
  int64_t c = width;
  auto stages = k.stages(4);
  for (size_t s = 0; s < 4; ++s) {
    for (int64_t i = 0; i < stages[s]; ++i) {
      std::string p = "stage" + std::to_string(s + 1) + ".block" + std::to_string(i + 1);
      int64_t stride = i == 0 && s > 0 ? 2 : 1, sw = width << s;
      h = bottleneck ? bottleneckBlock(n, h, c, sw, stride, p) : basicBlock(n, h, c, sw, stride, p);
      c = bottleneck ? 4 * sw : sw;
    }
  }
  n.b.output(n.linear(n.globalPool(h, "head.pool"), c, classes, "head.fc"));
  return g;
}

}  // namespace

Arch resnetArch() {
  Arch a;
  a.info = {"resnet",
            "stem + 4 stages of residual blocks (basic: Conv-BN-Relu-Conv-BN-Add-Relu; bottleneck: 1x1-3x3-1x1)",
            withCommonKnobs({"depth=4", "stages=auto", "width=16", "resolution=32", "block=basic"}),
            {{"resnet18", "block=basic&depth=8&stages=2,2,2,2&width=64&resolution=224&classes=1000", 11689512},
             {"resnet34", "block=basic&depth=16&stages=3,4,6,3&width=64&resolution=224&classes=1000", 21797672},
             {"resnet50", "block=bottleneck&depth=16&stages=3,4,6,3&width=64&resolution=224&classes=1000", 25557032}}};
  ArchInfo info = a.info;
  a.build = [info](const ZooSpec& s) { return build(s, info); };
  return a;
}

}  // namespace friction::zoo
