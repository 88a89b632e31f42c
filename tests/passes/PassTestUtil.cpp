#include "tests/passes/PassTestUtil.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Specialize.h"
#include "ir/TextFormat.h"
#include "ir/Verifier.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"

namespace friction::testing {
std::map<std::string, int64_t> expectPassRewrites(const std::string& pass, const std::string& before,
                                                  const std::string& expected) {
  auto g = parseGraph(before, pass + " before");
  auto want = parseGraph(expected, pass + " expected");
  PipelineOptions o;
  o.passes = {pass};
  RunOptions r;
  r.verifyEach = true;
  auto records = runPipeline(*g, buildPipeline(o), r);
  EXPECT_EQ(structuralText(*g), structuralText(*want)) << "after " << pass << ":\n" << printGraph(*g);
  return records.empty() ? std::map<std::string, int64_t>{} : records.back().stats;
}

const std::vector<std::string> kNumericsModels = {
    "resnet?depth=3&width=8&resolution=16",
    "resnet?depth=2&width=8&resolution=32&block=bottleneck",
    "mobilenetv2?depth=3&width=8&resolution=16",
    "convnext?depth=2&width=16&resolution=32",
    "vit?depth=2&width=16&resolution=16&patch=8&heads=2",
    "mixer?depth=2&width=16&resolution=16&patch=8",
    "mlp?depth=3",
    "torch/resnet_basic",
    "torch/resnet_bottleneck",
    "torch/mobilenet_v2",
    "torch/mobilenet_v3_small",
    "torch/vit",
    "torch/swin",
    "torch/convnext",
    "torch/inception",
    "torch/lstm_tagger",
    "torch/gru_speech",
};

ModelBuilder modelBuilder(const std::string& spec) {
  if (spec.rfind("torch/", 0) == 0)
    return [spec] { return onnxio::importOnnxFile(std::string(FRICTION_SOURCE_DIR) + "/tests/models/" + spec + "/model.onnx"); };
  return [spec] { return zoo::build(zoo::parseSpec(spec)); };
}

std::string testNameOf(const ::testing::TestParamInfo<std::string>& info) {
  std::string n;
  for (char c : info.param) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
}

PipelineOptions exactly(std::vector<std::string> passes) {
  PipelineOptions o;
  o.passes = std::move(passes);
  return o;
}

namespace {

// Runs both graphs on the same seeded inputs and compares every element.
void expectSameOutputs(const Graph& reference, const Graph& optimized, double rtol, double atol) {
  // The model's interface survives the passes: same output names, in order.
  ASSERT_EQ(optimized.outputs().size(), reference.outputs().size());
  for (size_t i = 0; i < reference.outputs().size(); ++i)
    ASSERT_EQ(optimized.outputs()[i]->name(), reference.outputs()[i]->name());
  std::vector<Tensor> inputs = seededInputs(reference, 42);
  std::vector<Tensor> want = interp::run(reference, inputs);
  std::vector<Tensor> got = interp::run(optimized, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    for (int64_t k = 0; k < got[i].numel(); ++k) {
      double g = got[i].elementAsDouble(k), w = want[i].elementAsDouble(k);
      ASSERT_LE(std::fabs(g - w), atol + rtol * std::fabs(w)) << "output " << i << " element " << k;
    }
  }
}

std::vector<PassRecord> runVerified(Graph& g, const PipelineOptions& pipeline) {
  RunOptions r;
  r.verifyEach = true;
  return runPipeline(g, buildPipeline(pipeline), r);
}

}  // namespace

void expectSameNumerics(const ModelBuilder& build, const PipelineOptions& pipeline, int64_t batch, double rtol,
                        double atol) {
  auto reference = build();
  auto optimized = build();
  bindInputDims(*reference, batchBindings(*reference, batch));
  bindInputDims(*optimized, batchBindings(*optimized, batch));
  runVerified(*optimized, pipeline);
  expectSameOutputs(*reference, *optimized, rtol, atol);
}

void expectSameNumericsSymbolic(const ModelBuilder& build, const std::vector<std::string>& passes, double rtol,
                                double atol) {
  auto reference = build();
  auto optimized = build();
  runVerified(*optimized, exactly(passes));
  bindInputDims(*reference, batchBindings(*reference, 2));
  bindInputDims(*optimized, batchBindings(*optimized, 2));
  expectSameOutputs(*reference, *optimized, rtol, atol);
}

void expectSameNumericsOnAllModels(const std::vector<std::string>& passes) {
  for (const auto& spec : kNumericsModels) {
    SCOPED_TRACE(spec);
    expectSameNumerics(modelBuilder(spec), exactly(passes));
  }
}

std::vector<PassRecord> expectExportRoundTrip(const std::string& spec, const std::vector<std::string>& passes) {
  auto g = modelBuilder(spec)();
  auto records = runVerified(*g, exactly(passes));
  auto path = std::filesystem::temp_directory_path() / ("friction_pass_rt_" + std::to_string(::getpid()) + ".onnx");
  onnxio::exportOnnxFile(*g, path.string());
  auto back = onnxio::importOnnxFile(path.string());
  std::filesystem::remove(path);
  bindInputDims(*g, batchBindings(*g, 2));
  bindInputDims(*back, batchBindings(*back, 2));
  expectSameOutputs(*g, *back, 0, 1e-5);
  return records;
}

}  // namespace friction::testing
