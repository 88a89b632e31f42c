// A plain MLP: `depth` Gemm+Relu layers of `width` units and a classifier.
#include "frontend/zoo/Blocks.h"

namespace friction::zoo {
namespace {

std::unique_ptr<Graph> build(const ZooSpec& spec, const ArchInfo& info) {
  Knobs k(spec, info);
  int64_t depth = k.get("depth", 0, 4096), width = k.get("width"), inputs = k.get("inputs"), classes = k.get("classes");
  auto g = std::make_unique<Graph>("mlp");
  Net n(*g, k.seed());
  Value* h = n.b.input("input", {DType::F32, Shape({k.batch(), inputs})});
  int64_t in = inputs;
  for (int64_t i = 0; i < depth; ++i) {
    std::string p = "layer" + std::to_string(i + 1);
    h = n.relu(n.linear(h, in, width, p + ".fc"), p + ".relu");
    in = width;
  }
  n.b.output(n.linear(h, in, classes, "head.fc"));
  return g;
}

}  // namespace

Arch mlpArch() {
  Arch a;
  a.info = {"mlp", "`depth` Gemm+Relu layers and a Gemm classifier",
            withCommonKnobs({"depth=2", "width=64", "inputs=64"}),
            {{"mlp_1g", "depth=4&width=8192&inputs=8192&classes=1000", 0}}};
  ArchInfo info = a.info;
  a.build = [info](const ZooSpec& s) { return build(s, info); };
  return a;
}

}  // namespace friction::zoo
