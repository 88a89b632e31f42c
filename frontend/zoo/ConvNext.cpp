// ConvNeXt: a 4x4/4 patchify stem + LayerNorm, 4 stages at widths w, 2w, 4w,
// 8w separated by LayerNorm + 2x2/2 conv downsampling, global average pool,
// LayerNorm and a classifier.
#include "frontend/zoo/Blocks.h"

#include "ir/Error.h"

namespace friction::zoo {
namespace {

// Depthwise 7x7, then channels-last: LayerNorm, Linear(4x)-GELU-Linear,
// layer scale; back to NCHW and the residual Add.
Value* convnextBlock(Net& n, Value* x, int64_t c, int64_t ratio, const std::string& p) {
  Value* y = n.conv(x, c, c, 7, 1, p + ".dwconv", /*group=*/c, /*bias=*/true);
  y = n.layerNorm(n.transpose(y, {0, 2, 3, 1}, p + ".to_nhwc"), c, p + ".norm");
  y = n.mlp(y, c, ratio * c, p + ".mlp");
  y = n.b.op("Mul", {y, n.param(p + ".gamma", {c}, 0.1f, 0.05f)}, {}, p + ".layer_scale");
  return n.add(x, n.transpose(y, {0, 3, 1, 2}, p + ".to_nchw"), p + ".add");
}

std::unique_ptr<Graph> build(const ZooSpec& spec, const ArchInfo& info) {
  Knobs k(spec, info);
  int64_t width = k.get("width"), res = k.get("resolution", 4, 8192), classes = k.get("classes");
  int64_t ratio = k.get("mlp_ratio", 1, 64);
  auto g = std::make_unique<Graph>("convnext");
  Net n(*g, k.seed());
  Value* h = n.conv(imageInput(n, k, res), 3, width, 4, 4, "stem.conv", 1, true, 0);
  h = n.channelLayerNorm(h, width, "stem.norm");
  int64_t c = width, size = (res - 4) / 4 + 1;
  auto stages = k.stages(4);
  for (size_t s = 0; s < 4; ++s) {
    if (stages[s] == 0) continue;
    std::string p = "stage" + std::to_string(s + 1);
    if (s > 0) {
      FRICTION_CHECK(size >= 2, "zoo:convnext: resolution=" + std::to_string(res) + " is too small to downsample " +
                                    "before " + p + " (feature map " + std::to_string(size) + "x" + std::to_string(size) + ")");
      h = n.channelLayerNorm(h, c, p + ".downsample.norm");
      h = n.conv(h, c, width << s, 2, 2, p + ".downsample.conv", 1, true, 0);
      c = width << s;
      size = (size - 2) / 2 + 1;
    }
    for (int64_t i = 0; i < stages[s]; ++i) h = convnextBlock(n, h, c, ratio, p + ".block" + std::to_string(i + 1));
  }
  h = n.layerNorm(n.globalPool(h, "head.pool"), c, "head.norm");
  n.b.output(n.linear(h, c, classes, "head.fc"));
  return g;
}

}  // namespace

Arch convnextArch() {
  Arch a;
  a.info = {"convnext",
            "patchify stem + 4 stages of ConvNeXt blocks (dwconv 7x7, LayerNorm, Linear-GELU-Linear, layer scale, Add)",
            withCommonKnobs({"depth=4", "stages=auto", "width=16", "resolution=32", "mlp_ratio=4"}),
            {{"convnext_t", "depth=18&stages=3,3,9,3&width=96&resolution=224&classes=1000", 28589128}}};
  ArchInfo info = a.info;
  a.build = [info](const ZooSpec& s) { return build(s, info); };
  return a;
}

}  // namespace friction::zoo
