// The pipelines of codegen/CodegenStages.def: one function per stage, run in
// table order for the options' target, switchable stages skipped when the
// options turn them off. The GPU stages are in GpuStages.cpp.
#include <iostream>

#include "codegen/mlir/Context.h"
#include "ir/Error.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

namespace friction::codegen {

void runPasses(mlir::ModuleOp module, const char* stage, const std::function<void(mlir::PassManager&)>& add) {
  Diagnostics diags(*module.getContext());
  mlir::PassManager pm(module.getContext());
  add(pm);
  FRICTION_CHECK(mlir::succeeded(pm.run(module)), std::string("codegen: stage '") + stage + "' failed:\n" + diags.text);
}

// Loop order for the naive-loops path: convert-linalg-to-loops nests loops in
// iteration-dim order, and a matmul's (m, n, k) puts the reduction innermost
// with a strided walk down B's column. Generalizing the named contractions and
// interchanging to (m, k, n) makes the innermost loop a contiguous
// c[m, :] += a[m, k] * b[k, :] that LLVM's loop vectorizer handles.
// With microkernels on, the named ops are left for the `ukernels` stage.
void interchangeContractions(mlir::ModuleOp module, const CodegenOptions& options) {
  const bool namedToo = !options.ukernels();
  llvm::SmallVector<mlir::linalg::LinalgOp> contractions;
  module.walk([&](mlir::linalg::LinalgOp op) {
    if ((namedToo && mlir::isa<mlir::linalg::MatmulOp, mlir::linalg::BatchMatmulOp>(op.getOperation())) ||
        (mlir::isa<mlir::linalg::GenericOp>(op.getOperation()) && op.getNumReductionLoops() == 1 &&
         op.getNumLoops() >= 3 && op.getIteratorTypesArray().back() == mlir::utils::IteratorType::reduction))
      contractions.push_back(op);
  });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::linalg::LinalgOp op : contractions) {
    rewriter.setInsertionPoint(op);
    mlir::linalg::GenericOp generic;
    if (auto g = mlir::dyn_cast<mlir::linalg::GenericOp>(op.getOperation())) {
      generic = g;
    } else {
      auto gen = mlir::linalg::generalizeNamedOp(rewriter, op);
      if (mlir::failed(gen)) continue;
      generic = *gen;
    }
    unsigned n = generic.getNumLoops();
    // Only when B is read along n (row-major [k, n]); a transposed B ([n, k],
    // Gemm transB) is already contiguous along k with the reduction innermost.
    mlir::AffineMap bMap = generic.getIndexingMapsArray()[1];
    if (bMap.getNumResults() == 0 || bMap.getResults().back() != rewriter.getAffineDimExpr(n - 2)) continue;
    llvm::SmallVector<unsigned> perm;
    for (unsigned i = 0; i + 2 < n; ++i) perm.push_back(i);
    perm.push_back(n - 1);  // k
    perm.push_back(n - 2);  // n
    (void)mlir::linalg::interchangeGenericOp(rewriter, generic, perm);
  }
}

void bufferize(mlir::ModuleOp module, const CodegenOptions&) {
  runPasses(module, "bufferize", [](mlir::PassManager& pm) {
    mlir::bufferization::OneShotBufferizationOptions o;
    o.bufferizeFunctionBoundaries = true;
    o.setFunctionBoundaryTypeConversion(mlir::bufferization::LayoutMapOption::IdentityLayoutMap);
    pm.addPass(mlir::bufferization::createOneShotBufferizePass(o));
    // Folds expand_shape(collapse_shape(arg)) back to arg, so results become recognizably equivalent.
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::bufferization::createDropEquivalentBufferResultsPass());
    // A slice updated in place (a convolution's window cells) leaves a copy of a subview onto an identical
    // one: CSE makes them one value, and the canonicalizer drops the self-copy.
    pm.addPass(mlir::createCSEPass());
    pm.addPass(mlir::createCanonicalizerPass());
  });
  // The caller's buffers are the outputs: a function still returning one would leak or copy.
  for (auto fn : module.getOps<mlir::func::FuncOp>())
    FRICTION_CHECK(fn.getNumResults() == 0 || fn.isDeclaration(),
                   "codegen: bufferization did not write " + fn.getName().str() + "'s results in place");
}

static void wrapSerialWork(mlir::ModuleOp module);

// Parallel dims first: convert-linalg-to-parallel-loops makes one scf.parallel
// of the leading parallel dims only, so a reduction in the middle (a
// convolution cell's generic runs (n, g, k, c, oh, ow)) would leave the
// output pixels to one thread's sequential loops.
void convertToParallelLoops(mlir::ModuleOp module, const CodegenOptions&) {
  llvm::SmallVector<mlir::linalg::GenericOp> generics;
  module.walk([&](mlir::linalg::GenericOp op) { generics.push_back(op); });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::linalg::GenericOp op : generics) {
    llvm::SmallVector<unsigned> parallel, reduction;
    auto iterators = op.getIteratorTypesArray();
    for (unsigned i = 0; i < iterators.size(); ++i)
      (iterators[i] == mlir::utils::IteratorType::parallel ? parallel : reduction).push_back(i);
    parallel.append(reduction.begin(), reduction.end());
    bool identity = true;
    for (unsigned i = 0; i < parallel.size(); ++i) identity = identity && parallel[i] == i;
    if (identity) continue;
    rewriter.setInsertionPoint(op);
    FRICTION_CHECK(mlir::succeeded(mlir::linalg::interchangeGenericOp(rewriter, op, parallel)),
                   "codegen: parallel-loops could not move a generic's reductions innermost");
  }
  runPasses(module, "parallel-loops", [](mlir::PassManager& pm) {
    pm.addNestedPass<mlir::func::FuncOp>(mlir::createConvertLinalgToParallelLoopsPass());
  });
  wrapSerialWork(module);
}

// A linalg op with no parallel dim (a reduction to a scalar, a softmax of a
// 1-D input, a 0-d result) became loops or bare loads and stores at the top
// of its function: each such run of ops goes into a one-trip scf.parallel, so
// it is mapped to the GPU (one thread) like every other nest.
static void wrapSerialWork(mlir::ModuleOp module) {
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    if (fn.isDeclaration()) continue;
    mlir::Block& body = fn.getBody().front();
    auto stays = [](mlir::Operation& op) {  // what needs no wrapping: nests, launches, views, constants, the return
      return mlir::isa<mlir::scf::ParallelOp, mlir::gpu::LaunchOp, mlir::func::ReturnOp, mlir::ViewLikeOpInterface, mlir::memref::ExpandShapeOp,
                       mlir::memref::CollapseShapeOp>(op) ||
             op.hasTrait<mlir::OpTrait::ConstantLike>();
    };
    std::vector<std::vector<mlir::Operation*>> runs(1);
    for (mlir::Operation& op : body) {
      if (stays(op)) {
        if (!runs.back().empty()) runs.emplace_back();
      } else {
        runs.back().push_back(&op);
      }
    }
    for (const auto& run : runs) {
      if (run.empty()) continue;
      // Results used after the run cannot move into a region.
      bool escapes = false;
      for (mlir::Operation* op : run)
        for (mlir::Operation* user : op->getUsers())
          escapes = escapes || std::find(run.begin(), run.end(), user->getBlock()->findAncestorOpInBlock(*user)) == run.end();
      if (escapes) continue;
      mlir::OpBuilder b(run.front());
      mlir::Location loc = run.front()->getLoc();
      mlir::Value zero = b.create<mlir::arith::ConstantIndexOp>(loc, 0), one = b.create<mlir::arith::ConstantIndexOp>(loc, 1);
      auto once = b.create<mlir::scf::ParallelOp>(loc, mlir::ValueRange{zero}, mlir::ValueRange{one}, mlir::ValueRange{one});
      mlir::Operation* terminator = once.getBody()->getTerminator();
      for (mlir::Operation* op : run) op->moveBefore(terminator);
    }
  }
}

// A broadcast operand reads its unit dims at a constant 0 (a per-channel
// [C, 1, 1] as (d1, 0, 0)), which makes its map no projected permutation, the
// form the collapse reads. A collapse_shape view without those dims leaves the
// map the dims it does read.
static void dropBroadcastUnitDims(mlir::linalg::GenericOp op, mlir::IRRewriter& rewriter) {
  llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
  bool changed = false;
  for (mlir::OpOperand* operand : op.getDpsInputOperands()) {
    mlir::AffineMap map = maps[operand->getOperandNumber()];
    auto type = mlir::dyn_cast<mlir::MemRefType>(operand->get().getType());
    if (!type || map.isProjectedPermutation()) continue;
    llvm::SmallVector<mlir::ReassociationIndices> groups;  // each read dim with the unit dims around it
    llvm::SmallVector<mlir::AffineExpr> read;
    mlir::ReassociationIndices leading;  // unit dims before the first read one
    bool unitOnly = true;
    for (int64_t r = 0; r < int64_t(map.getNumResults()); ++r) {
      mlir::AffineExpr e = map.getResult(r);
      auto constant = mlir::dyn_cast<mlir::AffineConstantExpr>(e);
      if (mlir::isa<mlir::AffineDimExpr>(e)) {
        groups.push_back(leading);
        groups.back().push_back(r);
        leading.clear();
        read.push_back(e);
      } else if (constant && constant.getValue() == 0 && type.getDimSize(r) == 1) {
        (groups.empty() ? leading : groups.back()).push_back(r);
      } else {
        unitOnly = false;
      }
    }
    if (!unitOnly) continue;
    rewriter.setInsertionPoint(op);
    operand->set(rewriter.create<mlir::memref::CollapseShapeOp>(op.getLoc(), operand->get(), groups));
    maps[operand->getOperandNumber()] = mlir::AffineMap::get(map.getNumDims(), 0, read, op.getContext());
    changed = true;
  }
  if (changed) op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
}

// LLVM vectorizes a generic's innermost loop by the vector width and runs the
// rest scalar: an NCHW plane's rows of 7, 14 or 28 leave 7, 6 or 4 elements of
// each row to scalar code, which for a Sigmoid or Erf body costs more than the
// vector part (EfficientNetV2-S's all-off Sigmoids took 7x ORT's). Adjacent
// static dims that every operand reads contiguously and in order become one
// dim (memref.collapse_shape views), so the vector loop covers the plane.
// Dynamic dims stay apart: they are the program's row slabs.
void collapseElementwiseDims(mlir::ModuleOp module, const CodegenOptions&) {
  llvm::SmallVector<mlir::linalg::GenericOp> generics;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (op.getNumReductionLoops() == 0 && op.hasPureBufferSemantics()) generics.push_back(op);
  });
  mlir::IRRewriter rewriter(module.getContext());
  for (mlir::linalg::GenericOp op : generics) {
    dropBroadcastUnitDims(op, rewriter);
    llvm::SmallVector<mlir::AffineMap> maps = op.getIndexingMapsArray();
    // isDimSequencePreserved reads projected permutations only.
    if (!llvm::all_of(maps, [](mlir::AffineMap m) { return m.isProjectedPermutation(); })) continue;
    llvm::SmallVector<int64_t> extents = op.getStaticLoopRanges();
    llvm::SmallVector<mlir::ReassociationIndices> runs;
    mlir::ReassociationIndices run;
    auto close = [&] {
      if (run.size() > 1) runs.push_back(run);
      run.clear();
    };
    for (int64_t d = 0; d < int64_t(extents.size()); ++d) {
      if (mlir::ShapedType::isDynamic(extents[d])) {
        close();
        continue;
      }
      mlir::ReassociationIndices longer = run;
      longer.push_back(d);
      if (!run.empty() && !mlir::linalg::areDimSequencesPreserved(maps, {longer})) close();
      run.push_back(d);
    }
    close();
    if (runs.empty()) continue;
    rewriter.setInsertionPoint(op);
    mlir::FailureOr<mlir::linalg::CollapseResult> collapsed = mlir::linalg::collapseOpIterationDims(op, runs, rewriter);
    FRICTION_CHECK(mlir::succeeded(collapsed), "codegen: collapse could not merge an elementwise generic's dims");
    rewriter.eraseOp(op);
  }
}

void convertToLoops(mlir::ModuleOp module, const CodegenOptions&) {
  runPasses(module, "loops",
            [](mlir::PassManager& pm) { pm.addNestedPass<mlir::func::FuncOp>(mlir::createConvertLinalgToLoopsPass()); });
}

// A scalar erff per element was ~15 ns: 100 ms of ViT-B's run at batch 1. The trigonometric ops stay libm
// (libdevice) calls: MLIR 19's approximations of them lose digits (asin near +-1 by 9%, sin and cos of |x| ~ 100
// by 6e-6, atan 4e-6 relative), where erf, tanh, exp and log keep about 1 ulp.
void approximateMath(mlir::ModuleOp module, const CodegenOptions&) {
  mlir::RewritePatternSet patterns(module.getContext());
  mlir::populateMathPolynomialApproximationPatterns(patterns);
  std::vector<mlir::Operation*> approximated;
  module.walk([&](mlir::Operation* op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "math" &&
        !mlir::isa<mlir::math::SinOp, mlir::math::CosOp, mlir::math::AsinOp, mlir::math::AcosOp, mlir::math::AtanOp>(op))
      approximated.push_back(op);
  });
  mlir::GreedyRewriteConfig config;
  config.strictMode = mlir::GreedyRewriteStrictness::ExistingAndNewOps;  // the expansions' own math ops too
  FRICTION_CHECK(mlir::succeeded(mlir::applyOpPatternsAndFold(approximated, std::move(patterns), config)) &&
                     // folded over the whole module as before: the approximations' constants hoisted and shared
                     mlir::succeeded(mlir::applyPatternsAndFoldGreedily(module, mlir::RewritePatternSet(module.getContext()))),
                 "codegen: math approximation did not converge");
}

void lowerToLlvm(mlir::ModuleOp module, const CodegenOptions&) {
  runPasses(module, "llvm", [](mlir::PassManager& pm) {
    pm.addPass(mlir::createConvertSCFToCFPass());
    pm.addPass(mlir::memref::createExpandStridedMetadataPass());
    pm.addPass(mlir::createLowerAffinePass());
    pm.addPass(mlir::createConvertMathToLLVMPass());
    pm.addPass(mlir::createConvertMathToLibmPass());
    pm.addPass(mlir::createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(mlir::createArithToLLVMConversionPass());
    pm.addPass(mlir::createConvertFuncToLLVMPass());
    pm.addPass(mlir::createConvertControlFlowToLLVMPass());
    pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  });
}

void runStages(mlir::ModuleOp module, const CodegenOptions& options, const StageObserver& observe) {
  // The stage functions, in the order of codegenStages() (the same table).
  using StageFn = void (*)(mlir::ModuleOp, const CodegenOptions&);
  static const StageFn kRun[] = {
#define FRICTION_CODEGEN_STAGE(fn, name, switchable, targets, summary) &fn,
#include "codegen/CodegenStages.def"
#undef FRICTION_CODEGEN_STAGE
  };
  const std::vector<CodegenStage>& stages = codegenStages();
  auto after = [&](const char* stage) {
    if (observe) observe(stage, module);
    if (options.dumpStages) std::cerr << "// ----- codegen stage: " << stage << " -----\n" << printOp(module) << "\n";
  };
  auto verify = [&](const char* stage) {
    Diagnostics diags(*module.getContext());
    FRICTION_CHECK(mlir::succeeded(mlir::verify(module)),
                   std::string("codegen: the module does not verify after '") + stage + "':\n" + diags.text);
  };
  verify("built");
  after("built");
  for (size_t i = 0; i < stages.size(); ++i) {
    const CodegenStage& s = stages[i];
    if (!s.in(options.target) || (s.switchable != kRequired && !options.enabled(s.name))) continue;
    kRun[i](module, options);
    verify(s.name);
    after(s.name);
    if (options.stopAfter == s.name) break;
  }
}

}  // namespace friction::codegen
