// Ahead of time: the JIT's kernels as one relocatable object file (PIC, LLVM
// O2, machine code for the host CPU), for codegen/aot/ to link into an
// artifact.
#include <algorithm>

#include "codegen/mlir/Codegen.h"
#include "codegen/mlir/Context.h"
#include "ir/Error.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/LoopUtils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Target/LLVMIR/Export.h"

namespace friction::codegen {
namespace {

// A target machine for the host CPU that emits position-independent code
// (the object is linked into a shared library).
std::unique_ptr<llvm::TargetMachine> hostObjectTargetMachine() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  FRICTION_CHECK(bool(jtmb), "codegen: cannot detect the host target: " + llvm::toString(jtmb.takeError()));
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  jtmb->setRelocationModel(llvm::Reloc::PIC_);
  jtmb->setCodeModel(llvm::CodeModel::Small);
  auto tm = jtmb->createTargetMachine();
  FRICTION_CHECK(bool(tm), "codegen: no target machine: " + llvm::toString(tm.takeError()));
  return std::move(*tm);
}

// What mlir::ExecutionEngine's lookupPacked finds in a JIT: for each kernel's
// C interface `_mlir_ciface_<name>(desc*...)`, a packedSymbol(name) wrapper
// unpacking a type-erased argument list (a PackedFn, codegen/KernelAbi.h).
void addPackedWrappers(llvm::Module& m, const std::vector<std::string>& names) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  for (const std::string& name : names) {
    llvm::Function* fn = m.getFunction("_mlir_ciface_" + name);
    FRICTION_CHECK(fn && !fn->isDeclaration(), "codegen: no C interface for kernel " + name);
    auto* type = llvm::FunctionType::get(b.getVoidTy(), b.getPtrTy(), false);
    auto* packed = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, packedSymbol(name), m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", packed));
    llvm::SmallVector<llvm::Value*> args;
    for (auto [i, arg] : llvm::enumerate(fn->args())) {
      llvm::Value* slot = b.CreateGEP(b.getPtrTy(), packed->getArg(0), b.getInt64(i));
      args.push_back(b.CreateLoad(arg.getType(), b.CreateLoad(b.getPtrTy(), slot)));
    }
    b.CreateCall(fn, args);
    b.CreateRetVoid();
  }
}

// A loop body with at least this many float operations holds a long dependent
// chain (an exp, erf or tanh approximation), not a multiply-add or two.
constexpr int kLongFloatBody = 16;

// The pipeline below interleaves no loop unless told (compile time). An
// elementwise body with a polynomial approximation (exp, erf, tanh: about 20
// dependent float operations a vector) is then latency-bound, one vector in
// flight: a Sigmoid over 56x56 planes ran 2.3x ORT's time. Those innermost
// loops alone get two vectors in flight (llvm.loop.interleave.count).
void interleaveLongFloatBodies(llvm::Module& m) {
  for (llvm::Function& fn : m) {
    if (fn.isDeclaration()) continue;
    llvm::DominatorTree dominators(fn);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      if (!loop->isInnermost()) continue;
      int floatOps = 0;
      for (llvm::BasicBlock* block : loop->blocks())
        for (llvm::Instruction& i : *block)
          floatOps += i.getType()->isFloatingPointTy() && (llvm::isa<llvm::BinaryOperator>(i) || llvm::isa<llvm::CallInst>(i));
      if (floatOps >= kLongFloatBody) llvm::addStringMetadataToLoop(loop, "llvm.loop.interleave.count", 2);
    }
  }
}

}  // namespace

HostCpu hostCpu() {
  HostCpu h;
  h.name = llvm::sys::getHostCPUName().str();
  for (const auto& f : llvm::sys::getHostCPUFeatures())
    if (f.getValue()) h.features.push_back(f.getKey().str());
  std::sort(h.features.begin(), h.features.end());
  return h;
}

llvm::Error optimizeLlvmModule(llvm::Module* module, llvm::TargetMachine* target) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = false;
  tuning.LoopInterleaving = false;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(target, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  static_assert(kLlvmOptLevel == 2, "optimizeLlvmModule builds LLVM's O2 pipeline");
  interleaveLongFloatBodies(*module);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(*module, mam);
  return llvm::Error::success();
}

CompileTimes emitKernelObject(const std::vector<const Node*>& nodes, const std::vector<std::string>& names,
                              const CodegenOptions& options, const std::string& path) {
  MlirContext& mc = MlirContext::get();
  std::lock_guard<std::mutex> lock(mc.mu);
  CompileTimes out;
  auto t0 = Clock::now();
  auto module = buildModule(mc.ctx, nodes, names, options);
  out.buildMs = msSince(t0);
  t0 = Clock::now();
  runStages(*module, options);
  out.lowerMs = msSince(t0);
  t0 = Clock::now();
  Diagnostics diags(mc.ctx);
  llvm::LLVMContext llvmCtx;
  auto llvmModule = mlir::translateModuleToLLVMIR(*module, llvmCtx, "friction_aot");
  FRICTION_CHECK(llvmModule != nullptr, "codegen: translation to LLVM IR failed:\n" + diags.text);
  auto tm = hostObjectTargetMachine();
  mlir::ExecutionEngine::setupTargetTripleAndDataLayout(llvmModule.get(), tm.get());
  addPackedWrappers(*llvmModule, names);
  if (auto err = optimizeLlvmModule(llvmModule.get(), tm.get()))
    throw Error("codegen: LLVM O" + std::to_string(kLlvmOptLevel) + " failed: " + llvm::toString(std::move(err)));
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  FRICTION_CHECK(!ec, "codegen: cannot write '" + path + "': " + ec.message());
  llvm::legacy::PassManager pm;
  FRICTION_CHECK(!tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile),
                 "codegen: the host target cannot emit object files");
  pm.run(*llvmModule);
  os.flush();
  FRICTION_CHECK(!os.has_error(), "codegen: writing '" + path + "' failed");
  out.jitMs = msSince(t0);
  return out;
}

}  // namespace friction::codegen
