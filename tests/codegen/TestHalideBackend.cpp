// The halide backend (codegen/halide/): the cpu backend's program with every
// kernel a Halide pipeline. Numerics against the interpreter under the
// default pipeline, no pass and every leave-one-out configuration, batch 1
// and 2; every schedule and both loop-level fusion choices; nothing on the
// interpreter or on a native microkernel; options refused in one line.
#include <cpuid.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "codegen/CpuBackend.h"
#include "codegen/KernelAbi.h"
#include "codegen/KernelAnalysis.h"
#include "codegen/halide/HalideSource.h"
#include "codegen/halide/ScheduleOptions.h"
#include "codegen/halide/Registration.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "passes/PassManager.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

using test::expectClose;

class HalideBackend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { codegen::halide::registerHalideBackend(); }
};

// `spec` at `batch` after `pipeline` on `backend`, against the interpreter
// on the unoptimized graph: within 1e-4, no interpreter node, no native step.
// Returns the model's description.
std::string expectMatchesInterp(Backend& backend, const std::string& spec, int64_t batch, const PipelineOptions& pipeline,
                         const std::string& label) {
  SCOPED_TRACE(label);
  auto reference = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*reference, batchBindings(*reference, batch));
  auto inputs = seededInputs(*reference, 5);
  auto want = interp::run(*reference, inputs);
  auto g = zoo::build(zoo::parseSpec(spec));
  bindInputDims(*g, batchBindings(*g, batch));
  runPipeline(*g, buildPipeline(pipeline));
  auto model = backend.compile(*g);
  auto got = model->run(inputs);
  EXPECT_EQ(got.size(), want.size());
  if (got.size() != want.size()) return model->description();
  for (size_t i = 0; i < want.size(); ++i) expectClose(got[i], want[i], 1e-4, label);
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  const codegen::ProgramStats* stats = codegen::cpuStats(*model);
  EXPECT_NE(stats, nullptr);
  if (stats) {
    EXPECT_EQ(stats->nativeCalls, 0) << "a native microkernel ran: " << model->description();
    EXPECT_GT(stats->kernelCalls, 0);
  }
  return model->description();
}

const std::vector<std::string> kArchetypes = {"resnet?depth=2&width=8&resolution=16",
                             "resnet?depth=2&width=8&resolution=32&block=bottleneck",
                             "mobilenetv2?depth=3&width=8&resolution=16",
                             "convnext?depth=2&width=8&resolution=16",
                             "vit?depth=2&width=16&resolution=16&patch=8&heads=2",
                             "mixer?depth=2&width=16&resolution=16&patch=8",
                             "mlp?depth=3"};

class HalideZoo : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { codegen::halide::registerHalideBackend(); }
};

// Default pipeline, no pass and every leave-one-out configuration, batch 1
// and 2, friction's schedule: one backend (one kernel cache) for all.
TEST_P(HalideZoo, MatchesInterpUnderEveryLeaveOneOut) {
  auto backend = createBackend("halide");
  std::vector<std::pair<std::string, PipelineOptions>> configs = {{"default", {}}, {"none", {}}};
  configs[1].second.passes = {"none"};
  for (const PassInfo& p : allPasses()) {
    PipelineOptions o;
    o.disable = {p.name};
    configs.emplace_back("without " + p.name, o);
  }
  for (int64_t batch : {1, 2})
    for (const auto& [name, pipeline] : configs)
      expectMatchesInterp(*backend, GetParam(), batch, pipeline,
                          GetParam() + ", batch " + std::to_string(batch) + ", " + name);
}

INSTANTIATE_TEST_SUITE_P(Archetypes, HalideZoo, ::testing::ValuesIn(kArchetypes),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(0, info.param.find('?')) + "_" + std::to_string(info.index);
                         });

const char* kScheduleArchetypes[] = {"mobilenetv2?depth=2&width=8&resolution=16",
                                     "vit?depth=1&width=16&resolution=16&patch=8&heads=2"};

// friction's schedule and none, producers inlined and materialized: a
// convolutional and a transformer archetype, default pipeline and no pass.
TEST_F(HalideBackend, OwnSchedulesAndBothFusionChoicesMatchInterp) {
  for (const char* schedule : {"none", "default"})
    for (const char* fusion : {"inline", "root"}) {
      const std::string spec = std::string("halide?schedule=") + schedule + "&fusion=" + fusion;
      auto backend = createBackend(spec);
      PipelineOptions none;
      none.passes = {"none"};
      for (const char* arch : kScheduleArchetypes) {
        std::string d = expectMatchesInterp(*backend, arch, 1, {}, spec + " on " + arch + ", default");
        EXPECT_NE(d.find(std::string("schedule ") + schedule), std::string::npos) << d;
        expectMatchesInterp(*backend, arch, 1, none, spec + " on " + arch + ", none");
      }
    }
}

// Halide's autoschedulers (they decide loop-level fusion themselves), default
// pipeline. A kernel an autoscheduler refuses (a Gather's data-dependent
// index) runs on friction's schedule, and the description says so. Adams2019
// with its default greedy search (beam 1). Batch 4 too: a batch loop is
// where Adams2019 once hoisted a broadcast operand's storage (the test below).
TEST_F(HalideBackend, AutoschedulersMatchInterp) {
  for (const char* schedule : {"adams2019", "mullapudi2016", "li2018"}) {
    const std::string spec = std::string("halide?schedule=") + schedule;
    auto backend = createBackend(spec);
    for (const char* arch : kScheduleArchetypes)
      for (int64_t batch : {1, 4}) {
        std::string d = expectMatchesInterp(*backend, arch, batch, {},
                                            spec + " on " + arch + " at batch " + std::to_string(batch));
        EXPECT_NE(d.find(std::string("schedule ") + schedule), std::string::npos) << d;
        // Whole, however long the refusals make it: the compile times come last.
        EXPECT_NE(d.find(" ms (build "), std::string::npos) << d;
        // The convolutional archetype has no Gather: every kernel keeps Adams2019's or Mullapudi2016's schedule
        // (Li2018's for its classifier Gemm fails Halide's lowering: an atomic predicated store).
        if (arch == kScheduleArchetypes[0] && std::string(schedule) != "li2018") {
          EXPECT_EQ(d.find("refused"), std::string::npos) << d;
        }
      }
  }
}

// Graph-level fusion shows in the program: fewer kernel calls with the
// fusion passes than one kernel per op, and each distinct kernel reports its
// own compile phases (one pipeline each).
TEST_F(HalideBackend, FusionPassesMakeFewerKernelsEachTimedAlone) {
  auto backend = createBackend("halide");
  auto compile = [&](const std::vector<std::string>& passes) {
    auto g = zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=16"));
    bindInputDims(*g, batchBindings(*g, 1));
    PipelineOptions o;
    o.passes = passes;
    runPipeline(*g, buildPipeline(o));
    auto model = backend->compile(*g);
    return *codegen::cpuStats(*model);
  };
  codegen::ProgramStats none = compile({"none"}), fused = compile({"fold-constants", "fold-batchnorm", "fuse-epilogues"});
  EXPECT_LT(fused.kernelCalls, none.kernelCalls);
  EXPECT_EQ(none.fallbackNodes + fused.fallbackNodes, 0);
  for (const auto& k : fused.kernels) {
    EXPECT_TRUE(k.compiled) << k.kernel;
    EXPECT_GT(k.buildMs + k.lowerMs + k.jitMs, 0) << k.kernel << " has no compile phases of its own";
  }
}

// A graph of one f32 input of `shape` and `body`, no pass run, on `backend` against the interpreter: within
// `tolerance`, no interpreter node, no native step. Returns the compiled model's description.
std::string expectGraphMatchesInterp(Backend& backend, const std::vector<int64_t>& shape,
                                     const std::function<Value*(GraphBuilder&, Value*)>& body, double tolerance,
                                     const std::string& what, const PipelineOptions* pipeline = nullptr) {
  SCOPED_TRACE(what);
  Graph g;
  GraphBuilder b(g);
  b.output(body(b, b.input("x", {DType::F32, Shape::fromStatic(shape)})));
  std::vector<Tensor> in = {test::randomTensor(shape, 11)};
  auto want = interp::run(g, in);
  if (pipeline) runPipeline(g, buildPipeline(*pipeline));
  auto model = backend.compile(g);
  auto got = model->run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) expectClose(got[i], want[i], tolerance, what);
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  EXPECT_EQ(codegen::cpuStats(*model)->nativeCalls, 0) << model->description();
  return model->description();
}

// `spec` created while OpenMP has `threads` threads: an autoscheduler plans for the threads it sees then.
std::unique_ptr<Backend> backendPlannedFor(int threads, const std::string& spec) {
  const int had = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto backend = createBackend(spec);
  omp_set_num_threads(had);
  return backend;
}

// Every Func of a kernel has a name of its own: two clamped inputs (Halide's repeat_edge names both
// "repeat_edge") collided once Adams2019's greedy search (beam 1, the default) realized both, and a strided
// conv read its weights' values where its input's belonged. A wider beam (several passes) on the same graph.
TEST_F(HalideBackend, TwoClampedInputsUnderAGreedyAndABeamAutoschedule) {
  for (const std::string beam : {"", "&beam=2"}) {
    auto backend = backendPlannedFor(1, "halide?schedule=adams2019" + beam);  // one core: the plan that collided
    const std::string d = expectGraphMatchesInterp(*backend, {1, 8, 16, 16}, [](GraphBuilder& b, Value* x) {
      return b.op("Conv", {x, b.constant(test::randomTensor({8, 8, 3, 3}, 2)), b.constant(test::randomTensor({8}, 3))},
                  {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});
    }, 1e-5, "stride-2 conv" + beam);
    EXPECT_NE(d.find(beam.empty() ? "(beam 1)" : "(beam 2)"), std::string::npos) << d;
  }
}

// Convolutions and pools in convert-layout's NHWC regions read their channels-last input in place and compute
// channels last (HalideKernels.cpp, `convolution`): output channels in vector lanes, a row's pixels as the
// register tile's rows, the weights packed a block of output channels at a time inside the blocks' loop. One
// conv's loop nest shows it; then the numerics of what the indexing must get right: strides, asymmetric pads,
// dilations, a bias, groups that straddle a vector (3 channels a group), depthwise, 3 output channels (fewer
// than half a vector: no lanes) and 12 (a partial last block of 8 or 16 lanes), max and average pools, global
// ones; batch 1 and 3; vectors of AVX2's 8 lanes and AVX-512's 16 whatever the machine's are.
TEST_F(HalideBackend, ChannelsLastConvolutionsReadTheirInputInPlace) {
  PipelineOptions layout;
  layout.passes = {"convert-layout"};
  using Attrs = std::map<std::string, Attribute>;
  auto conv = [](std::vector<int64_t> weights, Attrs attrs, bool bias = false) {
    return [=](GraphBuilder& b, Value* x) {
      std::vector<Value*> in = {x, b.constant(test::randomTensor(weights, 2))};
      if (bias) in.push_back(b.constant(test::randomTensor({weights[0]}, 3)));
      return b.op("Conv", in, attrs);
    };
  };
  using Ints = std::vector<int64_t>;
  {
    auto backend = createBackend("halide?dump=on");
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, {1, 16, 10, 10}, conv({24, 16, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}), 1e-4,
                             "dense 3x3, the loop nest", &layout);
    const std::string dump = testing::internal::GetCapturedStderr();
    const size_t at = dump.find("loop nest of Fused");
    ASSERT_NE(at, std::string::npos) << dump;
    const std::string nest = dump.substr(at, dump.find("halide: loop nest of", at) - at);
    EXPECT_EQ(test::countOf(nest, "produce "), 3) << "the accumulator, its weight panel and the output, no transpose:\n" << nest;
    EXPECT_NE(nest.find("vectorized d1.xi"), std::string::npos) << "output channels in lanes:\n" << nest;
    EXPECT_NE(nest.find("unrolled d3.yi"), std::string::npos) << "a row's pixels as rows:\n" << nest;
    const size_t blocks = nest.find("d1.xo"), panel = nest.find("_panel:");
    EXPECT_TRUE(blocks != std::string::npos && panel != std::string::npos && blocks < panel)
        << "the panel packed inside the blocks' loop:\n" << nest;
  }
  for (const char* lanes : {"8", "16"})
  for (int64_t batch : {1, 3}) {
    auto backend = createBackend(std::string("halide?lanes=") + lanes);
    const std::string at = ", batch " + std::to_string(batch) + ", " + lanes + " lanes";
    expectGraphMatchesInterp(*backend, {batch, 8, 13, 11},
                             conv({12, 8, 3, 3}, {{"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 2, 1}}, {"dilations", Ints{1, 2}}}, true),
                             1e-4, "strided, padded, dilated, bias" + at, &layout);
    expectGraphMatchesInterp(*backend, {batch, 12, 9, 9}, conv({12, 3, 3, 3}, {{"group", int64_t(4)}, {"pads", Ints{1, 1, 1, 1}}}),
                             1e-4, "groups of 3 channels" + at, &layout);
    expectGraphMatchesInterp(*backend, {batch, 16, 9, 9},
                             conv({16, 1, 5, 5}, {{"group", int64_t(16)}, {"pads", Ints{2, 2, 2, 2}}, {"strides", Ints{2, 2}}}),
                             1e-4, "depthwise 5x5, stride 2" + at, &layout);
    expectGraphMatchesInterp(*backend, {batch, 5, 8, 8}, conv({3, 5, 1, 1}, {}), 1e-4, "3 output channels" + at, &layout);
    const Attrs window = {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
    for (const char* pool : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
      expectGraphMatchesInterp(*backend, {batch, 12, 9, 9}, [&](GraphBuilder& b, Value* x) {
        return b.op(pool, {x}, std::string(pool).rfind("Global", 0) == 0 ? Attrs{} : window);
      }, 1e-5, std::string(pool) + at, &layout);
  }
}

// A convolution's reduction runs over the window taps that some output reads inside its input (insideTaps,
// ir/ops/NnShapes.h), as cpu's native kernel crops its window: a 3x3 conv at dilation 6 over a 4x4 image reads
// inside at its centre tap alone, so its window loops run once; then the numerics of crops on one side, at a
// stride, per dim, with no tap inside at all, channels first and channels last.
TEST_F(HalideBackend, ConvolutionsSkipTheTapsThatReadOnlyPadding) {
  using Ints = std::vector<int64_t>;
  using Attrs = std::map<std::string, Attribute>;
  auto conv = [](Ints weights, Attrs attrs) {
    return [=](GraphBuilder& b, Value* x) {
      return b.op("Conv", {x, b.constant(test::randomTensor(weights, 2)), b.constant(test::randomTensor({weights[0]}, 3))}, attrs);
    };
  };
  PipelineOptions layout;
  layout.passes = {"convert-layout"};
  const Attrs aspp = {{"pads", Ints{6, 6, 6, 6}}, {"dilations", Ints{6, 6}}};
  for (const PipelineOptions* passes : {static_cast<const PipelineOptions*>(nullptr), static_cast<const PipelineOptions*>(&layout)}) {
    const std::string order = passes ? "channels last" : "channels first";
    // The reduction's loops in the dump: one over the input channels, one a window dim with more than one tap.
    auto reductionLoops = [&](const Attrs& attrs, const std::string& what) {
      auto backend = createBackend("halide?dump=on");
      testing::internal::CaptureStderr();
      expectGraphMatchesInterp(*backend, {1, 16, 4, 4}, conv({16, 16, 3, 3}, attrs), 1e-4, what + ", " + order, passes);
      const std::string nest = testing::internal::GetCapturedStderr();
      std::istringstream lines(nest);
      int loops = 0;
      for (std::string line; std::getline(lines, line);)
        loops += line.find("for ") != std::string::npos && line.find("Conv_r") != std::string::npos;
      return std::make_pair(loops, nest);
    };
    auto [dilated, nest] = reductionLoops(aspp, "dilation 6 over 4x4");
    EXPECT_EQ(dilated, 1) << "the channels' loop alone (the centre tap), " << order << ":\n" << nest;
    auto [padded, whole] = reductionLoops({{"pads", Ints{1, 1, 1, 1}}}, "dilation 1 over 4x4");
    EXPECT_EQ(padded, 3) << "the channels and both window dims, " << order << ":\n" << whole;
    auto plain = createBackend("halide");
    for (int64_t batch : {1, 2}) {
      const std::string at = ", batch " + std::to_string(batch) + ", " + order;
      expectGraphMatchesInterp(*plain, {batch, 5, 3, 7}, conv({6, 5, 3, 3}, {{"pads", Ints{4, 0, 0, 1}}, {"dilations", Ints{4, 2}}}),
                               1e-4, "rows cropped to the last two taps, columns whole" + at, passes);
      expectGraphMatchesInterp(*plain, {batch, 4, 5, 5}, conv({8, 4, 5, 5}, {{"pads", Ints{6, 1, 0, 9}}, {"dilations", Ints{3, 3}}, {"strides", Ints{2, 3}}}),
                               1e-4, "strided, cropped on both sides" + at, passes);
      expectGraphMatchesInterp(*plain, {batch, 4, 2, 2}, conv({4, 4, 3, 3}, {{"pads", Ints{9, 9, 9, 9}}, {"dilations", Ints{9, 9}}}),
                               1e-4, "the centre tap alone, 2x2" + at, passes);
      expectGraphMatchesInterp(*plain, {batch, 4, 2, 2}, conv({4, 4, 1, 1}, {{"pads", Ints{5, 5, 5, 5}}, {"strides", Ints{4, 4}}}),
                               1e-4, "no tap inside: the bias alone" + at, passes);
    }
  }
}

// Friction's schedule computes a reduction that only the output reads a slice (an image row) at a time inside
// the output's parallel loop, so its accumulator stays in cache for the epilogue, where the whole panel read by
// every slice costs less than the reduction's own size (HalideSchedule.cpp, frictionSchedule); one whose weights
// outweigh it is computed whole. Loop nests, then the numerics with the slice loop inside a batch's (batch 3),
// a stride and odd sizes.
TEST_F(HalideBackend, AReductionIsComputedASliceAtATimeWhereItsPanelIsSmall) {
  PipelineOptions layout;
  layout.passes = {"convert-layout"};
  using Ints = std::vector<int64_t>;
  auto conv = [](Ints weights, Ints strides = {1, 1}) {
    return [=](GraphBuilder& b, Value* x) {
      return b.op("Conv", {x, b.constant(test::randomTensor(weights, 2)), b.constant(test::randomTensor({weights[0]}, 3))},
                  {{"strides", strides}});
    };
  };
  auto nestOf = [&](const Ints& input, const Ints& weights, const std::string& what) {
    auto backend = createBackend("halide?dump=on");
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, input, conv(weights), 1e-4, what, &layout);
    const std::string dump = testing::internal::GetCapturedStderr();
    const size_t at = dump.find("loop nest of Fused");
    return at == std::string::npos ? dump : dump.substr(at, dump.find("halide: loop nest of", at + 1) - at);
  };
  // 8 input channels into 32 at 24x24: a panel of 256 floats read by each of 24 rows, against 18432 outputs.
  std::string nest = nestOf({1, 8, 24, 24}, {32, 8, 1, 1}, "a small panel");
  EXPECT_GT(nest.find("_acc:"), nest.find("_out:")) << "the accumulator produced inside the output's loop:\n" << nest;
  EXPECT_LT(nest.find("parallel"), nest.find("_acc:")) << "inside its parallel loop:\n" << nest;
  // 64 channels into 64, 3x3, at 4x4: a panel of 36864 floats a row against 1024 outputs.
  nest = nestOf({1, 64, 6, 6}, {64, 64, 3, 3}, "a large panel");
  EXPECT_LT(nest.find("_acc:"), nest.find("_out:")) << "the accumulator produced whole, before the output:\n" << nest;
  auto backend = createBackend("halide");
  for (int64_t batch : {1, 3}) {
    const std::string at = ", batch " + std::to_string(batch);
    expectGraphMatchesInterp(*backend, {batch, 8, 24, 24}, conv({32, 8, 1, 1}), 1e-4, "1x1" + at, &layout);
    expectGraphMatchesInterp(*backend, {batch, 4, 17, 15}, conv({20, 4, 1, 1}, {2, 2}), 1e-4, "1x1, stride 2, odd" + at,
                             &layout);
  }
}

// A matmul's B is read through a panel packed a block of columns (a vector's lanes) at a time, the blocks' loop
// outside the rows' (HalideKernels.cpp, `matmul`): one loop nest shows it; then B constant or computed,
// transposed (Gemm), with batch dims of its own and broadcast over A's, in vectors of 8 and 16 lanes.
TEST_F(HalideBackend, MatMulsPackBABlockOfColumnsAtATime) {
  auto matmul = [](std::vector<int64_t> b) {
    return [=](GraphBuilder& g, Value* x) { return g.op("MatMul", {x, g.constant(test::randomTensor(b, 2))}); };
  };
  for (const std::string lanes : {"8", "16"}) {
    const std::string at = ", " + lanes + " lanes";
    {
      auto backend = createBackend("halide?dump=on&lanes=" + lanes);
      testing::internal::CaptureStderr();
      const std::string d =
          expectGraphMatchesInterp(*backend, {2, 20, 32}, matmul({32, 24}), 1e-4, "[2,20,32] x [32,24], the loop nest" + at);
      const std::string nest = testing::internal::GetCapturedStderr();
      EXPECT_NE(d.find("(" + lanes + " lanes)"), std::string::npos) << d;
      EXPECT_EQ(test::countOf(nest, "produce "), 3) << "the accumulator, B's panel and the output:\n" << nest;
      const size_t blocks = nest.find("d2.xo"), panel = nest.find("_panel:"), rows = nest.find("unrolled d1.yi");
      EXPECT_TRUE(blocks < panel && panel < rows && rows != std::string::npos)
          << "the panel packed inside the blocks' loop, outside the rows:\n" << nest;
      EXPECT_NE(nest.find("vectorized d2.xi in [0, " + std::to_string(std::stoi(lanes) - 1) + "]"), std::string::npos)
          << "a vector of " << lanes << " columns:\n" << nest;
    }
    auto backend = createBackend("halide?lanes=" + lanes);
    expectGraphMatchesInterp(*backend, {2, 3, 20, 32}, matmul({3, 32, 12}), 1e-4, "B's batch dims broadcast over A's" + at);
    expectGraphMatchesInterp(*backend, {20, 32}, [](GraphBuilder& g, Value* x) {
      return g.op("Gemm", {x, g.constant(test::randomTensor({24, 32}, 3)), g.constant(test::randomTensor({24}, 4))},
                  {{"transB", int64_t(1)}});
    }, 1e-4, "Gemm, B transposed" + at);
    expectGraphMatchesInterp(*backend, {2, 9, 16}, [](GraphBuilder& g, Value* x) {  // B computed: attention scores
      return g.op("MatMul", {x, g.op("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 2, 1}}})});
    }, 1e-4, "x x^T" + at);
  }
}

// A pure producer that two outputs of a kernel read through inlined Funcs is computed once, before them
// (HalideSchedule.cpp, frictionSchedule), not by each output, as an LSTM cell's new state is read by c and h:
// fuse-elementwise makes the Sigmoid below one output of its region (the Tanh after it is another kernel) and
// the Add another. With the Tanh alone reading it (one kernel, one output) it stays inlined.
TEST_F(HalideBackend, AProducerTwoOutputsReadIsComputedOnce) {
  PipelineOptions fuse;
  fuse.passes = {"fuse-elementwise"};
  for (bool both : {true, false}) {
    auto backend = createBackend("halide?dump=on");
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, {4, 40}, [&](GraphBuilder& b, Value* x) {
      Value* s = b.op("Sigmoid", {b.op("Mul", {x, x})});
      if (both) b.output(b.op("Add", {s, x}));
      return b.op("Tanh", {s});
    }, 1e-5, both ? "the Sigmoid read by two outputs" : "by one", &fuse);
    const std::string nest = testing::internal::GetCapturedStderr();
    EXPECT_EQ(nest.find("_Sigmoid:") != std::string::npos, both) << "the Sigmoid produced on its own:\n" << nest;
    if (both) EXPECT_LT(nest.find("_Sigmoid:"), nest.find("_Add_out:")) << nest;
  }
}

// An output or materialized producer whose innermost dim is shorter than a vector runs in the widest power of
// two of lanes it holds, down to 4 (HalideSchedule.cpp, vectorWidth): a sigmoid over 12 elements in vectors of
// 8, two of them overlapping; 3 elements scalar. The numerics at the widths around each power of two.
TEST_F(HalideBackend, ShortRowsRunInNarrowerVectors) {
  auto sigmoid = [](GraphBuilder& b, Value* x) { return b.op("Sigmoid", {x}); };
  for (const std::string lanes : {"8", "16"}) {
    auto backend = createBackend("halide?dump=on&lanes=" + lanes);
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, {2, 12}, sigmoid, 1e-5, "[2,12], " + lanes + " lanes");
    std::string nest = testing::internal::GetCapturedStderr();
    const size_t vector = nest.find("vectorized ");
    ASSERT_NE(vector, std::string::npos) << nest;
    const std::string line = nest.substr(vector, nest.find('\n', vector) - vector);
    EXPECT_NE(line.find("in [0, 7]"), std::string::npos) << "a vector of 8:\n" << nest;
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, {2, 3}, sigmoid, 1e-5, "[2,3], " + lanes + " lanes");
    nest = testing::internal::GetCapturedStderr();
    EXPECT_EQ(nest.find("vectorized"), std::string::npos) << "3 elements scalar:\n" << nest;
    auto plain = createBackend("halide?lanes=" + lanes);
    for (int64_t width : {4, 5, 7, 8, 9, 15, 17})
      expectGraphMatchesInterp(*plain, {3, width}, sigmoid, 1e-5, "[3," + std::to_string(width) + "], " + lanes + " lanes");
  }
}

// A stage runs in parallel only where it holds the work of a fork-join (`kParallelWork` elements, times a
// reduction's steps; `parallel-work=N` sets it, 0 parallelizes every stage): a small Relu and a small matmul
// run serially, a large Relu and a matmul of few elements but many steps in parallel, and with
// `parallel-work=0` the small ones too.
TEST_F(HalideBackend, SmallStagesRunSerially) {
  auto nestOf = [](const std::string& spec, const std::vector<int64_t>& shape, bool matmul) {
    auto backend = createBackend(spec);
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, shape, [&](GraphBuilder& b, Value* x) {
      return matmul ? b.op("MatMul", {x, b.constant(test::randomTensor({shape.back(), 16}, 2))}) : b.op("Relu", {x});
    }, 1e-4, spec);
    return testing::internal::GetCapturedStderr();
  };
  ASSERT_GT(64 * 64 * 8, codegen::halide::kParallelWork);
  for (bool matmul : {false, true}) {
    const std::string what = matmul ? "[16,32] x [32,16]" : "Relu of [1,16,32]";
    EXPECT_EQ(nestOf("halide?dump=on", {1, 16, 32}, matmul).find("parallel"), std::string::npos) << what;
    EXPECT_NE(nestOf("halide?dump=on&parallel-work=0", {1, 16, 32}, matmul).find("parallel"), std::string::npos) << what;
  }
  EXPECT_NE(nestOf("halide?dump=on", {8, 64, 64}, false).find("parallel"), std::string::npos) << "Relu of [8,64,64]";
  ASSERT_LT(16 * 16, codegen::halide::kParallelWork);
  ASSERT_GT(16 * 16 * 2048, codegen::halide::kParallelWork);
  EXPECT_NE(nestOf("halide?dump=on", {1, 16, 2048}, true).find("parallel"), std::string::npos) << "[16,2048] x [2048,16]";
}

// A pipeline's own failure at run time (here a buffer narrower than the kernel reads: Halide's bounds check)
// reaches the caller as an Error carrying Halide's message; without a user context Halide's runtime aborts.
TEST_F(HalideBackend, AKernelFailingAtRunTimeThrowsHalidesMessage) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, Shape::fromStatic({4, 8})});
  b.output(b.op("Relu", {x}));
  const Node& relu = *g.nodes().front();
  auto source = codegen::halide::createHalideSource(codegen::halide::ScheduleOptions{});
  codegen::KernelBatch batch = source->kernels({&relu}, {codegen::structuralKey(relu)});
  ASSERT_EQ(batch.kernels.size(), 1u);
  ASSERT_TRUE(batch.kernels[0].fn) << batch.kernels[0].error;
  Tensor in = test::randomTensor({4, 8}, 1), out(DType::F32, {4, 8});
  codegen::PackedArgs({&in, &out}).call(batch.kernels[0].fn);
  test::expectClose(out, interp::run(g, {in})[0], 0, "relu");
  Tensor narrow = test::randomTensor({4, 5}, 1);
  try {
    codegen::PackedArgs({&narrow, &out}).call(batch.kernels[0].fn);
    ADD_FAILURE() << "a kernel reading past its input ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("halide: kernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Input buffer"), std::string::npos) << e.what();
  }
}

// With `rows=8` a contraction accumulates 8 rows of its output as one Tuple (HalideKernels.cpp `accumulate`):
// the loop nest produces the grouped accumulator, and without the option the plain one. Then the indexing
// the groups must get right, under no schedule (fast) and Adams2019: a row count that does not divide the rows
// (the last group computes rows past the end), more rows than the dim has, channels first (rows are output
// channels, with groups and pads) and last (rows are a row's pixels), a batched matmul and a Gemm with B
// transposed; each a reduction of 32 steps or more (shorter ones keep one row: kStepsForRows). A depthwise conv
// (9 steps) keeps its plain accumulator.
TEST_F(HalideBackend, AccumulatorRowsAreOneTupleUnderTheAutoschedulers) {
  using Ints = std::vector<int64_t>;
  auto conv = [](Ints weights, std::map<std::string, Attribute> attrs) {
    return [=](GraphBuilder& b, Value* x) {
      return b.op("Conv", {x, b.constant(test::randomTensor(weights, 2)), b.constant(test::randomTensor({weights[0]}, 3))},
                  attrs);
    };
  };
  const auto padded = conv({12, 8, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}});
  for (const char* rows : {"&rows=8", ""}) {
    auto backend = createBackend(std::string("halide?schedule=adams2019&dump=on") + rows);
    testing::internal::CaptureStderr();
    const std::string d = expectGraphMatchesInterp(*backend, {1, 8, 10, 10}, padded, 1e-4, std::string("the loop nest") + rows);
    const std::string nest = testing::internal::GetCapturedStderr();
    const bool grouped = *rows != 0;
    EXPECT_EQ(nest.find("_acc_rows") != std::string::npos, grouped) << nest;
    EXPECT_EQ(d.find("8 accumulator rows") != std::string::npos, grouped) << d;
  }
  {
    auto backend = createBackend("halide?schedule=none&rows=8&dump=on");
    testing::internal::CaptureStderr();
    expectGraphMatchesInterp(*backend, {1, 8, 10, 10}, conv({8, 1, 3, 3}, {{"group", int64_t(8)}, {"pads", Ints{1, 1, 1, 1}}}),
                             1e-4, "depthwise");
    const std::string nest = testing::internal::GetCapturedStderr();
    EXPECT_EQ(nest.find("_acc_rows"), std::string::npos) << nest;
    EXPECT_NE(nest.find("_acc"), std::string::npos) << nest;
  }
  PipelineOptions layout;
  layout.passes = {"convert-layout"};
  for (const char* spec : {"halide?schedule=none&rows=3", "halide?schedule=none&rows=8", "halide?schedule=adams2019&rows=3"}) {
    auto backend = createBackend(spec);
    const std::string at = std::string(" on ") + spec;
    expectGraphMatchesInterp(*backend, {2, 8, 9, 7}, conv({12, 4, 3, 3}, {{"group", int64_t(2)}, {"pads", Ints{1, 0, 1, 2}}, {"strides", Ints{2, 1}}}),
                             1e-4, "channels first, groups, pads, strides" + at);
    expectGraphMatchesInterp(*backend, {1, 8, 9, 7}, padded, 1e-4, "channels last" + at, &layout);
    expectGraphMatchesInterp(*backend, {1, 40, 5, 5}, conv({2, 40, 1, 1}, {}), 1e-4, "2 output channels" + at);
    expectGraphMatchesInterp(*backend, {2, 3, 10, 40}, [](GraphBuilder& g, Value* x) {
      return g.op("MatMul", {x, g.constant(test::randomTensor({40, 12}, 2))});
    }, 1e-4, "batched matmul" + at);
    expectGraphMatchesInterp(*backend, {11, 32}, [](GraphBuilder& g, Value* x) {
      return g.op("Gemm", {x, g.constant(test::randomTensor({24, 32}, 3)), g.constant(test::randomTensor({24}, 4))},
                  {{"transB", int64_t(1)}, {"alpha", 0.5f}});
    }, 1e-4, "Gemm, B transposed" + at);
  }
}

// A broadcast operand under the batch loop: Adams2019 at 2 threads stored its clamped read above the batch
// loop and computed it inside, and Halide 14's sliding window skipped rows storage folding had overwritten
// (off by 4). The autoschedulers' producers are stored where they are computed (HalideSchedule.cpp).
TEST_F(HalideBackend, ABroadcastOperandUnderTheBatchLoopOnTwoThreads) {
  auto backend = backendPlannedFor(2, "halide?schedule=adams2019");  // two cores: the plan that slid
  expectGraphMatchesInterp(*backend, {4, 16, 32}, [](GraphBuilder& b, Value* x) {
    return b.op("Add", {x, b.constant(test::randomTensor({1, 16, 32}, 5))});
  }, 0, "[4,16,32] + [1,16,32]");
}

// A loop unrolled over a guarded tail: Adams2019 at 2 threads split a softmax's max over 17 rows by 8 with a
// guarded tail, unrolled the outer loop and computed it inside the attention's loop over 9 rows; Halide 14
// unrolled one iteration short, row 8's max stayed -inf and the outputs were NaN. Such loops run serially
// (HalideSchedule.cpp).
TEST_F(HalideBackend, AnUnrolledLoopOverAGuardedTailOnTwoThreads) {
  auto backend = backendPlannedFor(2, "halide?schedule=adams2019");
  expectMatchesInterp(*backend, "vit?width=32&heads=2&patch=8&resolution=32&depth=2", 2, {}, "small ViT at batch 2");
}

// A row statistic over a guarded tail: Mullapudi2016 vectorized a LayerNormalization's sums over 16 of its 17
// rows with a guarded tail, and Halide 14 lowered the squares' update to the first vector alone (rows 0-15
// summed twice, row 16 never; relative errors of 100). Such vectors are computed whole (HalideSchedule.cpp).
// The normalizations of 17 and 33 rows, and a softmax's, under every autoscheduler; then the small ViT of
// 17 tokens at batch 1, where the halide-schedules study found it.
TEST_F(HalideBackend, AnUpdatesVectorsOverAGuardedTail) {
  for (const char* schedule : {"adams2019", "mullapudi2016", "li2018"}) {
    const std::string spec = std::string("halide?schedule=") + schedule;
    auto backend = backendPlannedFor(2, spec);
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{17, 32}, {1, 33, 48}}) {
      const std::string rows = std::to_string(shape[shape.size() - 2]) + " rows";
      expectGraphMatchesInterp(*backend, shape, [&](GraphBuilder& b, Value* x) {
        return b.op("LayerNormalization", {x, b.constant(test::randomTensor({shape.back()}, 3)),
                                           b.constant(test::randomTensor({shape.back()}, 4))}, {{"axis", int64_t(-1)}});
      }, 1e-4, spec + ": LayerNormalization of " + rows);
      expectGraphMatchesInterp(*backend, shape, [](GraphBuilder& b, Value* x) {
        return b.op("Softmax", {x}, {{"axis", int64_t(-1)}});
      }, 1e-4, spec + ": Softmax of " + rows);
    }
  }
  auto mullapudi = backendPlannedFor(2, "halide?schedule=mullapudi2016");
  expectMatchesInterp(*mullapudi, "vit?width=32&heads=2&patch=8&resolution=32&depth=2", 1, {}, "small ViT at batch 1");
}

// InstanceNormalization is a Structured kernel (the cpu target's native one is not available here): each image
// plane normalized, scale and B one per channel; ranks 3 to 5 (GroupNorm exports as one over [N, groups, rest]),
// under friction's schedule, none and the autoschedulers.
TEST_F(HalideBackend, InstanceNormalizationIsAKernel) {
  for (const char* spec : {"halide", "halide?schedule=none", "halide?schedule=adams2019", "halide?schedule=mullapudi2016"}) {
    auto backend = backendPlannedFor(2, spec);
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{2, 3, 5, 7}, {1, 4, 17}, {1, 2, 3, 4, 5}}) {
      expectGraphMatchesInterp(*backend, shape, [&](GraphBuilder& b, Value* x) {
        return b.op("InstanceNormalization", {x, b.constant(test::randomTensor({shape[1]}, 3)),
                                              b.constant(test::randomTensor({shape[1]}, 4))}, {{"epsilon", 1e-3f}});
      }, 1e-4, std::string(spec) + ": InstanceNormalization of rank " + std::to_string(shape.size()));
    }
  }
}

// Resize is a Typed kernel of its tap tables (resizeTables, as the cpu target's gather makes them): nearest,
// linear and cubic under several coordinate transforms, up and down by scales, and by sizes over a rank-3 and a
// rank-5 input, under friction's schedule and none; a bilinear upsampling under the autoschedulers. A width of
// 18 is a vector of 16 and one shifted inwards: with the tables read strided, Halide 14 loaded them with an
// aligned vector load there and the kernel crashed (friction's schedule, Adams2019, Mullapudi2016).
TEST_F(HalideBackend, ResizeIsAKernelOfItsTapTables) {
  using Attrs = std::map<std::string, Attribute>;
  auto mode = [](const char* m) { return Attribute(std::string(m)); };
  auto byScales = [](const Attrs& attrs, const std::vector<float>& scales) {
    return [=](GraphBuilder& b, Value* x) {
      Value* s = b.constant(Tensor::fromVector<float>(DType::F32, {int64_t(scales.size())}, scales));
      return b.op("Resize", {x, nullptr, s}, attrs);
    };
  };
  auto bySizes = [](const Attrs& attrs, const std::vector<int64_t>& sizes) {
    return [=](GraphBuilder& b, Value* x) { return b.op("Resize", {x, nullptr, nullptr, b.constant(Tensor::vectorI64(sizes))}, attrs); };
  };
  const std::vector<Attrs> kinds = {
      {{"mode", mode("nearest")}},
      {{"mode", mode("nearest")}, {"coordinate_transformation_mode", mode("asymmetric")}, {"nearest_mode", mode("floor")}},
      {{"mode", mode("linear")}},
      {{"mode", mode("linear")}, {"coordinate_transformation_mode", mode("align_corners")}},
      {{"mode", mode("linear")}, {"coordinate_transformation_mode", mode("pytorch_half_pixel")}},
      {{"mode", mode("cubic")}},
      {{"mode", mode("cubic")}, {"cubic_coeff_a", -0.5f}, {"exclude_outside", int64_t(1)}}};
  for (const char* spec : {"halide", "halide?schedule=none"}) {
    auto backend = createBackend(spec);
    for (size_t k = 0; k < kinds.size(); ++k) {
      const std::string what = std::string(spec) + ": Resize kind " + std::to_string(k);
      expectGraphMatchesInterp(*backend, {2, 3, 5, 7}, byScales(kinds[k], {1, 1, 2, 1.5f}), 1e-4, what + " up");
      expectGraphMatchesInterp(*backend, {2, 3, 5, 7}, byScales(kinds[k], {1, 1, 0.6f, 0.5f}), 1e-4, what + " down");
      expectGraphMatchesInterp(*backend, {1, 2, 4, 9}, byScales(kinds[k], {1, 1, 1, 2}), 1e-4, what + " to 18 wide");
    }
    expectGraphMatchesInterp(*backend, {4, 5, 6}, bySizes(kinds[2], {9, 5, 6}), 1e-4, std::string(spec) + ": rank 3");
    expectGraphMatchesInterp(*backend, {1, 2, 3, 4, 5}, bySizes(kinds[5], {1, 2, 6, 8, 5}), 1e-4, std::string(spec) + ": rank 5");
  }
  for (const char* spec : {"halide?schedule=adams2019", "halide?schedule=mullapudi2016", "halide?schedule=li2018"}) {
    auto backend = backendPlannedFor(2, spec);
    expectGraphMatchesInterp(*backend, {1, 4, 9, 9}, byScales(kinds[3], {1, 1, 2, 2}), 1e-4, std::string(spec) + ": bilinear x2");
  }
}

// ConvTranspose is a kernel (the cpu target's is a native SGEMM + col2im, 2-D only): an accumulator gathered
// over the taps whose division by the stride is exact (HalideKernels.cpp, `transposedConvolution`), on the
// geometries of test::convTransposeCases(); alone (a Typed kernel) and with its epilogue fused by the default
// pipeline (one Graph kernel); friction's schedule, none and the autoschedulers.
TEST_F(HalideBackend, ConvTransposeIsAKernel) {
  const std::vector<test::ConvTransposeCase> cases = test::convTransposeCases();
  const PipelineOptions defaults;
  for (const char* spec : {"halide", "halide?schedule=none"}) {
    auto backend = createBackend(spec);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string what = std::string(spec) + ": ConvTranspose case " + std::to_string(i);
      auto alone = [&](GraphBuilder& b, Value* x) { return test::convTranspose(b, x, cases[i]); };
      expectGraphMatchesInterp(*backend, cases[i].x, alone, 1e-4, what);
      const std::string fused = expectGraphMatchesInterp(*backend, cases[i].x, [&](GraphBuilder& b, Value* x) {
        return b.op("Relu", {alone(b, x)});
      }, 1e-4, what + " with a fused Relu", &defaults);
      EXPECT_NE(fused.find("halide: 1 kernels compiled"), std::string::npos) << what << ": " << fused;
    }
  }
  for (const char* spec : {"halide?schedule=adams2019", "halide?schedule=mullapudi2016", "halide?schedule=li2018"}) {
    auto backend = backendPlannedFor(2, spec);
    for (size_t i : {size_t(1), size_t(10)})
      expectGraphMatchesInterp(*backend, cases[i].x, [&](GraphBuilder& b, Value* x) {
        return test::convTranspose(b, x, cases[i]);
      }, 1e-4, std::string(spec) + ": ConvTranspose case " + std::to_string(i));
  }
}

// The ops the cpu target runs as native typed kernels are Typed kernels here
// (a mask built by comparisons, logic and Where on bools and integers, Casts
// between element types, ScatterND of constant indices), no pass run first.
TEST_F(HalideBackend, MasksCastsAndScattersAreKernels) {
  auto backend = createBackend("halide");
  auto expectKernelsMatch = [&](const std::string& what, const std::function<Value*(GraphBuilder&, Value*)>& body) {
    expectGraphMatchesInterp(*backend, {2, 3, 4}, body, 0, what);
  };
  auto cast = [](GraphBuilder& b, Value* v, DType to) { return b.op("Cast", {v}, {{"to", int64_t(dtypeToOnnxCode(to))}}); };
  expectKernelsMatch("masks", [&](GraphBuilder& b, Value* x) {
    Value* positive = b.op("Greater", {x, b.constant(test::randomTensor({4}, 2, -0.5f, 0.5f))});
    Value* small = b.op("Less", {x, b.constant(test::randomTensor({3, 1}, 3))});
    Value* both = b.op("And", {b.op("Not", {positive}), small});
    Value* mask = b.op("Or", {both, b.op("Xor", {positive, both})});
    Value* integers = cast(b, b.op("Mul", {x, b.constant(Tensor::scalarF32(3.f))}), DType::I64);
    Value* zero = b.op("Equal", {integers, b.constant(Tensor::scalarI64(0))});
    Value* atLeast = b.op("GreaterOrEqual", {integers, b.constant(Tensor::scalarI64(1))});
    Value* atMost = b.op("LessOrEqual", {integers, b.constant(Tensor::scalarI64(-1))});
    Value* where = b.op("Where", {mask, x, b.constant(Tensor::scalarF32(-100.f))});
    Value* picked = b.op("Where", {zero, atLeast, atMost});  // bool branches
    // Every operand a constant (f32 results are not folded at build): a kernel of no argument.
    Value* constant = b.op("Where", {b.constant(Tensor::fromVector<uint8_t>(DType::Bool, {4}, {1, 0, 0, 1})),
                                     b.constant(Tensor::scalarF32(1.f)), b.constant(Tensor::scalarF32(-1.f))});
    return b.op("Concat", {b.op("Mul", {where, constant}), cast(b, picked, DType::F32), cast(b, zero, DType::F32),
                           cast(b, integers, DType::F32)},
                {{"axis", int64_t(0)}});
  });
  // Floats to integers truncate, saturate and send NaN to 0, as the interpreter's casts.
  expectKernelsMatch("casts", [&](GraphBuilder& b, Value* x) {
    Value* odd = b.constant(Tensor::fromVector<float>(DType::F32, {4}, {std::nanf(""), 1e30f, -1e30f, -2.7f}));
    Value* wide = b.op("Add", {x, cast(b, cast(b, odd, DType::I32), DType::F32)});
    return b.op("Add", {wide, cast(b, cast(b, x, DType::Bool), DType::F32)});
  });
  struct Scatter {
    std::string what;
    Tensor indices;
    std::vector<int64_t> updates;
  };
  auto indices = [](std::vector<int64_t> shape, const std::vector<int64_t>& v) {
    return Tensor::fromVector<int64_t>(DType::I64, std::move(shape), v);
  };
  for (const Scatter& c : {Scatter{"ScatterND rows, one written twice (1 and -1)", indices({2, 1}, {1, -1}), {2, 3, 4}},
                           Scatter{"ScatterND elements, one written twice", indices({3, 3}, {0, 1, 2, 1, 2, 0, 0, 1, 2}), {3}},
                           Scatter{"ScatterND of one element, scalar updates", indices({3}, {1, -1, 2}), {}}})
    expectKernelsMatch(c.what, [&](GraphBuilder& b, Value* x) {
      return b.op("ScatterND", {x, b.constant(c.indices), b.op("Neg", {b.constant(test::randomTensor(c.updates, 4))})});
    });
}

// Tanh is computed from Halide's exp, which vectorizes (Halide's own tanh calls libm a lane at a time): within
// 2e-6 relative of std::tanh across the series' switch at 1/16, through the range where 1 - e^-2|x| loses
// digits, out to saturation; infinities and NaN as std::tanh gives them (a zero's sign is not kept: -0 gives 0).
TEST_F(HalideBackend, TanhMatchesLibmAcrossItsRange) {
  std::vector<float> x = {0.f, -0.f, 1e-30f, -1e-7f, 1e-3f, 0.0624f, 0.0625f, -0.0626f, 0.1f, 0.3f, -0.5f, 0.9f,
                          1.f, 2.f, -3.5f, 9.f, 20.f, -88.f, 1e30f, INFINITY, -INFINITY, std::nanf("")};
  for (float v = -6.f; v <= 6.f; v += 0.037f) x.push_back(v);
  for (float v = 1e-4f; v < 0.2f; v *= 1.07f) x.push_back(v);
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Tanh", {b.input("x", {DType::F32, Shape::fromStatic({int64_t(x.size())})})}));
  auto model = createBackend("halide")->compile(g);
  const Tensor got = model->run({Tensor::fromVector<float>(DType::F32, {int64_t(x.size())}, x)})[0];
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::tanh(x[i]), have = got.data<float>()[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(have)) << "tanh(" << x[i] << ")";
      continue;
    }
    EXPECT_LE(std::abs(double(have) - double(want)), 2e-6 * std::abs(double(want))) << "tanh(" << x[i] << ") = " << have
                                                                                   << ", std::tanh " << want;
  }
}

// Halide 14 turns AVX512_SapphireRapids on from AVX512-BF16 and VNNI alone and then emits AVX512-FP16
// instructions: on a CPU without FP16 (an AMD EPYC with AVX-512) the JIT target must not have it, or a kernel
// stops on SIGILL (a Where over bools did, in the conformance cases).
TEST_F(HalideBackend, TheJitTargetHasNoFeatureTheCpuLacks) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 23)))
    GTEST_SKIP() << "this CPU has AVX512-FP16: every Halide x86 feature can run here";
  auto backend = createBackend("halide");
  std::string d = expectMatchesInterp(*backend, kScheduleArchetypes[1], 1, {}, "halide on a CPU without FP16");
  EXPECT_NE(d.find("Halide 14 JIT for x86-64"), std::string::npos) << d;
  EXPECT_EQ(d.find("sapphirerapids"), std::string::npos) << d;
}

// docs/codegen.md's table of schedules names every one the backend takes.
TEST_F(HalideBackend, DocsListEverySchedule) {
  std::ifstream f(FRICTION_SOURCE_DIR "/docs/codegen.md");
  std::stringstream text;
  text << f.rdbuf();
  for (const codegen::halide::ScheduleInfo& s : codegen::halide::schedules())
    EXPECT_NE(text.str().find("| `" + std::string(s.spelling) + "` |"), std::string::npos)
        << "docs/codegen.md does not list schedule " << s.spelling;
}

TEST_F(HalideBackend, BadOptionsAreRefusedInOneLine) {
  for (const char* spec : {"halide?schedule=fastest", "halide?fusion=maybe", "halide?tiles=8", "halide?profile=yes", "halide?beam=4",
                           "halide?schedule=adams2019&beam=0", "halide?schedule=adams2019&beam=wide", "halide?rows=4",
                           "halide?schedule=adams2019&rows=0", "halide?schedule=li2018&rows=64", "halide?lanes=0",
                           "halide?lanes=128", "halide?schedule=adams2019&lanes=16", "halide?parallel-work=-1",
                           "halide?schedule=mullapudi2016&parallel-work=0"}) {
    try {
      createBackend(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const Error& e) {
      std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find("backend halide"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace friction
