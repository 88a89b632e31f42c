// MobileNetV2: a 3x3/2 stem, 7 stages of inverted residual blocks (the
// published channel/stride table scaled by width/32), a 1x1 conv to 40*width
// channels, global average pool and a classifier.
#include "frontend/zoo/Blocks.h"

#include <algorithm>

namespace friction::zoo {
namespace {

struct StageSpec {
  int64_t channels, stride;  // at width 32, as published
};
constexpr StageSpec kStages[7] = {{16, 1}, {24, 2}, {32, 2}, {64, 2}, {96, 1}, {160, 2}, {320, 1}};

// 1x1 expand (skipped when expand is 1), depthwise 3x3, 1x1 linear projection;
// Clip(0, 6) is Relu6; residual when the shape is kept.
Value* invertedResidual(Net& n, Value* x, int64_t cin, int64_t cout, int64_t expand, int64_t stride,
                        const std::string& p) {
  int64_t hidden = cin * expand;
  Value* y = expand != 1 ? n.convBn(x, cin, hidden, 1, 1, p + ".expand", "relu6") : x;
  y = n.convBn(y, hidden, hidden, 3, stride, p + ".dwconv", "relu6", /*group=*/hidden);
  y = n.convBn(y, hidden, cout, 1, 1, p + ".project", "");
  return stride == 1 && cin == cout ? n.add(x, y, p + ".add") : y;
}

std::unique_ptr<Graph> build(const ZooSpec& spec, const ArchInfo& info) {
  Knobs k(spec, info);
  int64_t width = k.get("width"), res = k.get("resolution", 4, 8192), classes = k.get("classes");
  int64_t expand = k.get("expand", 1, 64);
  auto scaled = [&](int64_t c) { return std::max<int64_t>(1, c * width / 32); };
  auto g = std::make_unique<Graph>("mobilenetv2");
  Net n(*g, k.seed());
  int64_t c = scaled(32);
  Value* h = n.convBn(imageInput(n, k, res), 3, c, 3, 2, "stem.conv", "relu6");
  auto stages = k.stages(7);
  for (size_t s = 0; s < 7; ++s) {
    for (int64_t i = 0; i < stages[s]; ++i) {
      std::string p = "stage" + std::to_string(s + 1) + ".block" + std::to_string(i + 1);
      int64_t cout = scaled(kStages[s].channels);
      // The first stage keeps expansion 1, as published.
      h = invertedResidual(n, h, c, cout, s == 0 ? 1 : expand, i == 0 ? kStages[s].stride : 1, p);
      c = cout;
    }
  }
  int64_t last = scaled(1280);
  h = n.convBn(h, c, last, 1, 1, "head.conv", "relu6");
  n.b.output(n.linear(n.globalPool(h, "head.pool"), last, classes, "head.fc"));
  return g;
}

}  // namespace

Arch mobilenetV2Arch() {
  Arch a;
  a.info = {"mobilenetv2",
            "stem + 7 stages of inverted residuals (1x1 expand-Clip6, depthwise 3x3-Clip6, 1x1 project, Add)",
            withCommonKnobs({"depth=7", "stages=auto", "width=16", "resolution=32", "expand=6"}),
            {{"mobilenetv2", "depth=17&stages=1,2,3,4,3,3,1&width=32&expand=6&resolution=224&classes=1000", 3504872}}};
  ArchInfo info = a.info;
  a.build = [info](const ZooSpec& s) { return build(s, info); };
  return a;
}

}  // namespace friction::zoo
