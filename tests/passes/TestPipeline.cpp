// Whole-pipeline numerics: for every zoo archetype and every PyTorch export,
// the default pipeline, each leave-one-out configuration and all passes off
// give the unoptimized model's outputs on the interpreter (1e-4 relative).
#include <set>

#include "frontend/onnx/OnnxExport.h"
#include "tests/passes/PassTestUtil.h"

using namespace friction;
using namespace friction::testing;


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

INSTANTIATE_TEST_SUITE_P(Models, Pipeline, ::testing::ValuesIn(kNumericsModels), testNameOf);

// After the default pipeline (nested regions included) the model still exports
// to valid ONNX with unique node names (ONNX Runtime rejects duplicates) and
// computes the same outputs.
TEST(Pipeline, DefaultPipelineExportsValidOnnx) {
  std::vector<std::string> all;
  for (const PassInfo* p : buildPipeline({})) all.push_back(p->name);
  for (const auto& spec : kNumericsModels) {
    if (spec.rfind("torch/", 0) == 0) continue;
    SCOPED_TRACE(spec);
    expectExportRoundTrip(spec, all);
    auto g = modelBuilder(spec)();
    runPipeline(*g, buildPipeline({}));
    onnx::ModelProto m = onnxio::exportOnnx(*g);
    std::set<std::string> names;
    for (const auto& n : m.graph().node()) EXPECT_TRUE(names.insert(n.name()).second) << "duplicate node name " << n.name();
  }
}
