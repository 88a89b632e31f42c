// Vision Transformer: patch embedding, class token, position embedding,
// `depth` pre-LN encoder blocks, final LayerNorm, classifier on the class token.
#include "frontend/zoo/Blocks.h"

#include "ir/Error.h"

namespace friction::zoo {
namespace {

// x + Attention(LN(x)), then x + MLP(LN(x)).
Value* encoderBlock(Net& n, Value* x, int64_t d, int64_t heads, int64_t ratio, const std::string& p) {
  x = n.add(x, n.attention(n.layerNorm(x, d, p + ".norm1"), d, heads, p + ".attn"), p + ".add1");
  return n.add(x, n.mlp(n.layerNorm(x, d, p + ".norm2"), d, ratio * d, p + ".mlp"), p + ".add2");
}

std::unique_ptr<Graph> build(const ZooSpec& spec, const ArchInfo& info) {
  Knobs k(spec, info);
  int64_t depth = k.get("depth", 0, 4096), d = k.get("width"), heads = k.get("heads"), patch = k.get("patch");
  int64_t res = k.get("resolution", 1, 8192), ratio = k.get("mlp_ratio", 1, 64), classes = k.get("classes");
  FRICTION_CHECK(d % heads == 0, "zoo:vit: width=" + std::to_string(d) + " is not divisible by heads=" + std::to_string(heads));
  FRICTION_CHECK(res >= patch, "zoo:vit: resolution=" + std::to_string(res) + " is smaller than patch=" + std::to_string(patch));
  int64_t tokens = (res / patch) * (res / patch) + 1;
  auto g = std::make_unique<Graph>("vit");
  Net n(*g, k.seed());
  Value* x = n.patchEmbed(imageInput(n, k, res), d, patch, "patch_embed");
  // The class token is broadcast to the (possibly symbolic) batch with
  // Shape -> Concat -> Expand, as exporters write it.
  Value* batch = n.b.op("Shape", {x}, {{"start", int64_t(0)}, {"end", int64_t(1)}}, "cls_token.batch");
  Value* target = n.b.op("Concat", {batch, n.ints({1, d})}, {{"axis", int64_t(0)}}, "cls_token.shape");
  Value* cls = n.b.op("Expand", {n.param("cls_token", {1, 1, d}, 0.0f, 0.02f), target}, {}, "cls_token.expand");
  x = n.b.op("Concat", {cls, x}, {{"axis", int64_t(1)}}, "cls_token.concat");
  x = n.add(x, n.param("pos_embed", {1, tokens, d}, 0.0f, 0.02f), "pos_embed");
  for (int64_t i = 0; i < depth; ++i) x = encoderBlock(n, x, d, heads, ratio, "encoder.block" + std::to_string(i + 1));
  x = n.layerNorm(x, d, "norm");
  Value* first = n.b.op("Gather", {x, n.b.constant(Tensor::scalarI64(0), "cls_index")}, {{"axis", int64_t(1)}}, "head.cls");
  n.b.output(n.linear(first, d, classes, "head.fc"));
  return g;
}

}  // namespace

Arch vitArch() {
  Arch a;
  const char* base = "depth=12&patch=16&resolution=224&classes=1000&mlp_ratio=4";
  a.info = {"vit",
            "patch embedding + class token + `depth` pre-LN encoder blocks (LN, MHA, Add, LN, Linear-GELU-Linear, Add)",
            withCommonKnobs({"depth=2", "width=64", "heads=4", "patch=8", "resolution=32", "mlp_ratio=4"}),
            {{"vit_ti", std::string(base) + "&width=192&heads=3", 5717416},
             {"vit_s", std::string(base) + "&width=384&heads=6", 22050664},
             {"vit_b", std::string(base) + "&width=768&heads=12", 86567656}}};
  ArchInfo info = a.info;
  a.build = [info](const ZooSpec& s) { return build(s, info); };
  return a;
}

}  // namespace friction::zoo
