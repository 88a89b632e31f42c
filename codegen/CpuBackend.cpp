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

#include <chrono>
#include <functional>
#include <cstring>
#include <set>
#include <unordered_map>

#include "codegen/Kernels.h"
#include "codegen/NativeKernels.h"
#include "ir/Error.h"
#include "runtime/interp/KernelRegistry.h"
#include "runtime/ukernels/Sgemm.h"

namespace friction::codegen {
namespace {

struct KernelEntry {
  std::shared_ptr<void> owner;  // the JIT holding the code
  PackedFn fn = nullptr;
  std::string error;  // why compiling it failed (then the node falls back)
};
using KernelCache = std::unordered_map<std::string, std::shared_ptr<KernelEntry>>;

struct Program;

struct Step {
  enum Kind { Jit, Interp, Sub, Native } kind = Interp;
  const Node* node = nullptr;
  std::shared_ptr<KernelEntry> kernel;      // Jit; Native with an epilogue
  std::unique_ptr<NativeKernel> native;     // Native: the node itself, or the region's anchor
  std::vector<int> nativeIn;                // slots of the native op's inputs
  const interp::Kernel* interpKernel = nullptr;
  std::unique_ptr<Program> sub;
  std::vector<int> in, out;  // slots; -1 for absent inputs
  std::vector<int> release;  // slots whose last use is this step
};

struct Program {
  int numSlots = 0;
  std::vector<int> inputSlots, outputSlots;
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<Step> steps;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
};

// Calls a compiled kernel: memref descriptors over friction tensors. With
// `outputsReady`, `outs` already hold the buffers the kernel updates in place.
void callKernel(const Step& s, const std::vector<Tensor>& env, std::vector<Tensor>& outs, bool outputsReady) {
  const Node& n = *s.node;
  std::vector<const Tensor*> args;
  std::vector<const Value*> decl;
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
  std::vector<int64_t> buf(words);
  std::vector<void*> descs(args.size()), packed(args.size());
  size_t at = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = *args[i];
    int64_t* d = buf.data() + at;
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
    descs[i] = d;
    packed[i] = &descs[i];
    at += 3 + 2 * r;
  }
  s.kernel->fn(packed.data());
}

std::vector<Tensor> Program::run(const std::vector<Tensor>& inputs) const {
  FRICTION_CHECK(inputs.size() == inputSlots.size(), "model takes " + std::to_string(inputSlots.size()) +
                                                         " inputs, got " + std::to_string(inputs.size()));
  std::vector<Tensor> env(static_cast<size_t>(numSlots));
  for (const auto& [slot, t] : constants) env[size_t(slot)] = t;
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(inputSlots[i])] = inputs[i];
  std::vector<Tensor> args, outs;
  for (const Step& s : steps) {
    args.clear();
    if (s.kind == Step::Jit) {
      callKernel(s, env, outs, false);
    } else if (s.kind == Step::Native) {
      for (int slot : s.nativeIn) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
      outs.assign(1, Tensor::uninitialized(DType::F32, s.node->output(0)->shape().staticDims()));
      s.native->run(args, outs[0]);
      if (s.kernel) callKernel(s, env, outs, true);
    } else {
      for (int slot : s.in) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
      outs = s.kind == Step::Sub ? s.sub->run(args) : (*s.interpKernel)(*s.node, args);
    }
    for (size_t o = 0; o < s.out.size() && o < outs.size(); ++o) env[size_t(s.out[o])] = std::move(outs[o]);
    for (int slot : s.release) env[size_t(slot)] = Tensor();
  }
  std::vector<Tensor> results;
  for (int slot : outputSlots) {
    FRICTION_CHECK(env[size_t(slot)].defined(), "cpu: an output was not computed");
    results.push_back(env[size_t(slot)]);
  }
  return results;
}

// Builds programs, collecting kernels that are not in the cache yet.
class ProgramBuilder {
 public:
  ProgramBuilder(KernelCache& cache, CpuStats& stats, CodegenOptions options)
      : cache_(cache), stats_(stats), options_(options) {}

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
    std::unordered_map<const Value*, int> slot;
    auto slotOf = [&](const Value* v) {
      auto [it, fresh] = slot.emplace(v, p->numSlots);
      if (fresh) p->numSlots++;
      return it->second;
    };
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
      } else if (auto view = analyzeKernel(n)) {
        s.kind = Step::Jit;
        if (view->kind == KernelKind::NativeEpilogue) {
          const Node& anchor = *view->nodes.front();
          std::vector<const Value*> outer = regionOperands(n, anchor);
          s.kind = Step::Native;
          s.native = matchNative(anchor, resolveAll(outer));
          s.native->prepare();
          for (const Value* v : outer) s.nativeIn.push_back(v ? slotOf(v) : -1);
          stats_.nativeCalls++;
        }
        std::string key = structuralKey(n);
        auto [it, fresh] = cache_.emplace(key, nullptr);
        if (fresh) {
          it->second = std::make_shared<KernelEntry>();
          pending_.push_back({&n, it->second});
        }
        s.kernel = it->second;
        stats_.kernelCalls++;
        if (!fresh) stats_.kernelsReused++;
        distinct_.emplace(key);
      } else if (n.op() == "Fused") {
        s.kind = Step::Sub;
        const Graph& body = *std::get<std::shared_ptr<Graph>>(*n.findAttr("body"));
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
    // Release each intermediate after its last use.
    std::vector<int> last(size_t(p->numSlots), -1);
    for (size_t i = 0; i < p->steps.size(); ++i)
      for (int in : p->steps[i].in)
        if (in >= 0) last[size_t(in)] = int(i);
    for (int o : p->outputSlots) last[size_t(o)] = -1;
    for (const auto& [c, t] : p->constants) last[size_t(c)] = -1;
    for (int in : p->inputSlots) last[size_t(in)] = -1;  // the caller's tensors
    for (size_t sl = 0; sl < last.size(); ++sl)
      if (last[sl] >= 0) p->steps[size_t(last[sl])].release.push_back(int(sl));
    return p;
  }

  // Compiles the pending kernels: all in one module, or one by one when the
  // batch fails (a kernel that still fails falls back to the interpreter).
  void compilePending() {
    if (pending_.empty()) return;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<const Node*> nodes;
    for (auto& p : pending_) nodes.push_back(p.first);
    auto take = [&](CompiledBatch& b, size_t first, size_t count) {
      for (size_t i = 0; i < count; ++i) {
        pending_[first + i].second->owner = b.owner;
        pending_[first + i].second->fn = b.entries[i];
      }
      stats_.buildMs += b.buildMs, stats_.lowerMs += b.lowerMs, stats_.jitMs += b.jitMs;
    };
    try {
      CompiledBatch b = compileKernels(nodes, options_);
      take(b, 0, nodes.size());
    } catch (const Error&) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        try {
          CompiledBatch b = compileKernels({nodes[i]}, options_);
          take(b, i, 1);
        } catch (const Error& e) {
          pending_[i].second->error = e.what();
        }
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
      s.native.reset();
      s.interpKernel = interp::KernelRegistry::instance().find(s.node->op());
      stats_.kernelCalls--;
      stats_.fallbackNodes++;
      stats_.fallbackOps[s.node->op() + " (codegen failed)"]++;
      lastError_ = s.kernel->error;
    }
  }

  size_t distinct() const { return distinct_.size(); }
  const std::string& lastError() const { return lastError_; }

 private:
  KernelCache& cache_;
  CpuStats& stats_;
  CodegenOptions options_;
  std::vector<std::pair<const Node*, std::shared_ptr<KernelEntry>>> pending_;
  std::set<std::string> distinct_;
  std::string lastError_;
};

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
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return program_->run(inputs); }
  std::string description() const override { return description_; }
  const CpuStats& stats() const { return stats_; }

 private:
  std::unique_ptr<Program> program_;
  CpuStats stats_;
  std::string description_;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CodegenOptions options) : options_(options) {}
  std::string name() const override { return "cpu"; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph) override {
    CpuStats stats;
    ProgramBuilder builder(cache_, stats, options_);
    auto program = builder.build(graph);
    builder.compilePending();
    builder.demoteFailed(*program);
    std::string d = "cpu: " + std::to_string(stats.kernelCalls) + " kernels compiled (" +
                    std::to_string(builder.distinct()) + " distinct), " + std::to_string(stats.nativeCalls) +
                    " native microkernel calls (conv, pool, softmax, layernorm), " + std::to_string(stats.fallbackNodes) +
                    " nodes on interp fallback";
    if (!stats.fallbackOps.empty()) {
      d += " [";
      bool first = true;
      for (const auto& [op, c] : stats.fallbackOps) {
        d += (first ? "" : ", ") + op + " x" + std::to_string(c);
        first = false;
      }
      d += "]";
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "; MLIR 19 linalg, %s, LLVM O3; compile %.0f ms (build %.0f, lower %.0f, jit %.0f)",
                  options_.ukernels ? (std::string("sgemm ukernel ") + ukernels::sgemmIsa()).c_str() : "matmul loops",
                  stats.compileMs, stats.buildMs, stats.lowerMs, stats.jitMs);
    d += buf;
    if (!builder.lastError().empty()) d += "; last codegen error: " + builder.lastError().substr(0, 300);
    return std::make_unique<CpuModel>(std::move(program), std::move(stats), std::move(d));
  }

 private:
  CodegenOptions options_;
  KernelCache cache_;
};

}  // namespace

std::unique_ptr<Backend> createCpuBackend(const CodegenOptions& options) { return std::make_unique<CpuBackend>(options); }

const CpuStats* cpuStats(const CompiledModel& model) {
  auto* m = dynamic_cast<const CpuModel*>(&model);
  return m ? &m->stats() : nullptr;
}

void registerCpuBackend() {
  registerBackend("cpu", [](const std::map<std::string, std::string>& options) -> std::unique_ptr<Backend> {
    CodegenOptions codegen;
    for (const auto& [k, v] : options) {
      FRICTION_CHECK(k == "ukernels", "backend cpu: unknown option '" + k + "' (options: ukernels=on|off)");
      FRICTION_CHECK(v == "on" || v == "off", "backend cpu: ukernels must be on or off, got '" + v + "'");
      codegen.ukernels = v == "on";
    }
    return createCpuBackend(codegen);
  });
}

}  // namespace friction::codegen
