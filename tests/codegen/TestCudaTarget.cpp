// The cuda target (codegen/CodegenStages.def's kCuda and kCudaNests
// pipelines, codegen/mlir/GpuStages.cpp): the structure of what it makes
// (launches, grids, blocks, arguments, one PTX module per kernel), its loop
// nests run on the host against the interpreter (cpu?target=cuda-nests), and
// its PTX assembled by the CUDA toolkit's ptxas for sm_80 and sm_90 (skipped
// with a message where the toolkit is missing). No test here needs a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "codegen/Registration.h"
#include "codegen/cuda/GpuCompile.h"
#include "codegen/cuda/Registration.h"
#include "codegen/mlir/Codegen.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "passes/PassManager.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "runtime/interp/Interpreter.h"
#include "tests/codegen/CudaPlanCheck.h"
#include "tests/common/BackendTestUtil.h"

namespace friction {
namespace {

namespace fs = std::filesystem;
using test::countOf;
using test::expectClose;
using test::randomTensor;

codegen::CodegenOptions cudaOptions(const std::string& chip = "sm_90") {
  codegen::CodegenOptions o;
  o.target = codegen::Target::Cuda;
  o.gpuChip = chip;
  return o;
}

// The only node of `g` (after `passes`) compiled for the GPU.
gpu::GpuKernel compileOnlyNode(Graph& g, const std::vector<std::string>& passes = {},
                                   const codegen::CodegenOptions& options = cudaOptions()) {
  if (!passes.empty()) {
    PipelineOptions o;
    o.passes = passes;
    runPipeline(g, buildPipeline(o));
  }
  EXPECT_EQ(g.nodes().size(), 1u) << "the case must be one kernel";
  codegen::CompileTimes times;
  return codegen::compileGpuKernel(*g.nodes()[0], options, times);
}

// An i64 constant (Slice bounds and axes).
Value* intsConstant(GraphBuilder& b, const std::vector<int64_t>& v) {
  Tensor t(DType::I64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return b.constant(t);
}

TEST(CudaTarget, PipelinesRunTheirStagesInTableOrder) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Relu", {b.input("x", {DType::F32, {4, 8}})}));
  auto stages = [&](codegen::Target t, bool shared = true) {
    codegen::CodegenOptions o;
    o.target = t;
    if (!shared) o.set("gpu-shared", "off");
    std::vector<std::string> names;
    for (const auto& s : codegen::kernelStages({g.nodes()[0].get()}, o)) names.push_back(s.stage);
    return names;
  };
  EXPECT_EQ(stages(codegen::Target::Cuda), (std::vector<std::string>{"built", "bufferize", "gpu-shared", "gpu-coarsen",
                                                                     "parallel-loops", "gpu-tile", "approximate", "contract",
                                                                     "gpu-outline", "nvvm"}));
  EXPECT_EQ(stages(codegen::Target::CudaNests), (std::vector<std::string>{"built", "bufferize", "gpu-shared",
                                                                          "gpu-coarsen", "parallel-loops", "gpu-tile",
                                                                          "approximate", "contract", "llvm"}));
  // gpu-shared switches off like a graph pass.
  EXPECT_EQ(stages(codegen::Target::Cuda, false)[2], "gpu-coarsen");
  EXPECT_EQ(stages(codegen::Target::CudaNests, false)[2], "gpu-coarsen");
}

// A fused elementwise region is one launch over the flattened domain: 1000
// elements in 256-thread blocks is 4 blocks, the last one guarded.
TEST(CudaTarget, ElementwiseRegionIsOneLaunchOverFlatBlocks) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {8, 125}});
  Value* y = b.op("Mul", {b.op("Sigmoid", {x}), b.constant(randomTensor({125}, 1), "scale")});
  b.output(b.op("Tanh", {y}));
  gpu::GpuKernel k = compileOnlyNode(g, {"fuse-elementwise"});
  ASSERT_EQ(k.launches.size(), 1u);
  const gpu::GpuLaunch& l = k.launches[0];
  EXPECT_EQ(l.grid[0], 4);
  EXPECT_EQ(l.block[0], 256);
  EXPECT_EQ(l.grid[1] * l.grid[2] * l.block[1] * l.block[2], 1);
  // Every argument is a whole buffer of the kernel: x, scale, the output.
  ASSERT_EQ(l.args.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.args[size_t(i)].buffer, i);
  EXPECT_EQ(countOf(k.ptx, ".entry "), 1);
  EXPECT_NE(k.ptx.find(".target sm_90"), std::string::npos);
  EXPECT_EQ(k.ptx.find("call"), std::string::npos) << "no libdevice or libm calls: the math is approximated inline";
}

// A nest smaller than a block gets a block of its own size; other block sizes reach the launch.
TEST(CudaTarget, BlockSizeFollowsTheOptionAndSmallNests) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Relu", {b.input("x", {DType::F32, {1, 10}})}));
  gpu::GpuKernel small = compileOnlyNode(g);
  ASSERT_EQ(small.launches.size(), 1u);
  EXPECT_EQ(small.launches[0].grid[0], 1);
  EXPECT_EQ(small.launches[0].block[0], 10);
  Graph g2;
  GraphBuilder b2(g2);
  b2.output(b2.op("Relu", {b2.input("x", {DType::F32, {3, 100}})}));
  codegen::CodegenOptions o = cudaOptions();
  o.gpuBlockSize = 64;
  gpu::GpuKernel k = compileOnlyNode(g2, {}, o);
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_EQ(k.launches[0].grid[0], 5);  // ceil(300 / 64)
  EXPECT_EQ(k.launches[0].block[0], 64);
}

// Gemm + bias + Relu: the fill, the contraction and the epilogue are three
// nests, three launches of three functions in ONE PTX module.
TEST(CudaTarget, GemmEpilogueIsThreeLaunchesOfOneModule) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 32}});
  Value* y = b.op("Gemm", {x, b.constant(randomTensor({16, 32}, 2), "w"), b.constant(randomTensor({16}, 3), "b")},
                  {{"transB", int64_t(1)}});
  b.output(b.op("Relu", {y}));
  gpu::GpuKernel k = compileOnlyNode(g, {"fuse-epilogues"});
  ASSERT_EQ(k.launches.size(), 3u);
  EXPECT_EQ(countOf(k.ptx, ".entry "), 3);
  for (const auto& l : k.launches) {
    EXPECT_NE(k.ptx.find(".entry " + l.function + "("), std::string::npos) << l.function;
    for (const auto& a : l.args) EXPECT_LT(a.buffer, 4) << "x, w, b, the output";
  }
}

// The module of `g`'s only node after `stage` of the cuda pipeline.
std::string afterStage(Graph& g, const codegen::CodegenOptions& options, const std::string& stage) {
  return test::stageModule(codegen::kernelStages({g.nodes()[0].get()}, options), stage);
}

// The text of the first scf.for of `module` up to the end of its body (a loop without nested regions).
std::string firstReductionLoop(const std::string& module) {
  size_t from = module.find("scf.for"), to = module.find('}', from);
  return from == std::string::npos || to == std::string::npos ? "" : module.substr(from, to - from);
}

// gpu-shared: a matmul of 64 x 32 by 32 x 48 is one block here (the whole of
// C is the tile reading the fewest elements per output; a bigger matmul gets
// many), its k cut into 2 slices of 16: A's slice (64 x 16, padded to 17 so a
// column's reads hit different banks) and B's (16 x 48, odd-padded to 49) are
// copied to workgroup memory between barriers, and each of 64 x 48 / (8 x 4)
// = 96 threads accumulates 8 rows x 4 columns (shared-columns 4) from there:
// 12 loads of shared memory for 32 multiplies a step, none of global memory.
TEST(CudaTarget, ContractionBlocksStageTheirInputsInSharedMemory) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("MatMul", {b.input("a", {DType::F32, {64, 32}}), b.constant(randomTensor({32, 48}, 6), "b")}));
  codegen::CodegenOptions o = cudaOptions();
  o.gpuSharedColumns = 4;
  o.gpuCoarsenMinThreads = 1;
  std::string shared = afterStage(g, o, "gpu-shared");
  EXPECT_TRUE(std::regex_search(shared, std::regex("gpu.launch blocks\\(.*\\) in \\(%\\w+ = %c1, %\\w+ = %c1, %\\w+ = %c1\\) "
                                                   "threads\\(.*\\) in \\(%\\w+ = %c96, %\\w+ = %c1, %\\w+ = %c1\\) "
                                                   "workgroup\\(%\\w+ : memref<64x17xf32, #gpu.address_space<workgroup>>, "
                                                   "%\\w+ : memref<16x49xf32, #gpu.address_space<workgroup>>\\)")))
      << "one block of 96 threads, two workgroup buffers:\n" << shared;
  EXPECT_EQ(countOf(shared, "gpu.barrier"), 2) << shared;
  std::string step = firstReductionLoop(shared.substr(shared.find("gpu.barrier")));
  EXPECT_EQ(countOf(step, "arith.mulf"), 32) << step;
  EXPECT_EQ(countOf(step, "memref.load"), 12) << "8 rows of A, 4 columns of B:\n" << step;
  EXPECT_EQ(countOf(step, "#gpu.address_space<workgroup>"), 12) << "all of them from shared memory:\n" << step;
  for (const char* column : {"arith.constant 12 : index", "arith.constant 24 : index", "arith.constant 36 : index"})
    EXPECT_NE(shared.find(column), std::string::npos) << "4 columns 48 / 4 apart:\n" << shared;
  gpu::GpuKernel k = compileOnlyNode(g, {}, o);
  ASSERT_EQ(k.launches.size(), 2u) << "C's zero fill, then the blocks";
  EXPECT_EQ(k.launches[1].grid[0], 1);
  EXPECT_EQ(k.launches[1].block[0], 96);
  EXPECT_NE(k.ptx.find(".shared"), std::string::npos);
  EXPECT_NE(k.ptx.find("bar.sync"), std::string::npos);
  if (std::string ptxas = codegen::findPtxas(); !ptxas.empty()) {
    codegen::PtxasResult r = codegen::runPtxas(ptxas, k.ptx, "sm_90");
    EXPECT_TRUE(r.ok) << r.message;
  }
  // Too few threads for the default threshold: gpu-coarsen takes it.
  o.gpuCoarsenMinThreads = codegen::CodegenOptions{}.gpuCoarsenMinThreads;
  EXPECT_EQ(afterStage(g, o, "gpu-shared").find("gpu.launch"), std::string::npos);
  // A thread's register tile must be full. In one column, 3072 outputs in 384
  // threads are 8 rows a thread (blocks of 8 x 48): staged. In 768 threads a
  // tile would be 4 rows: gpu-coarsen takes it, unless 4 is the full tile.
  o.gpuSharedColumns = 1;
  o.gpuCoarsenMinThreads = 384;
  EXPECT_NE(afterStage(g, o, "gpu-shared").find("gpu.launch"), std::string::npos);
  o.gpuCoarsenMinThreads = 768;
  EXPECT_EQ(afterStage(g, o, "gpu-shared").find("gpu.launch"), std::string::npos);
  o.gpuThreadOutputs = 4;
  EXPECT_NE(afterStage(g, o, "gpu-shared").find("gpu.launch"), std::string::npos);
}

// gpu-shared's blocks, slices and footprints run on the host (cuda-nests)
// against the interpreter: matmuls plain and with B transposed, a padded
// convolution (window cells of 32 input channels, 2 slices each) and a
// strided one (the whole window, one input channel a slice), with a thread
// threshold that leaves several blocks each.
TEST(CudaTarget, SharedTilesMatchTheInterpreterAcrossBlocksAndSlices) {
  codegen::registerCpuBackend();
  const std::string spec = "cpu?target=cuda-nests&gpu-coarsen-min-threads=128";
  struct Case {
    std::string name;
    std::function<void(GraphBuilder&)> build;
    std::vector<Tensor> inputs;
  };
  std::vector<Case> cases = {
      {"matmul", [](GraphBuilder& b) {
         b.output(b.op("MatMul", {b.input("a", {DType::F32, {96, 64}}), b.constant(randomTensor({64, 80}, 1))}));
       }, {randomTensor({96, 64}, 2)}},
      {"gemm, B transposed", [](GraphBuilder& b) {
         b.output(b.op("Gemm", {b.input("a", {DType::F32, {64, 48}}), b.constant(randomTensor({80, 48}, 3))},
                       {{"transB", int64_t(1)}}));
       }, {randomTensor({64, 48}, 4)}},
      {"padded conv", [](GraphBuilder& b) {
         b.output(b.op("Conv", {b.input("x", {DType::F32, {2, 32, 10, 10}}), b.constant(randomTensor({32, 32, 3, 3}, 5))},
                       {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
       }, {randomTensor({2, 32, 10, 10}, 6)}},
      {"strided conv", [](GraphBuilder& b) {
         b.output(b.op("Conv", {b.input("x", {DType::F32, {2, 16, 11, 11}}), b.constant(randomTensor({24, 16, 3, 3}, 7))},
                       {{"strides", std::vector<int64_t>{2, 2}}}));
       }, {randomTensor({2, 16, 11, 11}, 8)}},
  };
  codegen::CodegenOptions nests;
  nests.target = codegen::Target::CudaNests;
  nests.gpuCoarsenMinThreads = 128;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Graph g;
    GraphBuilder b(g);
    c.build(b);
    std::string staged = test::stageModule(codegen::kernelStages({g.nodes()[0].get()}, nests), "gpu-shared");
    EXPECT_GE(countOf(staged, "memref.alloca"), 3) << "two footprints and the accumulators:\n" << staged;
    auto want = interp::run(g, c.inputs);
    auto got = createBackend(spec)->compile(g)->run(c.inputs);
    ASSERT_EQ(got.size(), 1u);
    expectClose(got[0], want[0], 1e-4, c.name);
  }
}

// contract: a contraction's multiply and add become one fma.rn.f32 in PTX;
// off, they stay separately rounded (mul.rn, add.rn), which ptxas keeps.
TEST(CudaTarget, ContractFusesMultiplyAdds) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("MatMul", {b.input("a", {DType::F32, {64, 32}}), b.constant(randomTensor({32, 48}, 6), "b")}));
  codegen::CodegenOptions o = cudaOptions();
  std::string fused = compileOnlyNode(g, {}, o).ptx;
  EXPECT_GT(countOf(fused, "fma.rn.f32"), 0) << fused;
  EXPECT_EQ(countOf(fused, "mul.rn.f32"), 0) << fused;
  o.set("contract", "off");
  std::string separate = compileOnlyNode(g, {}, o).ptx;
  EXPECT_EQ(countOf(separate, "fma.rn.f32"), 0) << separate;
  EXPECT_GT(countOf(separate, "mul.rn.f32"), 0) << separate;
}

// gpu-coarsen: a thread of a matmul computes 8 rows of one column of C, its
// accumulators carried through the loop over k. B[k, n] does not vary with
// the row: loaded once for the 8 multiplies (A, one load per row); C is not
// touched inside the loop. Off, the loop reads and writes C at every k.
TEST(CudaTarget, ContractionThreadsComputeSeveralOutputsInRegisters) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("MatMul", {b.input("a", {DType::F32, {64, 32}}), b.constant(randomTensor({32, 48}, 6), "b")}));
  codegen::CodegenOptions o = cudaOptions();
  o.set("gpu-shared", "off");  // gpu-coarsen's nests
  o.gpuCoarsenMinThreads = 1;  // 64 x 48 outputs: too few for an H100's default
  o.gpuThreadColumns = 1;      // rows only: CudaTarget.ContractionThreadsComputeARegisterTile
  std::string coarse = afterStage(g, o, "gpu-coarsen");
  EXPECT_NE(coarse.find("to (%c64, %c48) step (%c8, %c1)"), std::string::npos) << coarse;
  std::string loop = firstReductionLoop(coarse);
  EXPECT_EQ(countOf(loop, "arith.mulf"), 8) << loop;
  EXPECT_EQ(countOf(loop, "memref.load"), 9) << "8 rows of A, one element of B:\n" << loop;
  EXPECT_EQ(countOf(loop, "memref.store"), 0) << loop;
  EXPECT_EQ(countOf(coarse.substr(coarse.find(loop) + loop.size()), "memref.store"), 8) << coarse;
  o.gpuThreadOutputs = 1;
  std::string single = firstReductionLoop(afterStage(g, o, "gpu-coarsen"));
  EXPECT_EQ(countOf(single, "arith.mulf"), 1);
  EXPECT_EQ(countOf(single, "memref.store"), 0) << "the accumulator stays in a register";
  o.set("gpu-coarsen", "off");
  std::string naive = firstReductionLoop(afterStage(g, o, "parallel-loops"));
  EXPECT_EQ(countOf(naive, "memref.store"), 1) << naive;
}

// With columns, a matmul's thread computes 8 rows x 4 columns of C, the
// columns 48 / 4 = 12 apart (consecutive threads take consecutive columns,
// so a warp's loads of B stay contiguous): 8 loads of A and 4 of B feed 32
// multiplies. Like the rows, columns halve until they leave enough threads.
TEST(CudaTarget, ContractionThreadsComputeARegisterTile) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("MatMul", {b.input("a", {DType::F32, {64, 32}}), b.constant(randomTensor({32, 48}, 6), "b")}));
  codegen::CodegenOptions o = cudaOptions();
  o.set("gpu-shared", "off");  // gpu-coarsen's nests
  o.gpuCoarsenMinThreads = 1;
  o.gpuThreadColumns = 4;
  std::string tile = afterStage(g, o, "gpu-coarsen");
  EXPECT_NE(tile.find("to (%c64, %c12) step (%c8, %c1)"), std::string::npos) << tile;
  std::string loop = firstReductionLoop(tile);
  EXPECT_EQ(countOf(loop, "arith.mulf"), 32) << loop;
  EXPECT_EQ(countOf(loop, "memref.load"), 12) << "8 rows of A, 4 columns of B:\n" << loop;
  EXPECT_EQ(countOf(tile, "arith.constant 36 : index"), 1) << "the last column, 3 x 12 on:\n" << tile;
  o.gpuThreadColumns = 8;  // 48 / 8 = 6 threads a row of C
  EXPECT_NE(afterStage(g, o, "gpu-coarsen").find("to (%c64, %c6) step (%c8, %c1)"), std::string::npos);
  o.gpuCoarsenMinThreads = 64 * 48 / 8 / 2;  // 8 rows leave 384 threads: 2 columns, not 4
  o.gpuThreadColumns = 4;
  EXPECT_NE(afterStage(g, o, "gpu-coarsen").find("to (%c64, %c24) step (%c8, %c1)"), std::string::npos);
  // 63 rows: no count divides them, and columns alone make no tile.
  Graph odd;
  GraphBuilder ob(odd);
  ob.output(ob.op("MatMul", {ob.input("a", {DType::F32, {63, 32}}), ob.constant(randomTensor({32, 48}, 6), "b")}));
  o.gpuCoarsenMinThreads = 1;
  EXPECT_NE(afterStage(odd, o, "gpu-coarsen").find("to (%c63, %c48) step (%c1, %c1)"), std::string::npos);
}

// The dim a thread's outputs step is one its own operand does not read: a
// convolution's output channels (the input pixel feeds all of them), never
// the pixels consecutive threads step. Too few threads for coarsening keeps
// one output per thread.
TEST(CudaTarget, ConvolutionThreadsStepOutputChannels) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {1, 4, 10, 10}});
  b.output(b.op("Conv", {x, b.constant(randomTensor({16, 4, 3, 3}, 4))}));
  codegen::CodegenOptions o = cudaOptions();
  o.set("gpu-shared", "off");  // gpu-coarsen's nests
  o.gpuCoarsenMinThreads = 1;
  // Whole window, dims (n, g, k, oh, ow, c, r, s): k stepped by 8, and 2
  // columns of the row of pixels, 4 apart (the weights do not read them).
  EXPECT_NE(afterStage(g, o, "gpu-coarsen").find("to (%c1, %c1, %c16, %c8, %c4) step (%c1, %c1, %c8, %c1, %c1)"),
            std::string::npos);
  o.gpuCoarsenMinThreads = 16 * 64;  // 1024 outputs: 8 per thread would leave 128 threads
  EXPECT_NE(afterStage(g, o, "gpu-coarsen").find("step (%c1, %c1, %c1, %c1, %c1)"), std::string::npos);
}

// A convolution's window cells read subviews of reshaped buffers: the views
// move into the kernels, so the host passes whole buffers and constants only.
TEST(CudaTarget, ConvolutionViewsMoveIntoTheKernels) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {1, 4, 9, 9}});
  b.output(b.op("Conv", {x, b.constant(randomTensor({8, 2, 3, 3}, 4)), b.constant(randomTensor({8}, 5))},
                {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}},
                 {"group", int64_t(2)}}));
  gpu::GpuKernel k = compileOnlyNode(g);
  EXPECT_EQ(k.launches.size(), 10u) << "the bias, then one contraction per window cell";
  int buffers = 0;
  for (const auto& l : k.launches)
    for (const auto& a : l.args) buffers += a.buffer >= 0;
  EXPECT_GE(buffers, int(k.launches.size()) * 2);
}

// Softmax is a Structured kernel with two statistics buffers after its
// output: fill and reduce the maxima, fill and reduce the sums, normalize.
TEST(CudaTarget, SoftmaxTakesTwoScratchBuffersOfStatistics) {
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("Softmax", {b.input("x", {DType::F32, {6, 10}})}, {{"axis", int64_t(-1)}}));
  gpu::GpuKernel k = compileOnlyNode(g);
  EXPECT_EQ(k.buffers, 2);
  ASSERT_EQ(k.scratch.size(), 2u);
  EXPECT_EQ(k.scratch[0], (std::vector<int64_t>{6, 1}));
  ASSERT_EQ(k.launches.size(), 5u);
  std::set<int> used;
  for (const auto& l : k.launches)
    for (const auto& a : l.args) used.insert(a.buffer);
  EXPECT_TRUE(used.count(2) && used.count(3)) << "the launches use both scratch buffers";
}

// Two Slices that differ only in their constant bounds are two kernels: the
// bounds are baked in, so they are part of the kernel's key (a shared kernel
// returned the first slice twice).
TEST(CudaTarget, SlicesWithOtherBoundsAreOtherKernels) {
  codegen::registerCpuBackend();
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2, 8}});
  auto ints = [&](const std::vector<int64_t>& v) { return intsConstant(b, v); };
  Value* axes = ints({1});
  b.output(b.op("Slice", {x, ints({0}), ints({4}), axes}));
  b.output(b.op("Slice", {x, ints({4}), ints({8}), axes}));
  std::vector<Tensor> in = {randomTensor({2, 8}, 9)};
  auto want = interp::run(g, in);
  auto got = createBackend("cpu?target=cuda-nests")->compile(g)->run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) expectClose(got[i], want[i], 0, "slice " + std::to_string(i));
}

// Work with no parallel dim (a sum to a scalar, a softmax of a 1-D input)
// runs as a one-thread launch rather than on the host; a Slice reading one
// axis backwards and cropping another is one kernel. Checked on the nests
// against interp, and as PTX with no step left on the host.
TEST(CudaTarget, SerialWorkAndMixedSlicesHaveKernels) {
  codegen::registerCpuBackend();
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {4, 6}});
  auto ints = [&](const std::vector<int64_t>& v) { return intsConstant(b, v); };
  b.output(b.op("ReduceSum", {x}, {{"keepdims", int64_t(0)}}));
  b.output(b.op("Softmax", {b.input("v", {DType::F32, {7}})}));
  b.output(b.op("Slice", {x, ints({0, -1}), ints({2, -100}), ints({0, 1}), ints({1, -1})}));
  std::vector<Tensor> in = {randomTensor({4, 6}, 3), randomTensor({7}, 4)};
  auto want = interp::run(g, in);
  auto model = createBackend("cpu?target=cuda-nests")->compile(g);
  auto got = model->run(in);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) expectClose(got[i], want[i], 1e-5, "output " + std::to_string(i));
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  auto report = codegen::compileForGpu(g, cudaOptions());
  EXPECT_EQ(report.failed(), 0);
  EXPECT_TRUE(report.hostSteps.empty());
  for (const auto& k : report.kernels)
    if (k.label.rfind("ReduceSum", 0) == 0) {
      ASSERT_EQ(k.code.launches.size(), 1u) << "the fill and the sum: one serial run";
      EXPECT_EQ(k.code.launches[0].grid[0] * k.code.launches[0].block[0], 1);
    }
}

// InstanceNormalization is a Structured kernel like LayerNormalization (its statistics per image plane, scale
// and B per channel): on the nests against interp, and as PTX with no step left on the host.
TEST(CudaTarget, InstanceNormalizationIsAKernel) {
  codegen::registerCpuBackend();
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {2, 3, 5, 7}});
  b.output(b.op("InstanceNormalization", {x, b.constant(randomTensor({3}, 5)), b.constant(randomTensor({3}, 6))},
                {{"epsilon", 1e-3f}}));
  std::vector<Tensor> in = {randomTensor({2, 3, 5, 7}, 3)};
  auto want = interp::run(g, in);
  auto model = createBackend("cpu?target=cuda-nests")->compile(g);
  auto got = model->run(in);
  ASSERT_EQ(got.size(), 1u);
  expectClose(got[0], want[0], 1e-4, "InstanceNormalization");
  EXPECT_EQ(model->interpNodes(), 0) << model->description();
  auto report = codegen::compileForGpu(g, cudaOptions());
  EXPECT_EQ(report.failed(), 0);
  EXPECT_TRUE(report.hostSteps.empty());
  ASSERT_EQ(report.kernels.size(), 1u);
  EXPECT_EQ(report.kernels[0].code.scratch, (std::vector<std::vector<int64_t>>{{2, 3, 1, 1}, {2, 3, 1, 1}}));
}

// ConvTranspose and Resize have no GPU kernel of their own: legalize() expands them (a Conv over the input with
// zeros between its elements; Gathers of the tap tables, weighted and summed). Every geometry of
// test::convTransposeCases() and a bilinear and a nearest upsampling, on the nests against interp; a U-Net's
// decoder step (ConvTranspose, Resize, Concat) as PTX with no step left on the host, which ptxas accepts.
TEST(CudaTarget, ConvTransposeAndResizeAreExpandedIntoKernels) {
  codegen::registerCpuBackend();
  auto nests = createBackend("cpu?target=cuda-nests");
  auto expectMatches = [&](const Graph& g, const std::vector<int64_t>& shape, const std::string& what) {
    std::vector<Tensor> in = {randomTensor(shape, 3)};
    auto want = interp::run(g, in);
    auto model = nests->compile(g);
    auto got = model->run(in);
    ASSERT_EQ(got.size(), 1u);
    expectClose(got[0], want[0], 1e-4, what);
    EXPECT_EQ(model->interpNodes(), 0) << what << ": " << model->description();
  };
  const std::vector<test::ConvTransposeCase> cases = test::convTransposeCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    Graph g;
    GraphBuilder b(g);
    b.output(test::convTranspose(b, b.input("x", {DType::F32, Shape::fromStatic(cases[i].x)}), cases[i]));
    expectMatches(g, cases[i].x, "ConvTranspose case " + std::to_string(i));
  }
  auto upsampled = [](GraphBuilder& b, Value* x, const std::string& mode) {
    Value* scales = b.constant(Tensor::fromVector<float>(DType::F32, {4}, {1, 1, 2, 2}));
    return b.op("Resize", {x, nullptr, scales}, {{"mode", mode}});
  };
  for (const char* mode : {"linear", "nearest"}) {
    Graph g;
    GraphBuilder b(g);
    b.output(upsampled(b, b.input("x", {DType::F32, {1, 3, 5, 9}}), mode));
    expectMatches(g, {1, 3, 5, 9}, std::string(mode) + " Resize");
  }
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", {DType::F32, {1, 4, 5, 6}});
  b.output(b.op("Concat", {test::convTranspose(b, x, cases[0]), upsampled(b, x, "linear")}, {{"axis", int64_t(1)}}));
  expectMatches(g, {1, 4, 5, 6}, "decoder step");
  for (const char* chip : {"sm_80", "sm_90"}) {
    codegen::CodegenOptions o = cudaOptions();
    o.gpuChip = chip;
    auto report = codegen::compileForGpu(g, o);
    EXPECT_EQ(report.failed(), 0);
    EXPECT_TRUE(report.hostSteps.empty());
    if (std::string ptxas = codegen::findPtxas(); !ptxas.empty())
      for (const auto& k : report.kernels) {
        codegen::PtxasResult r = codegen::runPtxas(ptxas, k.code.ptx, chip);
        EXPECT_TRUE(r.ok) << k.label << " for " << chip << ": " << r.message;
      }
  }
}

// Passes change the GPU program: fusion makes fewer kernels and launches.
TEST(CudaTarget, FusionPassesChangeKernelsAndLaunches) {
  auto compile = [](const std::vector<std::string>& passes) {
    auto g = zoo::build(zoo::parseSpec("resnet?depth=2&width=8&resolution=16"));
    bindInputDims(*g, batchBindings(*g, 1));
    PipelineOptions o;
    o.passes = passes;
    runPipeline(*g, buildPipeline(o));
    return codegen::compileForGpu(*g, cudaOptions());
  };
  auto none = compile({"none"});
  auto fused = compile({"fold-constants", "fold-batchnorm", "fuse-epilogues"});
  EXPECT_EQ(none.failed(), 0);
  EXPECT_EQ(fused.failed(), 0);
  EXPECT_LT(fused.kernelCalls, none.kernelCalls);
  EXPECT_LT(fused.launches, none.launches);
  ASSERT_EQ(none.planError, "");
  ASSERT_EQ(fused.planError, "");
  EXPECT_LT(fused.plan.bytesBetweenKernels(), none.plan.bytesBetweenKernels()) << "fusion keeps intermediates in the kernel";
  std::cout << "resnet depth 2: no pass " << none.kernelCalls << " kernel calls, " << none.launches
            << " launches; fused " << fused.kernelCalls << ", " << fused.launches << "\n";
}

// ---- the loop nests on the host, against the interpreter ----

struct NestCase {
  std::string spec;
  std::string backend;
};
// How ctest lists a case (gtest would print its bytes).
void PrintTo(const NestCase& c, std::ostream* os) { *os << c.spec << " on " << c.backend; }

class CudaNests : public ::testing::TestWithParam<NestCase> {
 protected:
  static void SetUpTestSuite() { codegen::registerCpuBackend(); }
};

// Every archetype, default pipeline and no pass, batch 1 and 2: the GPU's
// tiled nests (flattened index, block/thread split, the guard) compute what
// the interpreter computes. A block of 7 threads divides none of the
// extents, so every nest runs a partial last block.
TEST_P(CudaNests, MatchInterp) {
  const auto& [spec, backendSpec] = GetParam();
  auto backend = createBackend(backendSpec);
  for (int64_t batch : {1, 2}) {
    auto reference = zoo::build(zoo::parseSpec(spec));
    bindInputDims(*reference, batchBindings(*reference, batch));
    auto inputs = seededInputs(*reference, 11);
    auto want = interp::run(*reference, inputs);
    for (bool passes : {true, false}) {
      std::string label = spec + " on " + backendSpec + ", batch " + std::to_string(batch) + (passes ? ", default" : ", none");
      SCOPED_TRACE(label);
      auto g = zoo::build(zoo::parseSpec(spec));
      bindInputDims(*g, batchBindings(*g, batch));
      PipelineOptions o;
      if (!passes) o.passes = {"none"};
      runPipeline(*g, buildPipeline(o));
      auto model = backend->compile(*g);
      auto got = model->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) expectClose(got[i], want[i], 1e-4, label);
      EXPECT_EQ(model->interpNodes(), 0) << model->description();
      EXPECT_NE(model->description().find("cuda's loop nests on the host"), std::string::npos) << model->description();
    }
  }
}

const char* kArchetypes[] = {"resnet?depth=2&width=8&resolution=16",
                             "resnet?depth=4&width=8&resolution=32&block=bottleneck",
                             "mobilenetv2?depth=3&width=8&resolution=16",
                             "convnext?depth=2&width=8&resolution=16",
                             "vit?depth=2&width=16&resolution=16&patch=8&heads=2",
                             "mixer?depth=2&width=16&resolution=16&patch=8",
                             "mlp?depth=3"};

std::vector<NestCase> nestCases() {
  std::vector<NestCase> cases;
  for (const char* spec : kArchetypes) cases.push_back({spec, "cpu?target=cuda-nests"});
  cases.push_back({kArchetypes[0], "cpu?target=cuda-nests&gpu-block=7"});
  cases.push_back({kArchetypes[2], "cpu?target=cuda-nests&gpu-block=7"});
  // Every contraction coarsened by gpu-coarsen, however few threads that leaves (the zoo's nests are small).
  for (const char* spec : kArchetypes)
    cases.push_back({spec, "cpu?target=cuda-nests&gpu-shared=off&gpu-thread-outputs=4&gpu-coarsen-min-threads=1"});
  // Rows only, and a tile of 2 x 8 whose columns leave partial blocks.
  for (const char* spec : {kArchetypes[1], kArchetypes[4]}) {
    cases.push_back({spec, "cpu?target=cuda-nests&gpu-shared=off&gpu-thread-columns=1&gpu-coarsen-min-threads=1"});
    cases.push_back({spec, "cpu?target=cuda-nests&gpu-shared=off&gpu-thread-outputs=2&gpu-thread-columns=8&"
                           "gpu-coarsen-min-threads=1&gpu-block=7"});
  }
  cases.push_back({kArchetypes[0], "cpu?target=cuda-nests&gpu-coarsen=off"});
  // Shared-memory tiles for every contraction they take (convolutions, window
  // cells of padded ones, matmuls), and without fused multiply-adds.
  for (const char* spec : {kArchetypes[1], kArchetypes[2], kArchetypes[3]})
    cases.push_back({spec, "cpu?target=cuda-nests&gpu-coarsen-min-threads=1"});
  cases.push_back({kArchetypes[4], "cpu?target=cuda-nests&contract=off&gpu-coarsen-min-threads=1"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Zoo, CudaNests, ::testing::ValuesIn(nestCases()),
                         [](const ::testing::TestParamInfo<NestCase>& info) {
                           std::string n = info.param.spec.substr(0, info.param.spec.find('?')) + "_" +
                                           std::to_string(info.index);
                           return n;
                         });

// ---- PTX through the toolkit's assembler ----

// Every step of every zoo archetype and torchvision fixture (default
// pipeline without convert-layout, batch 1) has a GPU kernel, and each
// compiles to PTX that ptxas accepts, for sm_80 and sm_90 (one test each:
// ~60 s apiece, mostly linking libdevice into every module).
class CudaPtx : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaPtx, PtxasAcceptsEveryKernelOfTheZooAndTheTorchFixtures) {
  const std::string chip = GetParam();
  std::string ptxas = codegen::findPtxas();
  if (ptxas.empty()) GTEST_SKIP() << "no ptxas (CUDA toolkit) on this machine: PTX is generated but not assembled";
  if (codegen::cudaToolkitPath().empty()) GTEST_SKIP() << "no libdevice (CUDA toolkit): the cuda target cannot link PTX";
  std::vector<std::pair<std::string, std::unique_ptr<Graph>>> models;
  for (const char* spec : kArchetypes) models.emplace_back(spec, zoo::build(zoo::parseSpec(spec)));
  // The zoo's nests are too small for shared-memory tiles and register tiles
  // under the default threshold: once more with every contraction taking them.
  const std::string everyTile = "&every contraction tiled";
  for (const char* spec : kArchetypes) models.emplace_back(spec + everyTile, zoo::build(zoo::parseSpec(spec)));
  // The recurrent layers (RNN, GRU, LSTM) unrolled over their sequence (codegen/Legalize.h).
  for (const auto& dir : fs::directory_iterator(FRICTION_SOURCE_DIR "/tests/models/torch"))
    models.emplace_back(dir.path().filename().string(), onnxio::importOnnxFile((dir.path() / "model.onnx").string()));
  ASSERT_GE(models.size(), 2 * 7u + 25u);
  int kernels = 0, maxRegisters = 0;
  PipelineOptions gpuPipeline;  // convert-layout's NHWC regions serve the cpu's microkernels
  gpuPipeline.disable = {"convert-layout"};
  for (auto& [name, g] : models) {
    bindInputDims(*g, batchBindings(*g, 1));
    runPipeline(*g, buildPipeline(gpuPipeline));
    codegen::CodegenOptions options = cudaOptions(chip);
    if (name.find(everyTile) != std::string::npos) options.gpuCoarsenMinThreads = 1;
    auto report = codegen::compileForGpu(*g, options);
    for (const auto& [what, count] : report.hostSteps)
      ADD_FAILURE() << name << ": " << count << " steps without a GPU kernel: " << what;
    EXPECT_EQ(report.planError, "") << name;
    test::expectConsistentPlan(report.plan, name);
    for (const auto& k : report.kernels) {
      EXPECT_EQ(k.error, "") << name << " " << k.label;
      if (!k.error.empty()) continue;
      EXPECT_NE(k.code.ptx.find(".target " + chip), std::string::npos);
      codegen::PtxasResult r = codegen::runPtxas(ptxas, k.code.ptx, chip);
      EXPECT_TRUE(r.ok) << name << " " << k.label << " for " << chip << ":\n" << r.message;
      EXPECT_GT(r.registers, 0) << r.message;
      maxRegisters = std::max(maxRegisters, r.registers);
      ++kernels;
    }
  }
  std::cout << kernels << " kernels of " << models.size() << " models assembled for " << chip << " by " << ptxas
            << "; at most " << maxRegisters << " registers a thread\n";
}

INSTANTIATE_TEST_SUITE_P(Chips, CudaPtx, ::testing::Values("sm_80", "sm_90"));

TEST(CudaBackend, WithoutADriverCreatingItSaysWhyInOneLine) {
  codegen::registerCudaBackend();
  const char* old = std::getenv("FRICTION_LIBCUDA");
  ::setenv("FRICTION_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  try {
    createBackend("cuda");
    ADD_FAILURE() << "created a cuda backend without a driver";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("backend cuda: no CUDA driver on this machine"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  if (old) ::setenv("FRICTION_LIBCUDA", old, 1);
  else ::unsetenv("FRICTION_LIBCUDA");
}

}  // namespace
}  // namespace friction
