// The `cpu` backend. compile() walks the graph once:
//   - Constant nodes are evaluated at compile time;
//   - a convert-layout NHWC region (conv, pooling) becomes a direct call of
//     its microkernel (NativeKernels.h); weights are packed here, once;
//   - a node (or Fused region) that analyzeKernel accepts becomes a call of a
//     compiled kernel, looked up by structural key in the backend's cache; all
//     kernels new to the cache are built into one MLIR module and one JIT (an
//     epilogue region on a native anchor: the anchor's microkernel, then the
//     compiled epilogue in place on its output);
//   - any other Fused region runs its body as a nested program (so a "pattern"
//     or "reduction" region still gets compiled kernels for what it contains);
//   - any other node runs the reference interpreter's kernel (the fallback).
// run() executes the steps in order over a slot table, freeing each
// intermediate after its last use, like the interpreter.
#include "codegen/CpuBackend.h"

#include <omp.h>

#include <chrono>
#include <functional>
#include <cstring>
#include <set>
#include <unordered_map>

#include "codegen/Aot.h"
#include "codegen/Kernels.h"
#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "runtime/SlotProgram.h"
#include "runtime/StepProfile.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

struct KernelEntry {
  std::shared_ptr<void> owner;  // the JIT holding the code
  PackedFn fn = nullptr;
  std::string error;  // why compiling it failed (then the node falls back)
  std::string label;  // what it computes, for statistics: op or region kind -> output type
  double buildMs = -1, lowerMs = -1, jitMs = -1;  // its own compile phases (cpu?compile=each), else -1
};
using KernelCache = std::unordered_map<std::string, std::shared_ptr<KernelEntry>>;

struct Program;

struct Step : SlotStep {
  enum Kind { Jit, Interp, Sub, Native } kind = Interp;
  const Node* node = nullptr;
  std::shared_ptr<KernelEntry> kernel;      // Jit; Native with an epilogue
  std::vector<bool> rowArgs;                // Jit row-split kernel (KernelView::rowSplit): arguments cut by rows
  std::unique_ptr<NativeKernel> native;     // Native: the node itself, or the region's anchor
  std::vector<int> nativeIn;                // slots of the native op's inputs
  const interp::Kernel* interpKernel = nullptr;
  std::unique_ptr<Program> sub;
  int64_t arenaOffset = -1;  // output 0 lives in the program's arena at this offset (plan-memory)
};

struct Program : SlotProgram<Step> {
  // One buffer for the intermediates plan-memory placed (top level only); a
  // model therefore runs one inference at a time.
  std::shared_ptr<void> arena;
  // cpu?profile=on: wall time of every step, summed over runs (leaf steps of
  // regions are timed in their own program).
  bool profiling = false;
  mutable std::vector<double> stepMs;
  mutable std::vector<long> stepCalls;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  void runStep(const Step& s, std::vector<Tensor>& env, std::vector<Tensor>& args, std::vector<Tensor>& outs) const;
};

// Elements below which a row-split kernel runs on one thread.
constexpr int64_t kParallelElements = int64_t(1) << 15;

// Calls a compiled kernel: memref descriptors over friction tensors. With
// `outputsReady`, `outs` already hold the buffers the kernel updates in place.
void callKernel(const Step& s, const std::vector<Tensor>& env, std::vector<Tensor>& outs, bool outputsReady) {
  const Node& n = *s.node;
  std::vector<const Tensor*> args;
  for (size_t i = 0; i < s.in.size(); ++i) {
    if (s.in[i] < 0) continue;
    const Tensor& t = env[size_t(s.in[i])];
    const Value* v = n.input(i);
    FRICTION_CHECK(t.defined() && t.dtype() == DType::F32 && t.shape() == v->shape().staticDims(),
                   "cpu: " + n.describe() + ": input " + std::to_string(i) + " is " + t.type().str() +
                       ", the kernel was compiled for " + v->type().str());
    args.push_back(&t);
  }
  if (!outputsReady) {
    outs.clear();
    for (size_t i = 0; i < n.numOutputs(); ++i)
      outs.push_back(Tensor::uninitialized(DType::F32, n.output(i)->shape().staticDims()));
  }
  for (Tensor& t : outs) args.push_back(&t);
  // Descriptor of rank r: {allocated, aligned, offset, sizes[r], strides[r]}.
  size_t words = 0;
  for (const Tensor* t : args) words += 3 + 2 * t->rank();
  std::vector<int64_t> buf(words), argAt(args.size());
  size_t at = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = *args[i];
    int64_t* d = buf.data() + at;
    argAt[i] = int64_t(at);
    void* data = const_cast<void*>(t.rawData());
    std::memcpy(&d[0], &data, sizeof data);
    std::memcpy(&d[1], &data, sizeof data);
    d[2] = 0;
    size_t r = t.rank();
    int64_t stride = 1;
    for (size_t k = r; k-- > 0;) {
      d[3 + k] = t.shape()[k];
      d[3 + r + k] = stride;
      stride *= t.shape()[k];
    }
    at += 3 + 2 * r;
  }
  // Calls the kernel on rows [r0, r1) of the row-split arguments (all rows: `buf` as built).
  auto call = [&](std::vector<int64_t> d, int64_t r0, int64_t r1) {
    std::vector<void*> descs(args.size()), packed(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      int64_t* di = d.data() + argAt[i];
      if (r1 > r0 && s.rowArgs[i]) {
        size_t r = args[i]->rank();
        // The aligned pointer moves r0 rows on (identity-layout memrefs have a static offset 0: the
        // generated code ignores the descriptor's offset field).
        float* aligned = nullptr;
        std::memcpy(&aligned, &di[1], sizeof aligned);
        aligned += r0 * di[3 + r];
        std::memcpy(&di[1], &aligned, sizeof aligned);
        di[3] = r1 - r0;
      }
      descs[i] = di;
      packed[i] = &descs[i];
    }
    s.kernel->fn(packed.data());
  };
  const int64_t rows = outs[0].rank() > 0 ? outs[0].shape()[0] : 1;
  if (s.rowArgs.empty() || rows < 2 || outs[0].numel() < kParallelElements || omp_get_max_threads() < 2) {
    call(std::move(buf), 0, 0);
    return;
  }
  // Generated loops are sequential: slabs of rows on the OpenMP threads.
  const int64_t chunks = std::min<int64_t>(rows, 4 * omp_get_max_threads());
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) call(buf, rows * c / chunks, rows * (c + 1) / chunks);
}

void Program::runStep(const Step& s, std::vector<Tensor>& env, std::vector<Tensor>& args, std::vector<Tensor>& outs) const {
  args.clear();
  auto output0 = [&] {
    std::vector<int64_t> shape = s.node->output(0)->shape().staticDims();
    if (s.arenaOffset < 0) return Tensor::uninitialized(DType::F32, shape);
    return Tensor::view(DType::F32, shape, std::shared_ptr<void>(arena, static_cast<char*>(arena.get()) + s.arenaOffset));
  };
  if (s.kind == Step::Jit) {
    if (s.arenaOffset >= 0) outs.assign(1, output0());
    callKernel(s, env, outs, s.arenaOffset >= 0);
  } else if (s.kind == Step::Native) {
    for (int slot : s.nativeIn) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
    outs.assign(1, output0());
    s.native->run(args, outs[0]);
    if (s.kernel) callKernel(s, env, outs, true);
  } else {
    for (int slot : s.in) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
    outs = s.kind == Step::Sub ? s.sub->run(args) : (*s.interpKernel)(*s.node, args);
  }
  finishStep(s, outs, env);
}

std::vector<Tensor> Program::run(const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> env = initialSlots(inputs), args, outs;
  if (!profiling) {
    for (const Step& s : steps) runStep(s, env, args, outs);
    return results(env, "cpu");
  }
  stepMs.resize(steps.size());
  stepCalls.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    runStep(steps[i], env, args, outs);
    stepMs[i] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    stepCalls[i]++;
  }
  return results(env, "cpu");
}

// What a step is, for the profile: how it runs and what it computes.
std::string stepLabel(const Step& s) {
  const Node& n = *s.node;
  auto region = FusedRegion::of(n);
  std::string what = region ? region->label() : n.op();
  switch (s.kind) {
    case Step::Native: return s.native->describe() + (s.kernel ? " + compiled epilogue" : "");
    case Step::Jit: return "compiled " + what;
    case Step::Interp: return "interp " + what;
    case Step::Sub: return "region " + what;
  }
  return what;
}

// The timed leaf steps of `p` and of the regions inside it.
void collectProfile(const Program& p, std::vector<StepTime>& out) {
  for (size_t i = 0; i < p.steps.size() && i < p.stepMs.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.kind == Step::Sub) {
      collectProfile(*s.sub, out);
      continue;
    }
    out.push_back({stepLabel(s), s.node->name() + " -> " + s.node->output(0)->type().str(), p.stepMs[i], p.stepCalls[i]});
  }
}

// Builds programs, collecting kernels that are not in the cache yet.
class ProgramBuilder {
 public:
  // `source`: where compilePending takes kernels from (null: the JIT).
  ProgramBuilder(KernelCache& cache, CpuStats& stats, CodegenOptions options, KernelSource* source = nullptr)
      : cache_(cache), stats_(stats), options_(options), source_(source) {}

  // `outerOf` maps the inputs of a region body `g` to the values feeding them
  // at the top level, so constant weights are seen as constants (and packed
  // once) inside regions too, e.g. in every instance of a dedup pattern.
  std::unique_ptr<Program> build(const Graph& g, const std::unordered_map<const Value*, const Value*>& outerOf = {}) {
    auto p = std::make_unique<Program>();
    auto resolve = [&](const Value* v) {
      auto it = outerOf.find(v);
      return it == outerOf.end() ? v : it->second;
    };
    auto resolveAll = [&](const std::vector<const Value*>& vs) {
      std::vector<const Value*> out;
      for (const Value* v : vs) out.push_back(resolve(v));
      return out;
    };
    auto slotOf = [&](const Value* v) { return p->slotOf(v); };
    for (const Value* v : g.inputs()) p->inputSlots.push_back(slotOf(v));
    for (const Value* v : g.initializers()) p->constants.emplace_back(slotOf(v), v->constant());
    const auto& registry = interp::KernelRegistry::instance();
    for (const auto& node : g.nodes()) {
      const Node& n = *node;
      Step s;
      s.node = &n;
      for (const Value* v : n.inputs()) s.in.push_back(v ? slotOf(v) : -1);
      for (const Value* v : n.outputs()) s.out.push_back(slotOf(v));
      if (n.op() == "Constant" && n.numInputs() == 0) {
        // Evaluated now: constants cost nothing at run time.
        const interp::Kernel* k = registry.find("Constant");
        FRICTION_CHECK(k, "cpu: no Constant kernel");
        auto outs = (*k)(n, {});
        for (size_t o = 0; o < s.out.size() && o < outs.size(); ++o) p->constants.emplace_back(s.out[o], outs[o]);
        continue;
      }
      if (auto native = matchNative(n, resolveAll({n.inputs().begin(), n.inputs().end()}))) {
        s.kind = Step::Native;
        native->prepare();
        s.native = std::move(native);
        s.nativeIn = s.in;
        stats_.nativeCalls++;
        stats_.nativeOps[s.native->describe()]++;
      } else if (auto view = analyzeKernel(n)) {
        s.kind = Step::Jit;
        if (view->rowSplit) {
          s.rowArgs = view->rowInputs;
          s.rowArgs.resize(view->inputs.size() + view->outputs.size(), true);
        }
        if (view->kind == KernelKind::NativeEpilogue) {
          const Node& anchor = *view->nodes.front();
          std::vector<const Value*> outer = FusedRegion::of(n)->outerInputs(anchor);
          s.kind = Step::Native;
          s.native = matchNative(anchor, resolveAll(outer));
          s.native->prepare();
          for (const Value* v : outer) s.nativeIn.push_back(v ? slotOf(v) : -1);
          auto fused = matchFusedEpilogue(n, anchor, resolve);
          bool done = fused && s.native->fuse(*fused);  // the microkernel applies the epilogue: nothing to compile
          if (done && fused->residual) s.nativeIn.resize(3, -1), s.nativeIn.push_back(slotOf(fused->residual));
          stats_.nativeCalls++;
          stats_.nativeOps[s.native->describe()]++;
          if (done) {
            p->steps.push_back(std::move(s));
            continue;
          }
        }
        std::string key = structuralKey(n);
        auto [it, fresh] = cache_.emplace(key, nullptr);
        if (fresh) {
          it->second = std::make_shared<KernelEntry>();
          auto region = FusedRegion::of(n);
          it->second->label = (region ? region->label() : n.op()) + " -> " + n.output(0)->type().str();
          pending_.push_back({&n, it->second});
        }
        s.kernel = it->second;
        stats_.kernelCalls++;
        if (!fresh) stats_.kernelsReused++;
        used_[key].first = it->second, used_[key].second++;
      } else if (auto region = FusedRegion::of(n)) {
        s.kind = Step::Sub;
        const Graph& body = region->body();
        std::unordered_map<const Value*, const Value*> inner;
        for (size_t i = 0; i < body.inputs().size() && i < n.numInputs(); ++i) inner[body.inputs()[i]] = resolve(n.input(i));
        s.sub = build(body, inner);
      } else {
        s.kind = Step::Interp;
        s.interpKernel = registry.find(n.op());
        FRICTION_CHECK(s.interpKernel, "cpu: no kernel for op '" + n.op() + "' (node '" + n.name() + "')");
        stats_.fallbackNodes++;
        stats_.fallbackOps[n.op()]++;
      }
      p->steps.push_back(std::move(s));
    }
    for (const Value* v : g.outputs()) p->outputSlots.push_back(slotOf(v));
    p->computeReleases();
    return p;
  }

  // Compiles the pending kernels: all in one module, or one by one when the
  // batch fails (a kernel that still fails falls back to the interpreter).
  void compilePending() {
    if (pending_.empty()) return;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<const Node*> nodes;
    for (auto& p : pending_) nodes.push_back(p.first);
    if (source_) {  // a library of compiled kernels (an AOT artifact): no MLIR, no JIT
      std::vector<std::string> keys;
      for (const Node* n : nodes) keys.push_back(structuralKey(*n));
      CompiledBatch b = source_->kernels(nodes, keys);
      FRICTION_CHECK(b.entries.size() == nodes.size(), "cpu: the kernel source gave the wrong number of kernels");
      for (size_t i = 0; i < nodes.size(); ++i) {
        pending_[i].second->owner = b.owner;
        pending_[i].second->fn = b.entries[i];
        if (!b.entries[i]) pending_[i].second->error = i < b.errors.size() ? b.errors[i] : "no such kernel in the source";
      }
      stats_.kernelsLoaded += int64_t(pending_.size());
      stats_.compileMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      pending_.clear();
      return;
    }
    auto take = [&](CompiledBatch& b, size_t first, size_t count) {
      for (size_t i = 0; i < count; ++i) {
        pending_[first + i].second->owner = b.owner;
        pending_[first + i].second->fn = b.entries[i];
      }
      stats_.buildMs += b.buildMs, stats_.lowerMs += b.lowerMs, stats_.jitMs += b.jitMs;
    };
    // One module per kernel: with cpu?compile=each (so each kernel's phases are
    // its own), or when the batch failed (a kernel that still fails falls back).
    auto separately = [&] {
      for (size_t i = 0; i < nodes.size(); ++i) {
        try {
          CompiledBatch b = compileKernels({nodes[i]}, options_);
          take(b, i, 1);
          KernelEntry& e = *pending_[i].second;
          e.buildMs = b.buildMs, e.lowerMs = b.lowerMs, e.jitMs = b.jitMs;
        } catch (const Error& e) {
          pending_[i].second->error = e.what();
        }
      }
    };
    if (compileEach_) {
      separately();
    } else {
      try {
        CompiledBatch b = compileKernels(nodes, options_);
        take(b, 0, nodes.size());
      } catch (const Error&) {
        separately();
      }
    }
    stats_.kernelsCompiled += int64_t(pending_.size());
    stats_.compileMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    pending_.clear();
  }

  // Steps whose kernel failed to compile run on the interpreter instead.
  void demoteFailed(Program& p) {
    for (Step& s : p.steps) {
      if (s.kind == Step::Sub) demoteFailed(*s.sub);
      if ((s.kind != Step::Jit && s.kind != Step::Native) || !s.kernel || s.kernel->fn) continue;
      s.kind = Step::Interp;
      if (s.native) {
        stats_.nativeCalls--;
        stats_.nativeOps[s.native->describe()]--;
        s.native.reset();
      }
      s.interpKernel = interp::KernelRegistry::instance().find(s.node->op());
      stats_.kernelCalls--;
      stats_.fallbackNodes++;
      stats_.fallbackOps[s.node->op() + " (codegen failed)"]++;
      lastError_ = s.kernel->error;
    }
  }

  // True when every output of `p` is a buffer `p` allocated itself, never a
  // view of one of its inputs (the interpreter's Reshape & co. return views).
  static bool freshOutputs(const Program& p) {
    for (int o : p.outputSlots) {
      const Step* producer = nullptr;
      for (const Step& s : p.steps)
        if (std::find(s.out.begin(), s.out.end(), o) != s.out.end()) producer = &s;
      if (!producer || !(producer->kind == Step::Jit || producer->kind == Step::Native ||
                         (producer->kind == Step::Sub && freshOutputs(*producer->sub))))
        return false;
    }
    return true;
  }

  // Gives the outputs plan-memory placed (graph metadata memory.*) their arena
  // slots: only single-output compiled/native steps, and only values whose
  // every consumer cannot hand a view of them past the slot's lifetime
  // (compiled/native steps, or regions whose outputs are fresh buffers).
  void placeInArena(Program& p, const Graph& g) {
    const auto& md = g.metadata();
    auto values = md.find("memory.values"), offsets = md.find("memory.offsets"), bytes = md.find("memory.arena_bytes");
    if (values == md.end() || offsets == md.end() || bytes == md.end()) return;
    const auto& names = std::get<std::vector<std::string>>(values->second);
    const auto& offs = std::get<std::vector<int64_t>>(offsets->second);
    std::unordered_map<std::string, int64_t> offsetOf;
    for (size_t i = 0; i < names.size() && i < offs.size(); ++i) offsetOf[names[i]] = offs[i];
    std::vector<bool> eligible(size_t(p.numSlots), true);
    for (int o : p.outputSlots) eligible[size_t(o)] = false;
    for (const Step& s : p.steps)
      if (s.kind == Step::Interp || (s.kind == Step::Sub && !freshOutputs(*s.sub)))
        for (int in : s.in)
          if (in >= 0) eligible[size_t(in)] = false;
    int64_t arenaBytes = std::get<int64_t>(bytes->second);
    for (Step& s : p.steps) {
      if ((s.kind != Step::Jit && s.kind != Step::Native) || s.out.size() != 1 || !eligible[size_t(s.out[0])]) continue;
      auto it = offsetOf.find(s.node->output(0)->name());
      const Value* v = s.node->output(0);
      if (it == offsetOf.end() || v->dtype() != DType::F32 || !v->shape().isStatic()) continue;
      int64_t size = *v->shape().numel() * int64_t(sizeof(float));
      if (it->second < 0 || it->second + size > arenaBytes) continue;
      s.arenaOffset = it->second;
      stats_.arenaValues++;
    }
    if (stats_.arenaValues == 0) return;
    p.arena = std::shared_ptr<void>(std::aligned_alloc(64, size_t((arenaBytes + 63) / 64 * 64)), std::free);
    FRICTION_CHECK(p.arena != nullptr, "cpu: out of memory allocating the " + std::to_string(arenaBytes) + "-byte arena");
    stats_.arenaBytes = arenaBytes;
  }

  // The whole model: steps, its kernels (compiled or loaded), failed kernels
  // demoted to the interpreter, intermediates placed in the arena.
  std::unique_ptr<Program> buildProgram(const Graph& g) {
    auto program = build(g);
    compilePending();
    demoteFailed(*program);
    placeInArena(*program, g);
    return program;
  }

  size_t distinct() const { return used_.size(); }
  void compileEach(bool on) { compileEach_ = on; }
  // Per distinct kernel: what it computes, its calls, its compile phases (-1: compiled in a batch).
  std::vector<KernelCompileStat> kernelStats() const {
    std::vector<KernelCompileStat> out;
    for (const auto& [key, use] : used_) {
      const KernelEntry& e = *use.first;
      out.push_back({e.label, use.second, e.buildMs, e.lowerMs, e.jitMs, e.fn != nullptr});
    }
    return out;
  }
  const std::string& lastError() const { return lastError_; }

 private:
  KernelCache& cache_;
  CpuStats& stats_;
  CodegenOptions options_;
  KernelSource* source_ = nullptr;
  std::vector<std::pair<const Node*, std::shared_ptr<KernelEntry>>> pending_;
  std::map<std::string, std::pair<std::shared_ptr<KernelEntry>, int64_t>> used_;  // key -> kernel, calls
  bool compileEach_ = false;
  std::string lastError_;
};

// " [op xN, ...]" of a count map, or "".
std::string opList(const std::map<std::string, int64_t>& counts) {
  std::string d;
  for (const auto& [op, c] : counts)
    if (c > 0) d += (d.empty() ? " [" : ", ") + op + " x" + std::to_string(c);
  return d.empty() ? d : d + "]";
}

void enableProfiling(Program& p) {
  p.profiling = true;
  for (Step& s : p.steps)
    if (s.sub) enableProfiling(*s.sub);
}

// The model's constants are declared immutable to the microkernels for the
// model's lifetime, so GEMMs pack constant weights once (Sgemm.h).
void forEachConstant(const Program& p, const std::function<void(const Tensor&)>& fn) {
  for (const auto& [slot, t] : p.constants) fn(t);
  for (const Step& s : p.steps)
    if (s.sub) forEachConstant(*s.sub, fn);
}

class CpuModel : public CompiledModel {
 public:
  CpuModel(std::unique_ptr<Program> p, CpuStats stats, std::string description)
      : program_(std::move(p)), stats_(std::move(stats)), description_(std::move(description)) {
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
    runs_++;
    return program_->run(inputs);
  }
  std::string description() const override { return description_; }
  // The run profile (cpu?profile=on), then each kernel's compile phases (cpu?compile=each).
  std::string profile() const override {
    std::string out;
    if (program_->profiling) {
      std::vector<StepTime> steps;
      collectProfile(*program_, steps);
      out = profileReport(steps, runs_);
    }
    std::vector<KernelCompileStat> timed;
    for (const auto& k : stats_.kernels)
      if (k.buildMs >= 0) timed.push_back(k);
    if (timed.empty()) return out;
    std::sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) {
      return a.buildMs + a.lowerMs + a.jitMs > b.buildMs + b.lowerMs + b.jitMs;
    });
    char line[400];
    std::snprintf(line, sizeof line, "  compile per kernel (one module each): %zu kernels\n    %8s %8s %8s %8s %6s  %s\n",
                  timed.size(), "total ms", "build", "lower", "jit", "calls", "kernel");
    out += line;
    for (const auto& k : timed) {
      std::snprintf(line, sizeof line, "    %8.1f %8.2f %8.1f %8.1f %6ld  %s\n", k.buildMs + k.lowerMs + k.jitMs,
                    k.buildMs, k.lowerMs, k.jitMs, long(k.calls), k.kernel.c_str());
      out += line;
    }
    return out;
  }
  const CpuStats& stats() const { return stats_; }

 private:
  std::unique_ptr<Program> program_;
  CpuStats stats_;
  std::string description_;
  long runs_ = 0;
};

class CpuBackend : public Backend {
 public:
  CpuBackend(CodegenOptions options, CpuBackendOptions cpu) : options_(options), cpu_(cpu) {}
  std::string name() const override { return "cpu"; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph) override {
    CpuStats stats;
    ProgramBuilder builder(cache_, stats, options_);
    builder.compileEach(cpu_.compileEach);
    auto program = builder.buildProgram(graph);
    stats.kernels = builder.kernelStats();
    if (cpu_.profile) enableProfiling(*program);
    std::string d = "cpu: " + std::to_string(stats.kernelCalls) + " kernels compiled (" +
                    std::to_string(builder.distinct()) + " distinct), " + std::to_string(stats.nativeCalls) +
                    " native microkernel calls" + opList(stats.nativeOps) + ", " + std::to_string(stats.fallbackNodes) +
                    " nodes on interp fallback, " +
                    (stats.arenaValues ? "arena " + std::to_string(stats.arenaBytes / 1024) + " KiB for " +
                                             std::to_string(stats.arenaValues) + " values (plan-memory)"
                                       : std::string("no arena"));
    d += opList(stats.fallbackOps);
    char buf[160];
    std::snprintf(buf, sizeof buf, "; MLIR 19 linalg, %s, LLVM O2; compile %.0f ms (build %.0f, lower %.0f, jit %.0f)",
                  options_.ukernels ? (std::string("sgemm ukernel ") + ukernels::sgemmIsa()).c_str() : "matmul loops",
                  stats.compileMs, stats.buildMs, stats.lowerMs, stats.jitMs);
    d += buf;
    if (!builder.lastError().empty()) d += "; last codegen error: " + builder.lastError().substr(0, 300);
    return std::make_unique<CpuModel>(std::move(program), std::move(stats), std::move(d));
  }

 private:
  CodegenOptions options_;
  CpuBackendOptions cpu_;
  KernelCache cache_;
};

}  // namespace

std::unique_ptr<Backend> createCpuBackend(const CodegenOptions& options, const CpuBackendOptions& cpu) {
  return std::make_unique<CpuBackend>(options, cpu);
}

const CpuStats* cpuStats(const CompiledModel& model) {
  auto* m = dynamic_cast<const CpuModel*>(&model);
  return m ? &m->stats() : nullptr;
}

namespace {
// Records what compilePending asks for: the kernels a graph needs.
class RecordingSource : public KernelSource {
 public:
  std::vector<std::pair<std::string, const Node*>> kernels_;
  CompiledBatch kernels(const std::vector<const Node*>& nodes, const std::vector<std::string>& keys) override {
    for (size_t i = 0; i < nodes.size(); ++i) kernels_.emplace_back(keys[i], nodes[i]);
    CompiledBatch b;
    b.entries.assign(nodes.size(), nullptr);
    return b;
  }
};
}  // namespace

std::vector<std::pair<std::string, const Node*>> cpuKernelsOf(const Graph& graph, const CodegenOptions& options) {
  KernelCache cache;
  CpuStats stats;
  RecordingSource recorder;
  ProgramBuilder builder(cache, stats, options, &recorder);
  auto program = builder.build(graph);
  builder.compilePending();
  return std::move(recorder.kernels_);
}

std::unique_ptr<CompiledModel> compileCpuWithKernels(const Graph& graph, const CodegenOptions& options,
                                                     KernelSource& source, const std::string& what) {
  auto t0 = std::chrono::steady_clock::now();
  KernelCache cache;
  CpuStats stats;
  ProgramBuilder builder(cache, stats, options, &source);
  auto program = builder.buildProgram(graph);
  stats.kernels = builder.kernelStats();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string d = "cpu (" + what + "): " + std::to_string(stats.kernelCalls) + " kernel calls (" +
                  std::to_string(stats.kernelsLoaded) + " distinct kernels loaded, " +
                  std::to_string(stats.kernelsCompiled) + " compiled), " + std::to_string(stats.nativeCalls) +
                  " native microkernel calls" + opList(stats.nativeOps) + ", " + std::to_string(stats.fallbackNodes) +
                  " nodes on interp fallback" + opList(stats.fallbackOps);
  char buf[96];
  std::snprintf(buf, sizeof buf, "; program built in %.0f ms (kernel lookup %.1f ms, no MLIR/LLVM)", ms, stats.compileMs);
  d += buf;
  if (!builder.lastError().empty()) d += "; last kernel error: " + builder.lastError().substr(0, 300);
  return std::make_unique<CpuModel>(std::move(program), std::move(stats), std::move(d));
}

void registerCpuBackend() {
  registerBackend("cpu", [](const std::map<std::string, std::string>& options) -> std::unique_ptr<Backend> {
    CodegenOptions codegen;
    if (options.count("aot")) {  // cpu?aot=FILE: an ahead-of-time artifact (Aot.h), compiled with its own options
      FRICTION_CHECK(options.size() == 1, "backend cpu: aot=FILE takes no other option (the artifact fixed them)");
      return createAotBackend(options.at("aot"));
    }
    CpuBackendOptions cpu;
    for (const auto& [k, v] : options) {
      if (k == "compile") {
        FRICTION_CHECK(v == "batch" || v == "each", "backend cpu: compile must be batch or each, got '" + v + "'");
        cpu.compileEach = v == "each";
        continue;
      }
      FRICTION_CHECK(k == "ukernels" || k == "profile", "backend cpu: unknown option '" + k +
                                                            "' (options: ukernels=on|off, profile=on|off, "
                                                            "compile=batch|each, aot=FILE)");
      FRICTION_CHECK(v == "on" || v == "off", "backend cpu: " + k + " must be on or off, got '" + v + "'");
      (k == "ukernels" ? codegen.ukernels : cpu.profile) = v == "on";
    }
    return createCpuBackend(codegen, cpu);
  });
}

}  // namespace friction::codegen
