#include "codegen/CpuBackend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "codegen/ProgramBuilder.h"
#include "runtime/Inputs.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

// " [op xN, ...]" of a count map, or "".
std::string opList(const std::map<std::string, int64_t>& counts) {
  std::string d;
  for (const auto& [op, c] : counts)
    if (c > 0) d += (d.empty() ? " [" : ", ") + op + " x" + std::to_string(c);
  return d.empty() ? d : d + "]";
}

// Native calls, interpreter fallbacks and the arena, as descriptions say them.
std::string describeSteps(const ProgramStats& stats) {
  return std::to_string(stats.nativeCalls) + " native microkernel calls" + opList(stats.nativeOps) + ", " +
         std::to_string(stats.views) + " zero-copy views, " +
         (stats.shapeNodesFolded ? std::to_string(stats.shapeNodesFolded) + " shape-arithmetic nodes evaluated at build, "
                                 : std::string()) +
         (stats.legalized ? std::to_string(stats.legalized) + " nodes legalized (codegen/Legalize.h), " : std::string()) +
         std::to_string(stats.fallbackNodes) + " nodes on interp fallback";
}

// Each kernel's own compile phases (compiled one module each), slowest first.
std::string compileTable(const std::vector<KernelCompileStat>& kernels) {
  std::vector<KernelCompileStat> timed;
  for (const auto& k : kernels)
    if (k.buildMs >= 0) timed.push_back(k);
  if (timed.empty()) return "";
  std::sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) {
    return a.buildMs + a.lowerMs + a.jitMs > b.buildMs + b.lowerMs + b.jitMs;
  });
  char line[400];
  std::snprintf(line, sizeof line, "  compile per kernel (one module each): %zu kernels\n    %8s %8s %8s %8s %6s  %s\n",
                timed.size(), "total ms", "build", "lower", "jit", "calls", "kernel");
  std::string out = line;
  for (const auto& k : timed) {
    std::snprintf(line, sizeof line, "    %8.1f %8.2f %8.1f %8.1f %6ld  %s\n", k.buildMs + k.lowerMs + k.jitMs,
                  k.buildMs, k.lowerMs, k.jitMs, long(k.calls), k.kernel.c_str());
    out += line;
  }
  return out;
}

class CpuModel : public CompiledModel {
 public:
  CpuModel(const Graph& graph, std::unique_ptr<Program> p, ProgramStats stats, std::string description,
           int profileSlowest = kSlowestStepsNamed)
      : graph_(graph),
        program_(std::move(p)),
        stats_(std::move(stats)),
        description_(std::move(description)),
        profileSlowest_(profileSlowest) {
    // The model's constants are immutable for its lifetime: GEMMs pack constant weights once (Sgemm.h).
    forEachConstant(*program_, [](const Tensor& t) {
      if (t.dtype() == DType::F32) ukernels::registerConstant(t.rawData(), t.byteSize());
    });
  }
  ~CpuModel() override {
    forEachConstant(*program_, [](const Tensor& t) {
      if (t.dtype() == DType::F32) ukernels::unregisterConstant(t.rawData());
    });
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    checkInputs(graph_, inputs);  // the kernels read the inputs at their compiled shapes
    std::vector<Tensor> out = program_->run(inputs);
    if (++runs_ == 1 && program_->profiling) {
      // The first run is not like the others: it packs constant weights and faults the buffers in (a
      // classifier's 5 MB GEMM read 10x its steady time). Kept apart, reported only while it is the only one.
      firstRun_.clear();
      collectProfile(*program_, firstRun_);
      resetProfile(*program_);
    }
    return out;
  }
  std::string description() const override { return description_; }
  // The run profile (profile=on), then each kernel's compile phases (compile=each).
  std::string profile() const override {
    std::string out;
    if (program_->profiling && runs_ == 1) {
      out = profileReport(firstRun_, 1, profileSlowest_, " (the first alone)");
    } else if (program_->profiling) {
      std::vector<StepTime> steps;
      collectProfile(*program_, steps);
      out = profileReport(steps, runs_ - 1, profileSlowest_, " after the first");
    }
    return out + compileTable(stats_.kernels);
  }
  const ProgramStats& stats() const { return stats_; }
  int64_t interpNodes() const override { return stats_.fallbackNodes; }
  bool leavesCoresBusy() const override { return false; }

 private:
  const Graph& graph_;
  std::unique_ptr<Program> program_;
  ProgramStats stats_;
  std::string description_;
  int profileSlowest_;
  long runs_ = 0;
  std::vector<StepTime> firstRun_;  // the first run's step times (profile=on)
};

class CpuBackend : public Backend {
 public:
  CpuBackend(CpuBackendOptions options, std::unique_ptr<KernelSource> source)
      : options_(std::move(options)), source_(std::move(source)) {}
  std::string name() const override { return options_.name; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph) override {
    ProgramStats stats;
    ProgramBuilder builder(cache_, stats, options_.codegen);
    auto program = builder.buildProgram(graph, *source_);
    if (options_.profile) enableProfiling(*program);
    std::string d = options_.name + ": " + std::to_string(stats.kernelCalls) + " kernels compiled (" +
                    std::to_string(builder.distinctKernels()) + " distinct), " + describeSteps(stats) + ", " +
                    (stats.arenaValues ? "arena " + std::to_string(stats.arenaBytes / 1024) + " KiB for " +
                                             std::to_string(stats.arenaValues) + " values (plan-memory)"
                                       : std::string("no arena"));
    if (stats.patternArenaValues)
      d += ", pattern bodies' arena " + std::to_string(stats.patternArenaBytes / 1024) + " KiB for " +
           std::to_string(stats.patternArenaValues) + " values";
    d += opList(stats.fallbackOps);
    // The kernel compiler's description has no length bound (a Halide target string, an autoscheduler's
    // refusal), so only the numbers go through a fixed buffer.
    char buf[120];
    std::snprintf(buf, sizeof buf, "; compile %.0f ms (build %.0f, lower %.0f, jit %.0f)", stats.compileMs,
                  stats.phases.buildMs, stats.phases.lowerMs, stats.phases.jitMs);
    d += "; " + source_->describe() + buf;
    if (!builder.lastError().empty()) d += "; last codegen error: " + builder.lastError().substr(0, 300);
    return std::make_unique<CpuModel>(graph, std::move(program), std::move(stats), std::move(d), options_.profileSlowest);
  }

 private:
  CpuBackendOptions options_;
  std::unique_ptr<KernelSource> source_;
  KernelCache cache_;
};

}  // namespace

std::unique_ptr<Backend> createCpuBackend(const CpuBackendOptions& options, std::unique_ptr<KernelSource> source) {
  return std::make_unique<CpuBackend>(options, std::move(source));
}

std::unique_ptr<CompiledModel> compileCpuModel(const Graph& graph, KernelSource& source, const std::string& what,
                                               const CodegenOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  KernelCache cache;
  ProgramStats stats;
  ProgramBuilder builder(cache, stats, options);
  auto program = builder.buildProgram(graph, source);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string d = "cpu (" + what + "): " + std::to_string(stats.kernelCalls) + " kernel calls (" +
                  std::to_string(stats.kernelsLoaded) + " distinct kernels loaded, " +
                  std::to_string(stats.kernelsCompiled) + " compiled), " + describeSteps(stats) +
                  opList(stats.fallbackOps);
  char buf[96];
  std::snprintf(buf, sizeof buf, "; program built in %.0f ms (kernel lookup %.1f ms, no MLIR/LLVM)", ms, stats.compileMs);
  d += buf;
  if (!builder.lastError().empty()) d += "; last kernel error: " + builder.lastError().substr(0, 300);
  return std::make_unique<CpuModel>(graph, std::move(program), std::move(stats), std::move(d));
}

const CpuStats* cpuStats(const CompiledModel& model) {
  auto* m = dynamic_cast<const CpuModel*>(&model);
  return m ? &m->stats() : nullptr;
}

}  // namespace friction::codegen
