// Whole-pipeline numerics: for every zoo archetype and every PyTorch export,
// the default pipeline, each leave-one-out configuration and all passes off
// give the unoptimized model's outputs on the interpreter (1e-4 relative).
#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;

namespace {

std::function<std::unique_ptr<Graph>()> modelBuilder(const std::string& spec) {
  if (spec.rfind("torch/", 0) == 0)
    return [spec] { return onnxio::importOnnxFile(std::string(FRICTION_SOURCE_DIR) + "/tests/models/" + spec + "/model.onnx"); };
  return [spec] { return zoo::build(zoo::parseSpec(spec)); };
}

}  // namespace

class Pipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(Pipeline, DefaultLeaveOneOutAndAllOffMatchUnoptimized) {
  auto build = modelBuilder(GetParam());
  {
    SCOPED_TRACE("default pipeline");
    expectSameNumerics(build, {});
  }
  for (const auto& p : allPasses()) {
    SCOPED_TRACE("without " + p.name);
    PipelineOptions o;
    o.disable = {p.name};
    for (const auto& q : allPasses())
      for (const auto& pre : q.prerequisites)
        if (pre == p.name) o.disable.push_back(q.name);  // leave-one-out drops what needs it, as the CLI requires
    expectSameNumerics(build, o);
  }
  {
    SCOPED_TRACE("all off");
    PipelineOptions o;
    for (const auto& p : allPasses()) o.disable.push_back(p.name);
    expectSameNumerics(build, o);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, Pipeline,
    ::testing::Values("resnet?depth=3&width=8&resolution=16", "resnet?depth=2&width=8&resolution=32&block=bottleneck",
                      "mobilenetv2?depth=3&width=8&resolution=16", "convnext?depth=2&width=16&resolution=32",
                      "vit?depth=2&width=16&resolution=16&patch=8&heads=2",
                      "mixer?depth=2&width=16&resolution=16&patch=8", "mlp?depth=3", "torch/resnet_basic",
                      "torch/resnet_bottleneck", "torch/mobilenet_v2", "torch/mobilenet_v3_small", "torch/vit",
                      "torch/swin", "torch/convnext"),
    [](const ::testing::TestParamInfo<std::string>& info) {
      std::string n;
      for (char c : info.param) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });
