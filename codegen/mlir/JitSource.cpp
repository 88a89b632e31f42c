// The MLIR context every module lives in, and the JIT: KernelSource over
// mlir::ExecutionEngine (build, lower, LLVM O2 for the host CPU, ORC).
#include "codegen/Microkernels.h"
#include "codegen/mlir/Codegen.h"
#include "codegen/mlir/Context.h"
#include "ir/Error.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

template <typename... Dialects>
mlir::DialectRegistry registryOf() {
  mlir::DialectRegistry r;
  r.insert<Dialects...>();
  mlir::linalg::registerAllDialectInterfaceImplementations(r);
  mlir::arith::registerBufferizableOpInterfaceExternalModels(r);
  mlir::arith::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::tensor::registerBufferizableOpInterfaceExternalModels(r);
  mlir::tensor::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::tensor::registerSubsetOpInterfaceExternalModels(r);
  mlir::memref::registerValueBoundsOpInterfaceExternalModels(r);
  mlir::memref::registerAllocationOpInterfaceExternalModels(r);
  mlir::bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(r);
  mlir::registerBuiltinDialectTranslation(r);
  mlir::registerLLVMDialectTranslation(r);
  // The cuda target: gpu.module to PTX (codegen/mlir/GpuStages.cpp).
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(r);
  mlir::registerNVVMDialectTranslation(r);
  mlir::registerGPUDialectTranslation(r);
  return r;
}

template <typename... Dialects>
void loadAll(mlir::MLIRContext& ctx) {
  ctx.appendDialectRegistry(registryOf<Dialects...>());
  ctx.loadDialect<Dialects...>();
}

class JitSource : public KernelSource {
 public:
  JitSource(CodegenOptions options, bool compileEach) : options_(std::move(options)), compileEach_(compileEach) {}

  KernelBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>&) override {
    KernelBatch batch;
    batch.kernels.resize(nodes.size());
    if (!compileEach_) {
      try {
        std::vector<CompiledKernel> all = compile(nodes, batch.times);
        batch.kernels = std::move(all);
        return batch;
      } catch (const Error&) {
        // One module per kernel below: a kernel that still fails is reported alone.
      }
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      try {
        CompileTimes own;
        batch.kernels[i] = std::move(compile({nodes[i]}, own).front());
        batch.kernels[i].timedAlone = true;
        batch.kernels[i].own = own;
        batch.times += own;
      } catch (const Error& e) {
        batch.kernels[i].error = e.what();
      }
    }
    return batch;
  }

  bool compiles() const override { return true; }

  std::string describe() const override {
    std::string d = "MLIR 19 linalg, ";
    if (options_.target == Target::CudaNests)
      d += "cuda's loop nests on the host (" + std::to_string(options_.gpuBlockSize) + "-thread blocks), ";
    d += options_.ukernels() ? std::string("sgemm ukernel ") + ukernels::sgemmIsa() : std::string("matmul loops");
    d += ", LLVM O" + std::to_string(kLlvmOptLevel);
    if (!options_.defaultStages()) d += ", stages " + options_.str();
    return d;
  }

 private:
  // One module and one JIT for `nodes`; throws Error on failure.
  std::vector<CompiledKernel> compile(const std::vector<const Node*>& nodes, CompileTimes& times) const {
    MlirContext& mc = MlirContext::get();
    std::lock_guard<std::mutex> lock(mc.mu);
    std::vector<std::string> names;
    for (size_t i = 0; i < nodes.size(); ++i) names.push_back("k" + std::to_string(i));
    auto t0 = Clock::now();
    auto module = buildModule(mc.ctx, nodes, names, options_);
    times.buildMs += msSince(t0);
    t0 = Clock::now();
    runStages(*module, options_);
    times.lowerMs += msSince(t0);
    t0 = Clock::now();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    FRICTION_CHECK(bool(jtmb), "codegen: cannot detect the host target: " + llvm::toString(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto tm = jtmb->createTargetMachine();
    FRICTION_CHECK(bool(tm), "codegen: no target machine: " + llvm::toString(tm.takeError()));
    // ExecutionEngineOptions::transformer is a function_ref: the function must outlive create().
    std::function<llvm::Error(llvm::Module*)> transformer = [&](llvm::Module* m) {
      return optimizeLlvmModule(m, tm->get());
    };
    mlir::ExecutionEngineOptions options;
    options.transformer = transformer;
    options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
    // memrefCopy & co., should bufferization ever emit a copy.
    llvm::SmallVector<llvm::StringRef> libs = {FRICTION_MLIR_C_RUNNER_UTILS};
    options.sharedLibPaths = libs;
    options.enableGDBNotificationListener = false;
    options.enablePerfNotificationListener = false;
    Diagnostics diags(mc.ctx);
    auto engine = mlir::ExecutionEngine::create(*module, options);
    FRICTION_CHECK(bool(engine), "codegen: JIT failed: " + llvm::toString(engine.takeError()) + "\n" + diags.text);
    std::shared_ptr<mlir::ExecutionEngine> owner(std::move(*engine));
    owner->registerSymbols([](llvm::orc::MangleAndInterner interner) {
      llvm::orc::SymbolMap map;
      for (const auto& [name, address] : microkernelSymbols())
        map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
      return map;
    });
    std::vector<CompiledKernel> out(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto fn = owner->lookupPacked("_mlir_ciface_" + names[i]);
      FRICTION_CHECK(bool(fn), "codegen: kernel symbol missing: " + llvm::toString(fn.takeError()));
      out[i].fn = *fn;
      out[i].owner = owner;
    }
    times.jitMs += msSince(t0);
    return out;
  }

  CodegenOptions options_;
  bool compileEach_;
};

}  // namespace

MlirContext::MlirContext() : ctx(mlir::MLIRContext::Threading::DISABLED) {
  loadAll<mlir::func::FuncDialect, mlir::arith::ArithDialect, mlir::math::MathDialect, mlir::linalg::LinalgDialect,
          mlir::tensor::TensorDialect, mlir::memref::MemRefDialect, mlir::scf::SCFDialect, mlir::cf::ControlFlowDialect,
          mlir::affine::AffineDialect, mlir::bufferization::BufferizationDialect, mlir::LLVM::LLVMDialect,
          mlir::gpu::GPUDialect, mlir::NVVM::NVVMDialect>(ctx);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
}

MlirContext& MlirContext::get() {
  static MlirContext* context = new MlirContext();  // never destroyed: engines may outlive static destruction order
  return *context;
}

Diagnostics::Diagnostics(mlir::MLIRContext& ctx)
    : handler(&ctx, [this](mlir::Diagnostic& d) {
        text += d.str() + "\n";
        return mlir::success();
      }) {}

std::string printOp(mlir::Operation* op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}

std::unique_ptr<KernelSource> createJitSource(const CodegenOptions& options, bool compileEach) {
  return std::make_unique<JitSource>(options, compileEach);
}

std::vector<StageDump> kernelStages(const std::vector<const Node*>& nodes, const CodegenOptions& options) {
  MlirContext& mc = MlirContext::get();
  std::lock_guard<std::mutex> lock(mc.mu);
  std::vector<std::string> names;
  for (size_t i = 0; i < nodes.size(); ++i) names.push_back("k" + std::to_string(i));
  auto module = buildModule(mc.ctx, nodes, names, options);
  std::vector<StageDump> dump;
  runStages(*module, options,
                     [&](const std::string& stage, mlir::ModuleOp m) { dump.push_back({stage, printOp(m)}); });
  return dump;
}

}  // namespace friction::codegen
