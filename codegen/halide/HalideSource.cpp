#include "codegen/halide/HalideSource.h"

#include <cpuid.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <numeric>

#include "codegen/KernelAnalysis.h"
#include "codegen/halide/HalideSchedule.h"
#include "ir/Error.h"

namespace friction::codegen::halide {
namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The JIT target: Halide's host target (or HL_JIT_TARGET), less AVX512_SapphireRapids where the CPU lacks
// AVX512-FP16. Halide 14 sets that feature from AVX512-BF16 and VNNI alone and has LLVM emit FP16 instructions
// under it (vmovw for a bool load), which an AMD EPYC with AVX-512 (Zen 4: BF16 and VNNI, no FP16) stops on
// with SIGILL.
HL::Target jitTarget() {
  HL::Target target = HL::get_jit_target_from_environment();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool fp16 = __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & (1u << 23));
  return fp16 ? target : target.without_feature(HL::Target::AVX512_SapphireRapids);
}

// Sends stderr to /dev/null while it lives (fd 2 is the process's: one at a time).
class SilencedStderr {
 public:
  SilencedStderr() : lock_(mutex()), saved_(dup(2)) {
    std::fflush(stderr);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2), close(null);
  }
  ~SilencedStderr() {
    std::fflush(stderr);
    if (saved_ >= 0) dup2(saved_, 2), close(saved_);
  }
  SilencedStderr(const SilencedStderr&) = delete;
  SilencedStderr& operator=(const SilencedStderr&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  std::lock_guard<std::mutex> lock_;
  int saved_;
};

// A JIT-compiled pipeline called through the program's kernel ABI
// (codegen/KernelAbi.h): each memref descriptor becomes a halide_buffer_t over
// the same memory (dims reversed: Halide's dim 0 is the innermost), passed
// straight to the pipeline's entry point, after them the kernel's constant
// buffers (KernelFuncs::constants). Pipeline::realize took 0.7 us a call of a
// two-input kernel more than that (a ParamMap, an HL::Buffer allocation per
// argument), several times a recurrence step's own work. The pipeline is compiled
// with a user context, whose error handler takes a failure's message (without
// one, Halide's runtime aborts the process on it).
class PipelineCall {
 public:
  PipelineCall(HL::Internal::JITModule module, size_t inputs, std::vector<HL::Buffer<>> constants,
               std::vector<HL::Type> types, std::vector<int> ranks, std::string label)
      : module_(std::move(module)), entry_(module_.argv_function()), inputs_(inputs), constants_(std::move(constants)),
        types_(std::move(types)), ranks_(std::move(ranks)), label_(std::move(label)) {}

  void operator()(void** args) const {
    const size_t n = types_.size();  // inputs, then outputs (scratch buffers after them are not used)
    // Per thread and kept between calls (a recurrence calls its cell's kernel every step); dims never grows
    // past its reserve, so the buffers' pointers into it stay valid.
    thread_local std::vector<halide_buffer_t> buffers;
    thread_local std::vector<halide_dimension_t> dims;
    thread_local std::vector<const void*> argv;
    buffers.assign(n, halide_buffer_t{});
    dims.clear();
    dims.reserve(size_t(std::accumulate(ranks_.begin(), ranks_.end(), 0)));
    for (size_t i = 0; i < n; ++i) {
      const int64_t* d = *static_cast<int64_t**>(args[i]);  // allocated, aligned, offset, sizes[r], strides[r]
      const int r = ranks_[i];
      halide_buffer_t& b = buffers[i];
      std::memcpy(&b.host, &d[1], sizeof b.host);
      b.type = types_[i];
      b.dimensions = r;
      b.dim = dims.data() + dims.size();
      for (int k = 0; k < r; ++k) dims.emplace_back(0, int32_t(d[3 + r - 1 - k]), int32_t(d[3 + r + r - 1 - k]));
    }
    CallContext context;
    HL::JITUserContext* user = &context;
    argv.assign(1, &user);  // the user context, the inputs, the constants, the outputs
    for (size_t i = 0; i < n; ++i) {
      if (i == inputs_)
        for (const HL::Buffer<>& c : constants_) argv.push_back(c.raw_buffer());
      argv.push_back(&buffers[i]);
    }
    if (entry_(argv.data()) != 0)
      throw Error("halide: kernel " + label_ + ": " + (context.error.empty() ? "failed" : context.error));
  }

 private:
  struct CallContext : HL::JITUserContext {
    CallContext() {
      handlers.custom_error = [](HL::JITUserContext* c, const char* message) {
        static_cast<CallContext*>(c)->error = message;
      };
    }
    std::string error;
  };
  HL::Internal::JITModule module_;  // keeps the code alive
  HL::Internal::JITModule::argv_wrapper entry_;
  size_t inputs_;
  std::vector<HL::Buffer<>> constants_;
  std::vector<HL::Type> types_;  // of the inputs, then the outputs
  std::vector<int> ranks_;
  std::string label_;
};

class HalideSource : public KernelSource {
 public:
  explicit HalideSource(const ScheduleOptions& options) : options_(options), target_(jitTarget()) {
    codegen_.target = Target::Halide;
    loadAutoscheduler(options.schedule);  // a missing plugin refuses the backend, not every kernel
  }

  KernelBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>&) override {
    KernelBatch batch;
    for (const Node* n : nodes) {
      CompiledKernel k;
      k.timedAlone = true;  // one pipeline each: its phases are its own
      try {
        compile(*n, k);
      } catch (const Error& e) {
        k.fn = nullptr;
        k.error = e.what();
      } catch (const HL::Error& e) {
        k.fn = nullptr;
        k.error = "halide: " + n->describe() + ": " + e.what();
      } catch (const std::exception& e) {  // a bug here must not take the program down: the node falls back
        k.fn = nullptr;
        k.error = "halide: " + n->describe() + ": internal error: " + e.what();
      }
      batch.times += k.own;
      batch.kernels.push_back(std::move(k));
    }
    return batch;
  }
  bool compiles() const override { return true; }
  std::string describe() const override {
    std::string d = std::string("Halide 14 JIT for ") + target_.to_string() + ", schedule " +
                    scheduleInfo(options_.schedule).spelling +
                    (options_.schedule == Schedule::Adams2019 ? " (beam " + std::to_string(options_.beam) + ")" : "") +
                    (options_.schedule == Schedule::Default
                         ? " (" + std::to_string(scheduleLanes(options_, target_)) + " lanes)"
                         : "") +
                    (options_.accumulatorRows > 1 ? ", " + std::to_string(options_.accumulatorRows) + " accumulator rows" : "") +
                    ", producers " +
                    (options_.inlineProducers ? "inlined" : "materialized");
    if (refused_)
      d += ", " + std::to_string(refused_) + " kernels refused by the autoscheduler on friction's schedule (last: " +
           lastRefusal_.substr(0, 160) + ")";
    return d;
  }

 private:
  // Builds, schedules and compiles the pipeline of `n`: build = the
  // algorithm, lower = the schedule (autoscheduling), jit = Halide's
  // lowering and LLVM.
  void compile(const Node& n, CompiledKernel& k) {
    std::string why;
    auto view = analyzeKernel(n, codegen_, &why);
    FRICTION_CHECK(view, "halide: " + n.describe() + " is not a kernel: " + why);
    KernelFuncs funcs;
    HL::Internal::JITModule module;
    try {
      module = build(*view, n, options_, funcs, k.own);
    } catch (const HL::Error& e) {
      // The autoschedulers reject some algorithms (Adams2019 and Li2018: a Gather's data-dependent index), and
      // some of their schedules fail Halide's own lowering (Li2018: an atomic predicated store): such a kernel
      // gets friction's schedule, counted in the description, rather than the interpreter.
      if (!*scheduleInfo(options_.schedule).autoscheduler) throw;
      refused_++;
      lastRefusal_ = n.describe() + ": " + std::string(e.what()).substr(0, 120);
      ScheduleOptions fallback = options_;
      fallback.schedule = Schedule::Default;
      fallback.accumulatorRows = 1;
      module = build(*view, n, fallback, funcs, k.own);
    }
    std::vector<HL::Type> types;
    std::vector<int> ranks;
    for (const HL::ImageParam& p : funcs.inputs) types.push_back(p.type()), ranks.push_back(p.dimensions());
    for (size_t i = 0; i < funcs.outputs.size(); ++i)
      types.push_back(halideType(view->outputs[i]->dtype())), ranks.push_back(int(funcs.outputs[i].shape.size()));
    auto call = std::make_shared<PipelineCall>(std::move(module), funcs.inputs.size(), funcs.constants, types, ranks,
                                               n.describe());
    k.fn = [call](void** args) { (*call)(args); };
  }

  // The pipeline of `view` under `options`, JIT-compiled (its entry point takes the user context, then the
  // inputs, then the outputs), its phases added
  // to `times` (a refused attempt counts too): build = the algorithm, lower =
  // the schedule (autoscheduling), jit = Halide's lowering and LLVM. Halide's
  // notes (an autoscheduler's search, storage-folding warnings) are kept off
  // stderr; its errors arrive as exceptions.
  HL::Internal::JITModule build(const KernelView& view, const Node& n, const ScheduleOptions& options,
                                KernelFuncs& funcs, CompileTimes& times) {
    auto t0 = std::chrono::steady_clock::now();
    funcs = defineKernel(view, /*clampInputs=*/options.schedule != Schedule::None, options.accumulatorRows);
    times.buildMs += msSince(t0);
    t0 = std::chrono::steady_clock::now();
    std::vector<HL::Func> outputs;
    {
      SilencedStderr quiet;
      scheduleKernel(funcs, options, target_);
    }
    for (const ShapedFunc& f : funcs.outputs) outputs.push_back(f.func);
    HL::Pipeline pipeline(outputs);
    times.lowerMs += msSince(t0);
    if (options.dump) {
      std::fprintf(stderr, "halide: loop nest of %s\n", n.describe().c_str());
      pipeline.print_loop_nest();
    }
    t0 = std::chrono::steady_clock::now();
    SilencedStderr quiet;
    std::vector<HL::Argument> arguments(funcs.inputs.begin(), funcs.inputs.end());
    arguments.insert(arguments.end(), funcs.constants.begin(), funcs.constants.end());
    HL::Module module = pipeline.compile_to_module(arguments, "kernel", target_.with_feature(HL::Target::UserContext));
    // A buffer left out of the arguments would be copied into the code as a global, read with vector loads
    // aligned beyond what the global is (a crash): KernelFuncs::constants must hold every one.
    FRICTION_CHECK(module.buffers().empty(), "halide: " + n.describe() + " reads a buffer that is not an argument");
    HL::Internal::JITModule jit(module, module.functions().back());
    times.jitMs += msSince(t0);
    return jit;
  }

  ScheduleOptions options_;
  CodegenOptions codegen_;
  HL::Target target_;
  int64_t refused_ = 0;  // kernels the autoscheduler refused, over this source's life
  std::string lastRefusal_;
};

}  // namespace

std::unique_ptr<KernelSource> createHalideSource(const ScheduleOptions& options) {
  return std::make_unique<HalideSource>(options);
}

}  // namespace friction::codegen::halide
