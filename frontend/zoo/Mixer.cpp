// MLP-Mixer: patch embedding, `depth` mixer blocks, LayerNorm, mean over
// tokens and a classifier.
#include "frontend/zoo/Blocks.h"

#include <algorithm>

#include "ir/Error.h"

namespace friction::zoo {
namespace {

// Token mixing: LN, transpose to [N, d, T], MLP over tokens (T -> d/2 -> T),
// transpose back, Add. Channel mixing: LN, MLP over channels, Add.
Value* mixerBlock(Net& n, Value* x, int64_t tokens, int64_t d, int64_t ratio, const std::string& p) {
  Value* y = n.transpose(n.layerNorm(x, d, p + ".norm1"), {0, 2, 1}, p + ".token_mix.to_channels");
  y = n.mlp(y, tokens, std::max<int64_t>(1, d / 2), p + ".token_mix");
  x = n.add(x, n.transpose(y, {0, 2, 1}, p + ".token_mix.to_tokens"), p + ".add1");
  return n.add(x, n.mlp(n.layerNorm(x, d, p + ".norm2"), d, ratio * d, p + ".channel_mix"), p + ".add2");
}

std::unique_ptr<Graph> build(const ZooSpec& spec, const ArchInfo& info) {
  Knobs k(spec, info);
  int64_t depth = k.get("depth", 0, 4096), d = k.get("width"), patch = k.get("patch");
  int64_t res = k.get("resolution", 1, 8192), ratio = k.get("mlp_ratio", 1, 64), classes = k.get("classes");
  FRICTION_CHECK(res >= patch, "zoo:mixer: resolution=" + std::to_string(res) + " is smaller than patch=" + std::to_string(patch));
  int64_t tokens = (res / patch) * (res / patch);
  auto g = std::make_unique<Graph>("mixer");
  Net n(*g, k.seed());
  Value* x = n.patchEmbed(imageInput(n, k, res), d, patch, "stem");
  for (int64_t i = 0; i < depth; ++i) x = mixerBlock(n, x, tokens, d, ratio, "block" + std::to_string(i + 1));
  x = n.layerNorm(x, d, "norm");
  x = n.b.op("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t(0)}}, "head.pool");
  n.b.output(n.linear(x, d, classes, "head.fc"));
  return g;
}

}  // namespace

Arch mixerArch() {
  Arch a;
  a.info = {"mixer",
            "patch embedding + `depth` mixer blocks (LN, token-mixing MLP over transposed tokens, Add, LN, channel MLP, Add)",
            withCommonKnobs({"depth=2", "width=64", "patch=8", "resolution=32", "mlp_ratio=4"}),
            {{"mixer_s16", "depth=8&width=512&patch=16&resolution=224&mlp_ratio=4&classes=1000", 18528264},
             {"mixer_b16", "depth=12&width=768&patch=16&resolution=224&mlp_ratio=4&classes=1000", 59880472}}};
  ArchInfo info = a.info;
  a.build = [info](const ZooSpec& s) { return build(s, info); };
  return a;
}

}  // namespace friction::zoo
