#include "codegen/halide/HalideSource.h"

#include <cpuid.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>

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
// (codegen/KernelAbi.h): each memref descriptor becomes a Halide buffer over
// the same memory (dims reversed: Halide's dim 0 is the innermost).
class PipelineCall {
 public:
  PipelineCall(HL::Pipeline pipeline, std::vector<HL::ImageParam> inputs, std::vector<HL::Type> types,
               std::vector<int> ranks, HL::Target target, std::string label)
      : pipeline_(std::move(pipeline)), inputs_(std::move(inputs)), types_(std::move(types)), ranks_(std::move(ranks)),
        target_(std::move(target)), label_(std::move(label)) {}

  void operator()(void** args) const {
    HL::ParamMap params;
    std::vector<HL::Buffer<>> outputs;
    for (size_t i = 0; i < types_.size(); ++i) {  // inputs, then outputs (scratch buffers after them are not used)
      const int64_t* d = *static_cast<int64_t**>(args[i]);  // allocated, aligned, offset, sizes[r], strides[r]
      const int r = ranks_[i];
      void* data = nullptr;
      std::memcpy(&data, &d[1], sizeof data);
      std::vector<halide_dimension_t> dims(static_cast<size_t>(r));
      for (int k = 0; k < r; ++k)
        dims[size_t(k)] = halide_dimension_t(0, int32_t(d[3 + r - 1 - k]), int32_t(d[3 + r + r - 1 - k]));
      HL::Buffer<> buffer(types_[i], data, r, dims.data());
      if (i < inputs_.size()) params.set(inputs_[i], buffer);
      else outputs.push_back(buffer);
    }
    try {
      if (outputs.size() == 1) {
        pipeline_.realize(outputs[0], target_, params);
      } else {
        HL::Realization all(outputs);
        pipeline_.realize(all, target_, params);
      }
    } catch (const HL::Error& e) {
      throw Error("halide: kernel " + label_ + ": " + e.what());
    }
  }

 private:
  mutable HL::Pipeline pipeline_;
  std::vector<HL::ImageParam> inputs_;
  std::vector<HL::Type> types_;
  std::vector<int> ranks_;
  HL::Target target_;
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
    HL::Pipeline pipeline;
    try {
      pipeline = build(*view, n, options_, funcs, k.own);
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
      pipeline = build(*view, n, fallback, funcs, k.own);
    }
    std::vector<HL::Type> types;
    std::vector<int> ranks;
    for (const HL::ImageParam& p : funcs.inputs) types.push_back(p.type()), ranks.push_back(p.dimensions());
    for (size_t i = 0; i < funcs.outputs.size(); ++i)
      types.push_back(halideType(view->outputs[i]->dtype())), ranks.push_back(int(funcs.outputs[i].shape.size()));
    auto call = std::make_shared<PipelineCall>(pipeline, funcs.inputs, types, ranks, target_, n.describe());
    k.fn = [call](void** args) { (*call)(args); };
  }

  // The pipeline of `view` under `options`, JIT-compiled, its phases added
  // to `times` (a refused attempt counts too): build = the algorithm, lower =
  // the schedule (autoscheduling), jit = Halide's lowering and LLVM. Halide's
  // notes (an autoscheduler's search, storage-folding warnings) are kept off
  // stderr; its errors arrive as exceptions.
  HL::Pipeline build(const KernelView& view, const Node& n, const ScheduleOptions& options, KernelFuncs& funcs,
                     CompileTimes& times) {
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
    {
      SilencedStderr quiet;
      pipeline.compile_jit(target_);
    }
    times.jitMs += msSince(t0);
    return pipeline;
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
