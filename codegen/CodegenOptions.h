// Choices of the MLIR code generator: which stages of its pipeline
// (codegen/CodegenStages.def) run. Backends take them as options
// (`cpu?ukernels=off&approximate=off`); no MLIR types here.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace friction::codegen {

// What a pipeline produces. Cpu: host code calling friction's microkernels.
// Cuda: NVVM kernels as PTX, one per parallel loop nest, and their launches.
// CudaNests: the Cuda pipeline's tiled scf.parallel nests up to the point
// where they are mapped to blocks and threads, then lowered for the host and
// run there sequentially, so the GPU tiling and indexing are checked against
// the interpreter on machines without a GPU.
// Halide: host code from Halide instead of MLIR (codegen/halide/), no stage
// of the table: every kernel generated (no microkernels, no native steps), so
// only the kernel compiler differs from the cpu backend.
enum class Target { Cpu, Cuda, CudaNests, Halide };
const char* targetName(Target t);

// Bit masks of the stage table's `targets` column.
constexpr unsigned kCpu = 1u << unsigned(Target::Cpu);
constexpr unsigned kCuda = 1u << unsigned(Target::Cuda);
constexpr unsigned kCudaNests = 1u << unsigned(Target::CudaNests);

// The stage table's `switch` column.
enum StageSwitch { kRequired, kOn, kOff };

struct CodegenStage {
  const char* name;
  StageSwitch switchable;  // kRequired: the pipeline needs it; kOn, kOff: its default
  unsigned targets;  // the pipelines it is part of (kCpu | kCuda | kCudaNests)
  const char* summary;
  bool in(Target t) const { return targets & (1u << unsigned(t)); }
};
// Every stage, in pipeline order.
const std::vector<CodegenStage>& codegenStages();
// The stages that are off unless switched on (kOff).
std::set<std::string> defaultOffStages();
// "NAME=on|off" of every switchable stage in one of `targets`' pipelines, joined by ", ": option lists in errors.
std::string stageSwitchList(unsigned targets);

struct CodegenOptions {
  Target target = Target::Cpu;
  std::set<std::string> disabled = defaultOffStages();  // switchable stages turned off, by name
  // Cuda and CudaNests: threads per block of the flattened parallel loops,
  // and the GPU architecture the PTX is for.
  int64_t gpuBlockSize = 256;
  // Cuda and CudaNests, the gpu-coarsen stage: the most outputs of a
  // contraction one thread computes (a power of 2; 1 keeps only the
  // accumulator in a register).
  int64_t gpuThreadOutputs = 8;
  // gpu-coarsen: times this many outputs along the dim consecutive threads
  // step (a power of 2; 1: none), spaced so that a warp's loads stay
  // contiguous; the operand that does not read that dim is loaded once for
  // them. On an H200, 2 ran ViT-B/16 at batch 32 in 0.81x the time of 1,
  // ResNet-50 in 0.93x; 4 and 8 less well (docs/performance.md).
  int64_t gpuThreadColumns = 2;
  // gpu-shared: a thread's outputs along that dim in a shared-memory tile
  // (times gpuThreadOutputs rows); a tile's width need only be divisible. On
  // an H200, 2 ran ResNet-50 at batch 32 in 0.97x the time of 4, 8 in 1.5x
  // (docs/performance.md).
  int64_t gpuSharedColumns = 2;
  // Coarsening divides a nest's threads; a nest that would keep fewer than
  // this many keeps one output per thread. On an H100 (132 multiprocessors)
  // 65536 ran ResNet-50 at batch 1 in 0.73x the time of 16384 and nothing
  // slower (docs/performance.md). Tests set 1 to coarsen the zoo's small nests.
  int64_t gpuCoarsenMinThreads = 65536;
  std::string gpuChip = "sm_90";
  // Debugging only, no effect on the code: print the module after each stage to stderr.
  bool dumpStages = false;
  // Tests and docs: the last stage to run ("": the whole pipeline).
  std::string stopAfter;

  bool enabled(std::string_view stage) const { return !disabled.count(std::string(stage)); }
  // Microkernels exist for the host only: on the GPU pipelines every
  // contraction and convolution is generated.
  bool ukernels() const { return target == Target::Cpu && enabled("ukernels"); }
  // The host's split of elementwise kernels into slabs run from several
  // threads (KernelView::splitDim); GPU kernels take whole, static shapes.
  bool splitsElementwise() const { return target == Target::Cpu; }
  // Steps run by friction's native microkernels (NativeKernels.h) where no
  // kernel is generated: the cpu's only. The halide target generates every
  // kernel; a GPU program cannot call the host's microkernels, so there a
  // region they would have run (convert-layout's NHWC pools) runs its body's
  // kernels, as cuda-nests checks on the host. The ops only a native kernel runs (the recurrences, Tile)
  // legalize() rewrites into ops the other targets have kernels for (Legalize.h).
  bool nativeSteps() const { return target == Target::Cpu; }
  // The GPU targets have no kernel for the ops whose host kernels are native ones (Resize's tap gather,
  // ConvTranspose's col2im): legalize() expands them into ops that have one (Legalize.h; the cpu target's
  // ConvTranspose too where its native kernel does not apply). The halide target builds its own.
  bool expandsNativeOnlyOps() const { return target == Target::Cuda || target == Target::CudaNests; }
  // The host targets run a Slice whose result lies densely in its input as a view of that buffer at an
  // offset; the GPU plan's buffers are whole (GpuPlanBuilder), so there it is a copy kernel.
  bool slicesAsViews() const { return !expandsNativeOnlyOps(); }
  // The halide target compiles a Fused region its other kernel kinds do not cover as one kernel of its whole
  // body (KernelAnalysis.h's Graph kind); the others run such a body's nodes as kernels of their own.
  bool compilesWholeRegions() const { return target == Target::Halide; }
  // Turns a stage on or off from a backend option NAME=on|off; throws Error
  // for unknown stages, stages that cannot be switched and other values.
  void set(const std::string& stage, const std::string& value);
  // The same from "NAME=on|off", where NAME must also be a stage of `target`'s pipeline.
  void setSwitch(const std::string& setting);
  // Throws Error ("WHO: stage NAME is not in the TARGET pipeline") unless `stage` is part of `target`'s pipeline.
  void requireInTarget(const std::string& stage, const std::string& who) const;
  // The switches that differ from their defaults ("ukernels=off,gpu-shared=on"),
  // or "default stages".
  std::string str() const;
  bool defaultStages() const { return disabled == defaultOffStages(); }
};

// True when `name` is a stage of the pipeline; a switchable one (a backend option key).
bool isStage(const std::string& name);
bool isStageSwitch(const std::string& name);
// The stage called `name` (it must be one).
const CodegenStage& codegenStage(const std::string& name);

// A backend option's count of outputs per GPU thread (gpuThreadOutputs, or
// gpuThreadColumns): a power of 2 from 1 to 64; throws Error naming `who` and `key` otherwise.
int64_t parseThreadOutputs(const std::string& who, const std::string& key, const std::string& value);
// A backend option's gpuCoarsenMinThreads: 1 to 2^30 threads.
int64_t parseCoarsenMinThreads(const std::string& who, const std::string& key, const std::string& value);

}  // namespace friction::codegen
