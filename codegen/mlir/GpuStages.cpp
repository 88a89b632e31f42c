// The GPU stages of codegen/CodegenStages.def (gpu-coarsen, gpu-tile,
// contract, gpu-outline, nvvm; gpu-shared is GpuSharedTiles.cpp), what the
// contraction stages share (GpuContractions.h) and the Cuda pipeline's
// product: per kernel, PTX and the launches that run it. Contractions become
// scf.parallel nests whose threads keep several outputs in registers
// (gpu-coarsen), the other linalg ops scf.parallel nests too
// (parallel-loops); each nest is flattened to one dim and tiled by the block
// size, outer loop over blocks, inner over threads (gpu-tile: this is where
// the CudaNests pipeline leaves for the host, so the tiling and indexing
// below are the ones checked against the interpreter there); the mapped
// nests are outlined into gpu.funcs and lowered to NVVM and PTX.
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "codegen/KernelAnalysis.h"
#include "codegen/mlir/Codegen.h"
#include "codegen/mlir/Context.h"
#include "codegen/mlir/GpuContractions.h"
#include "ir/Error.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/RegionUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace friction::codegen {
namespace {

// The outermost scf.parallel ops of `module`.
llvm::SmallVector<mlir::scf::ParallelOp> outermostParallels(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::scf::ParallelOp> loops;
  module.walk([&](mlir::scf::ParallelOp op) {
    if (!op->getParentOfType<mlir::scf::ParallelOp>()) loops.push_back(op);
  });
  return loops;
}

// Host functions may only launch: anything else that touches memory (a
// load, a store, a copy, a loop the mapping did not take) would run nowhere,
// since a GpuKernel keeps only its launches. Allowed: launches, constants,
// views of the arguments (left dead once sunk into the launches), return.
void checkHostOnlyLaunches(mlir::ModuleOp module) {
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    fn.walk([&](mlir::Operation* op) {
      if (op == fn.getOperation()) return;
      bool allowed = mlir::isa<mlir::gpu::LaunchFuncOp, mlir::func::ReturnOp, mlir::ViewLikeOpInterface,
                               mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp, mlir::memref::CastOp,
                               mlir::memref::DimOp>(op) ||
                     op->hasTrait<mlir::OpTrait::ConstantLike>() || mlir::isPure(op);
      FRICTION_CHECK(allowed, "codegen: kernel " + fn.getName().str() + " keeps " + op->getName().getStringRef().str() +
                                  " on the host after outlining (work outside any parallel loop)");
    });
  }
}

// Moves every gpu.func launched from one host function into one gpu.module
// (the first one), so a kernel is one PTX module however many nests it has.
void gatherKernelModules(mlir::ModuleOp module) {
  mlir::SymbolTable top(module);
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    mlir::gpu::GPUModuleOp home;
    int moved = 0;
    fn.walk([&](mlir::gpu::LaunchFuncOp launch) {
      auto from = top.lookup<mlir::gpu::GPUModuleOp>(launch.getKernelModuleName());
      if (!home) {
        home = from;
        return;
      }
      if (from == home) return;
      auto kernel = mlir::SymbolTable(from).lookup<mlir::gpu::GPUFuncOp>(launch.getKernelName());
      std::string name = kernel.getName().str() + "_" + std::to_string(++moved);
      mlir::Block* body = home.getBody();
      if (!body->empty() && body->back().hasTrait<mlir::OpTrait::IsTerminator>()) kernel->moveBefore(&body->back());
      else kernel->moveBefore(body, body->end());
      kernel.setName(name);
      launch.setKernelAttr(mlir::SymbolRefAttr::get(home.getNameAttr(),
                                                    {mlir::FlatSymbolRefAttr::get(module.getContext(), name)}));
      from.erase();
    });
  }
}

// Views of the kernel's buffers (a convolution's window cells are subviews of
// reshaped arguments) are cloned into the launch, chains of them whole, so
// each kernel argument is a whole buffer of the kernel: one pointer, as
// GpuLaunchArg says. (MLIR's sinkOperationsIntoLaunchOp stops at a view whose
// source the launch does not use itself.)
void sinkViewsInto(mlir::gpu::LaunchOp launch) {
  auto sinkable = [](mlir::Operation* op) {
    return op && op->getNumRegions() == 0 &&
           (mlir::isa<mlir::ViewLikeOpInterface, mlir::memref::ExpandShapeOp, mlir::memref::CollapseShapeOp>(op) ||
            op->hasTrait<mlir::OpTrait::ConstantLike>());
  };
  mlir::Region& body = launch.getBody();
  for (bool changed = true; changed;) {
    changed = false;
    llvm::SetVector<mlir::Value> above;
    mlir::getUsedValuesDefinedAbove(body, above);
    for (mlir::Value v : above) {
      mlir::Operation* op = v.getDefiningOp();
      if (!sinkable(op)) continue;
      mlir::OpBuilder b(&body.front(), body.front().begin());
      mlir::Operation* copy = b.clone(*op);
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        mlir::replaceAllUsesInRegionWith(op->getResult(i), copy->getResult(i), body);
      changed = true;
    }
  }
}

// The buffer a chain of views reads.
mlir::Value viewedBuffer(mlir::Value v) {
  for (mlir::Operation* op = v.getDefiningOp(); op; op = v.getDefiningOp()) {
    if (auto e = mlir::dyn_cast<mlir::memref::ExpandShapeOp>(op)) v = e.getSrc();
    else if (auto c = mlir::dyn_cast<mlir::memref::CollapseShapeOp>(op)) v = c.getSrc();
    else if (auto view = mlir::dyn_cast<mlir::ViewLikeOpInterface>(op)) v = view.getViewSource();
    else break;
  }
  return v;
}

// How gpu-coarsen runs one contraction: each thread computes `outputs`
// neighbours along the parallel loop dim `dim` (-1: none), times `columns`
// outputs along the dim consecutive threads step (`fast`), spaced
// extent/columns apart so that a warp's loads of each column stay
// contiguous: a register tile of outputs x columns accumulators.
struct Coarsening {
  int dim = -1;
  int64_t outputs = 1;
  int fast = -1;
  int64_t columns = 1;
  int64_t perThread() const { return outputs * columns; }
};

// The rows (the dim most inputs varying with `fast` do not read, the count
// halved until it divides the dim and leaves gpuCoarsenMinThreads threads)
// and columns of a contraction's threads; none when it does not qualify.
std::optional<Coarsening> planCoarsening(mlir::linalg::GenericOp op, const CodegenOptions& options) {
  auto loops = contractionLoops(op);
  if (!loops) return std::nullopt;
  const llvm::SmallVector<int64_t>& ranges = loops->ranges;
  int64_t threads = 1;  // at one output each
  for (unsigned d : loops->parallel) threads *= ranges[d];
  Coarsening best;
  int bestReuse = 0;
  for (unsigned d : loops->parallel) {
    int64_t k = options.gpuThreadOutputs;
    while (k > 1 && (ranges[d] % k != 0 || threads / k < options.gpuCoarsenMinThreads)) k /= 2;
    const int reuse = loops->rowReuse[d];
    if (k > 1 && reuse > 0 && (reuse > bestReuse || (reuse == bestReuse && k > best.outputs))) {
      best.dim = int(d);
      best.outputs = k;
      bestReuse = reuse;
    }
  }
  // Columns only widen rows into a tile: alone (rows no count divides,
  // ViT-B/16's 197 tokens at batch 1) they cost threads and ran slower on an H200.
  int64_t c = loops->columnReuse && best.dim >= 0 ? options.gpuThreadColumns : 1;
  while (c > 1 && (ranges[loops->fast] % c != 0 || threads / (best.outputs * c) < options.gpuCoarsenMinThreads)) c /= 2;
  if (c > 1) {
    best.fast = int(loops->fast);
    best.columns = c;
  }
  return best;
}

// Replaces `op` by an scf.parallel over its parallel dims (`plan.dim` stepped
// by plan.outputs, `plan.fast` run to its extent / plan.columns) whose body
// loads the thread's accumulators, carries them through the reduction dims as
// scf.for nests (the reduction order of the naive loops kept, so results are
// bit-identical), and stores them.
void coarsen(mlir::linalg::GenericOp op, const Coarsening& plan) {
  mlir::OpBuilder b(op);
  const mlir::Location loc = op.getLoc();
  const llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  const auto iterators = op.getIteratorTypesArray();
  const auto maps = op.getIndexingMapsArray();
  const unsigned inputs = unsigned(op.getNumDpsInputs());
  const mlir::Value outBuffer = op.getDpsInitOperand(0)->get();
  auto index = [&](mlir::OpBuilder& ob, int64_t v) { return ob.create<mlir::arith::ConstantIndexOp>(loc, v).getResult(); };
  llvm::SmallVector<unsigned> parallel, reduction;
  llvm::SmallVector<int64_t> reductionExtents;
  llvm::SmallVector<mlir::Value> lbs, ubs, steps;
  for (unsigned d = 0; d < iterators.size(); ++d) {
    if (iterators[d] != mlir::utils::IteratorType::parallel) {
      reduction.push_back(d);
      reductionExtents.push_back(ranges[d]);
      continue;
    }
    parallel.push_back(d);
    lbs.push_back(index(b, 0));
    ubs.push_back(index(b, int(d) == plan.fast ? ranges[d] / plan.columns : ranges[d]));
    steps.push_back(index(b, int(d) == plan.dim ? plan.outputs : 1));
  }
  const int64_t columnSpacing = plan.fast < 0 ? 0 : ranges[size_t(plan.fast)] / plan.columns;
  const mlir::Value zero = index(b, 0);
  b.create<mlir::scf::ParallelOp>(loc, lbs, ubs, steps, [&](mlir::OpBuilder& pb, mlir::Location, mlir::ValueRange pivs) {
    // The loop dims of the thread's output t at reduction step `rivs` (none: the output's own dims).
    auto dims = [&](mlir::OpBuilder& ob, int64_t t, mlir::ValueRange rivs) {
      llvm::SmallVector<mlir::Value> v(iterators.size(), zero);
      for (size_t j = 0; j < parallel.size(); ++j) v[parallel[j]] = pivs[j];
      for (size_t j = 0; j < rivs.size(); ++j) v[reduction[j]] = rivs[j];
      auto offset = [&](int dim, int64_t by) {
        if (by > 0) v[size_t(dim)] = ob.create<mlir::arith::AddIOp>(loc, v[size_t(dim)], index(ob, by));
      };
      offset(plan.dim, t / plan.columns);
      offset(plan.fast, t % plan.columns * columnSpacing);
      return v;
    };
    llvm::SmallVector<mlir::Value> accumulators;
    for (int64_t t = 0; t < plan.perThread(); ++t)
      accumulators.push_back(pb.create<mlir::memref::LoadOp>(loc, outBuffer, applyMap(pb, loc, maps[inputs], dims(pb, t, {}))));
    auto load = [&](mlir::OpBuilder& nb, unsigned i, llvm::ArrayRef<mlir::Value> d) -> mlir::Value {
      return nb.create<mlir::memref::LoadOp>(loc, op.getDpsInputOperand(i)->get(), applyMap(nb, loc, maps[i], d));
    };
    auto results = accumulateOutputs(pb, loc, op, reductionExtents, accumulators, dims, load);
    for (int64_t t = 0; t < plan.perThread(); ++t)
      pb.create<mlir::memref::StoreOp>(loc, results[size_t(t)], outBuffer, applyMap(pb, loc, maps[inputs], dims(pb, t, {})));
  });
  op.erase();
}

}  // namespace

std::optional<ContractionLoops> contractionLoops(mlir::linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0 ||
      op.hasIndexSemantics())
    return std::nullopt;
  ContractionLoops loops;
  loops.ranges = op.getStaticLoopRanges();
  if (llvm::any_of(loops.ranges, [](int64_t r) { return mlir::ShapedType::isDynamic(r); })) return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < iterators.size(); ++d)
    (iterators[d] == mlir::utils::IteratorType::parallel ? loops.parallel : loops.reduction).push_back(d);
  mlir::OpOperand* out = op.getDpsInitOperand(0);
  mlir::AffineMap outMap = op.getMatchingIndexingMap(out);
  if (loops.parallel.empty() || !outMap.isProjectedPermutation() || outMap.getNumResults() != loops.parallel.size())
    return std::nullopt;
  mlir::Value outBuffer = viewedBuffer(out->get());
  for (mlir::OpOperand* in : op.getDpsInputOperands())
    if (mlir::isa<mlir::MemRefType>(in->get().getType()) && viewedBuffer(in->get()) == outBuffer) return std::nullopt;
  // An input that varies with `fast` is a load of each thread's own; the row
  // dim is one such an input does not read, so one load feeds every row.
  loops.fast = loops.parallel.back();
  loops.rowReuse.assign(loops.ranges.size(), 0);
  for (unsigned d : loops.parallel) {
    if (d == loops.fast) continue;
    for (mlir::OpOperand* in : op.getDpsInputOperands()) {
      mlir::AffineMap map = op.getMatchingIndexingMap(in);
      loops.rowReuse[d] += map.isFunctionOfDim(loops.fast) && !map.isFunctionOfDim(d);
    }
  }
  for (mlir::OpOperand* in : op.getDpsInputOperands())
    loops.columnReuse |= mlir::isa<mlir::MemRefType>(in->get().getType()) && !op.getMatchingIndexingMap(in).isFunctionOfDim(loops.fast);
  return loops;
}

void generalizeContractions(mlir::ModuleOp module) {
  mlir::IRRewriter rewriter(module.getContext());
  llvm::SmallVector<mlir::linalg::LinalgOp> named;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if (!mlir::isa<mlir::linalg::GenericOp>(op.getOperation()) && op.getNumReductionLoops() > 0) named.push_back(op);
  });
  for (mlir::linalg::LinalgOp op : named) {
    rewriter.setInsertionPoint(op);
    (void)mlir::linalg::generalizeNamedOp(rewriter, op);
  }
}

llvm::SmallVector<mlir::Value> applyMap(mlir::OpBuilder& b, mlir::Location loc, mlir::AffineMap map,
                                        llvm::ArrayRef<mlir::Value> dims) {
  auto indices = mlir::affine::expandAffineMap(b, loc, map, dims);
  FRICTION_CHECK(indices, "codegen: could not expand an indexing map");
  return llvm::SmallVector<mlir::Value>(indices->begin(), indices->end());
}

llvm::SmallVector<mlir::Value> accumulateOutputs(
    mlir::OpBuilder& b, mlir::Location loc, mlir::linalg::GenericOp op, llvm::ArrayRef<int64_t> extents,
    llvm::ArrayRef<mlir::Value> accumulators,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder&, int64_t, mlir::ValueRange)> dims,
    llvm::function_ref<mlir::Value(mlir::OpBuilder&, unsigned, llvm::ArrayRef<mlir::Value>)> load) {
  mlir::Block& payload = op.getRegion().front();
  const unsigned inputs = unsigned(op.getNumDpsInputs());
  llvm::SmallVector<mlir::Value> lbs, ubs, steps;
  for (int64_t e : extents) {
    lbs.push_back(b.create<mlir::arith::ConstantIndexOp>(loc, 0));
    ubs.push_back(b.create<mlir::arith::ConstantIndexOp>(loc, e));
    steps.push_back(b.create<mlir::arith::ConstantIndexOp>(loc, 1));
  }
  auto step = [&](mlir::OpBuilder& nb, mlir::Location, mlir::ValueRange rivs, mlir::ValueRange accs) {
    mlir::scf::ValueVector next;
    for (size_t t = 0; t < accs.size(); ++t) {
      llvm::SmallVector<mlir::Value> d = dims(nb, int64_t(t), rivs);
      mlir::IRMapping values;
      for (unsigned i = 0; i < inputs; ++i) {
        mlir::Value in = op.getDpsInputOperand(i)->get();
        values.map(payload.getArgument(i), mlir::isa<mlir::MemRefType>(in.getType()) ? load(nb, i, d) : in);
      }
      values.map(payload.getArgument(inputs), accs[t]);
      for (mlir::Operation& o : payload.without_terminator()) nb.clone(o, values);
      next.push_back(values.lookupOrDefault(payload.getTerminator()->getOperand(0)));
    }
    return next;
  };
  return mlir::scf::buildLoopNest(b, loc, lbs, ubs, steps, accumulators, step).results;
}

std::string cudaToolkitPath() {
  for (const std::string& c : cudaToolkitRoots())
    if (std::filesystem::exists(std::filesystem::path(c) / "nvvm/libdevice/libdevice.10.bc")) return c;
  return "";
}

void coarsenContractions(mlir::ModuleOp module, const CodegenOptions& options) {
  for (int64_t n : {options.gpuThreadOutputs, options.gpuThreadColumns})
    FRICTION_CHECK(n >= 1 && (n & (n - 1)) == 0, "codegen: gpu thread outputs and columns must be powers of 2");
  generalizeContractions(module);
  llvm::SmallVector<std::pair<mlir::linalg::GenericOp, Coarsening>> plans;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto plan = planCoarsening(op, options)) plans.push_back({op, *plan});
  });
  for (auto& [op, plan] : plans) coarsen(op, plan);
  runPasses(module, "gpu-coarsen", [](mlir::PassManager& pm) { pm.addPass(mlir::createCSEPass()); });
}

void tileForGpu(mlir::ModuleOp module, const CodegenOptions& options) {
  FRICTION_CHECK(options.gpuBlockSize > 0, "codegen: gpu block size must be positive");
  // Trip counts first: the collapsed loop's bound is a product not folded yet.
  std::vector<int64_t> trips;
  for (mlir::scf::ParallelOp loop : outermostParallels(module)) {
    int64_t trip = 1;
    for (unsigned d = 0; d < loop.getNumLoops() && trip > 0; ++d) {
      auto lower = mlir::getConstantIntValue(loop.getLowerBound()[d]);
      auto upper = mlir::getConstantIntValue(loop.getUpperBound()[d]);
      auto step = mlir::getConstantIntValue(loop.getStep()[d]);
      trip = lower && upper && step && *step > 0 ? trip * ((*upper - *lower + *step - 1) / *step) : -1;
    }
    trips.push_back(trip);
  }
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::scf::ParallelOp loop : outermostParallels(module)) {
    if (loop.getNumLoops() > 1) {
      std::vector<unsigned> all(loop.getNumLoops());
      std::iota(all.begin(), all.end(), 0u);
      rewriter.setInsertionPoint(loop);
      mlir::collapseParallelLoops(rewriter, loop, {all});
    }
  }
  auto loops = outermostParallels(module);
  FRICTION_CHECK(loops.size() == trips.size(), "codegen: gpu-tile lost track of its loop nests");
  for (size_t i = 0; i < loops.size(); ++i) {
    // A nest smaller than a block gets a block of its size: no idle threads.
    int64_t tile = trips[i] > 0 ? std::min(options.gpuBlockSize, trips[i]) : options.gpuBlockSize;
    mlir::scf::ParallelOp loop = loops[i];
    // noMinMaxBounds: the inner loop runs the whole tile and guards its body
    // with the extent, so a block has a constant number of threads.
    mlir::scf::tileParallelLoop(loop, {tile}, /*noMinMaxBounds=*/true);
  }
  // Folding and CSE only: the canonicalizer would drop a one-block loop, and
  // convert-parallel-loops-to-gpu then finds a thread loop without its grid.
  mlir::RewritePatternSet none(module.getContext());
  (void)mlir::applyPatternsAndFoldGreedily(module, std::move(none));
  runPasses(module, "gpu-tile", [](mlir::PassManager& pm) {
    pm.addPass(mlir::createCSEPass());
    pm.addNestedPass<mlir::func::FuncOp>(mlir::createGpuMapParallelLoopsPass());
  });
}

void contractFloatMath(mlir::ModuleOp module, const CodegenOptions&) {
  module.walk([](mlir::arith::ArithFastMathInterface op) {
    auto flags = op.getFastMathFlagsAttr();
    auto contract = flags ? flags.getValue() | mlir::arith::FastMathFlags::contract : mlir::arith::FastMathFlags::contract;
    op->setAttr(op.getFastMathAttrName(), mlir::arith::FastMathFlagsAttr::get(op->getContext(), contract));
  });
}

void outlineGpuKernels(mlir::ModuleOp module, const CodegenOptions&) {
  runPasses(module, "gpu-outline", [](mlir::PassManager& pm) {
    pm.addNestedPass<mlir::func::FuncOp>(mlir::createParallelLoopToGpuPass());
    pm.addPass(mlir::createLowerAffinePass());
    pm.addPass(mlir::createCanonicalizerPass());
  });
  module.walk([](mlir::gpu::LaunchOp launch) { sinkViewsInto(launch); });
  runPasses(module, "gpu-outline", [](mlir::PassManager& pm) { pm.addPass(mlir::createGpuKernelOutliningPass()); });
  checkHostOnlyLaunches(module);
  gatherKernelModules(module);
}

void lowerToPtx(mlir::ModuleOp module, const CodegenOptions& options) {
  // convert-gpu-to-nvvm has no pattern for math.fma (the approximations' workhorse): the LLVM intrinsic,
  // which NVPTX selects as fma.rn.f32. The other math ops become libdevice calls, linked below.
  module.walk([](mlir::math::FmaOp fma) {
    mlir::OpBuilder b(fma);
    fma.replaceAllUsesWith(b.create<mlir::LLVM::FMAOp>(fma.getLoc(), fma.getA(), fma.getB(), fma.getC()).getResult());
    fma.erase();
  });
  // Workgroup buffers 16-byte aligned: NVPTX's load-store vectorizer turns
  // neighbouring shared loads into ld.shared.v4, which the default (the
  // element's alignment) made a misaligned access on an H200.
  module.walk([](mlir::gpu::GPUFuncOp fn) {
    auto align = mlir::IntegerAttr::get(mlir::IntegerType::get(fn.getContext(), 64), 16);
    for (unsigned i = 0; i < fn.getNumWorkgroupAttributions(); ++i)
      fn.setWorkgroupAttributionAttr(i, mlir::LLVM::LLVMDialect::getAlignAttrName(), align);
  });
  std::string toolkit = cudaToolkitPath();
  FRICTION_CHECK(!toolkit.empty(), "codegen: the cuda target needs the CUDA toolkit's libdevice "
                                   "(nvvm/libdevice/libdevice.10.bc under CUDA_HOME or /usr/local/cuda)");
  runPasses(module, "nvvm", [&](mlir::PassManager& pm) {
    mlir::GpuNVVMAttachTargetOptions target;
    target.chip = options.gpuChip;
    target.features = "+ptx80";  // what CUDA 12's and 13's ptxas read for sm_80 and sm_90
    target.optLevel = 3;
    pm.addPass(mlir::createGpuNVVMAttachTarget(target));
    pm.addPass(mlir::createConvertSCFToCFPass());
    pm.addPass(mlir::memref::createExpandStridedMetadataPass());
    pm.addPass(mlir::createLowerAffinePass());
    mlir::ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true;  // a buffer argument is one pointer (static shapes): GpuLaunch::args
    pm.addNestedPass<mlir::gpu::GPUModuleOp>(mlir::createConvertGpuOpsToNVVMOps(nvvm));
    pm.addNestedPass<mlir::gpu::GPUModuleOp>(mlir::createCanonicalizerPass());
    pm.addNestedPass<mlir::gpu::GPUModuleOp>(mlir::createReconcileUnrealizedCastsPass());
    mlir::GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "isa";  // PTX text: the driver or ptxas assembles it
    binary.toolkitPath = toolkit;      // where libdevice is linked from
    pm.addPass(mlir::createGpuModuleToBinaryPass(binary));
  });
}

gpu::GpuKernel compileGpuKernel(const Node& node, const CodegenOptions& options, CompileTimes& times) {
  FRICTION_CHECK(options.target == Target::Cuda, "codegen: compileGpuKernel needs the cuda target");
  MlirContext& mc = MlirContext::get();
  std::lock_guard<std::mutex> lock(mc.mu);
  auto t0 = Clock::now();
  auto module = buildModule(mc.ctx, {&node}, {"k0"}, options);
  times.buildMs += msSince(t0);
  t0 = Clock::now();
  // The launches are read before nvvm turns the gpu.modules into binaries.
  gpu::GpuKernel kernel;
  auto view = analyzeKernel(node, options);
  FRICTION_CHECK(view, "codegen: " + node.describe() + " is not a kernel");
  kernel.buffers = int(view->inputs.size() + view->outputs.size());
  kernel.inputs = int(view->inputs.size());
  kernel.scratch = view->scratch;
  runStages(*module, options, [&](const std::string& stage, mlir::ModuleOp m) {
    if (stage != "gpu-outline") return;
    auto fn = *m.getOps<mlir::func::FuncOp>().begin();
    fn.walk([&](mlir::gpu::LaunchFuncOp launch) {
      gpu::GpuLaunch l;
      l.function = launch.getKernelName().str();
      mlir::Value sizes[6] = {launch.getGridSizeX(),  launch.getGridSizeY(),  launch.getGridSizeZ(),
                              launch.getBlockSizeX(), launch.getBlockSizeY(), launch.getBlockSizeZ()};
      for (int i = 0; i < 6; ++i) {
        auto c = mlir::getConstantIntValue(sizes[i]);
        FRICTION_CHECK(c, "codegen: a launch of " + l.function + " has a grid or block size known only at run time");
        (i < 3 ? l.grid : l.block)[i % 3] = *c;
      }
      for (mlir::Value v : launch.getKernelOperands()) {
        gpu::GpuLaunchArg a;
        if (auto arg = mlir::dyn_cast<mlir::BlockArgument>(v); arg && arg.getOwner()->getParentOp() == fn) {
          a.buffer = int(arg.getArgNumber());
        } else if (auto i = mlir::getConstantIntValue(v)) {
          a.integer = *i;
          a.bits = v.getType().isIndex() ? 64 : int(v.getType().getIntOrFloatBitWidth());
        } else if (auto f = v.getDefiningOp<mlir::arith::ConstantFloatOp>()) {
          a.isFloat = true;
          a.real = f.value().convertToDouble();
        } else {
          throw Error("codegen: a launch of " + l.function + " passes a value computed on the host (" +
                      (v.getDefiningOp() ? v.getDefiningOp()->getName().getStringRef().str() : std::string("argument")) + ")");
        }
        l.args.push_back(a);
      }
      kernel.launches.push_back(std::move(l));
    });
  });
  module->walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute a : binary.getObjects()) {
      std::string ptx = mlir::cast<mlir::gpu::ObjectAttr>(a).getObject().str();
      while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();  // the PTX string ends in a NUL byte
      kernel.ptx += ptx;
    }
  });
  times.lowerMs += msSince(t0);
  FRICTION_CHECK(!kernel.ptx.empty(), "codegen: no PTX came out of " + node.describe());
  return kernel;
}

}  // namespace friction::codegen
