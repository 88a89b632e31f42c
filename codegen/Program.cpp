#include "codegen/Program.h"

#include <omp.h>

#include <chrono>
#include <unordered_map>
#include <variant>

#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "runtime/ukernels/Parallel.h"

namespace friction::codegen {
namespace {

// Elements below which a split kernel runs on one thread.
constexpr int64_t kParallelElements = int64_t(1) << 15;

// `t`'s dims are `shape`'s, all static (compared in place: this runs for every argument of every call).
bool hasShape(const Tensor& t, const Shape& shape) {
  const std::vector<int64_t>& dims = t.shape();
  if (!shape.hasRank() || dims.size() != shape.rank()) return false;
  for (size_t d = 0; d < dims.size(); ++d)
    if (shape.dims()[d].value != dims[d]) return false;
  return true;
}

// Calls a compiled kernel over friction tensors. With `outputsReady`, `outs`
// already hold the buffers the kernel updates in place; else they come from `buffers`.
void callKernel(const Step& s, const std::vector<Tensor>& env, std::vector<Tensor>& outs, bool outputsReady,
                BufferPool& buffers) {
  const Node& n = *s.node;
  // Kept between calls (a kernel does not call back). Through a reference: the slabs below run on other
  // threads, where the name `callArgs` would be their own, empty vector.
  thread_local std::vector<const Tensor*> callArgs;
  std::vector<const Tensor*>& args = callArgs;
  args.clear();
  for (int input : s.argInputs) {
    const size_t i = size_t(input);
    const Tensor& t = env[size_t(s.in[i])];
    const Value* v = n.input(i);
    FRICTION_CHECK(t.defined() && t.dtype() == v->dtype() && hasShape(t, v->shape()),
                   "cpu: " + n.describe() + ": input " + std::to_string(i) + " is " + t.type().str() +
                       ", the kernel was compiled for " + v->type().str());
    args.push_back(&t);
  }
  if (!outputsReady) {
    outs.clear();
    for (size_t i = 0; i < n.numOutputs(); ++i)
      outs.push_back(buffers.acquire(n.output(i)->dtype(), n.output(i)->shape().staticDims()));
  }
  for (Tensor& t : outs) args.push_back(&t);
  std::vector<Tensor> scratch;  // returned to the pool when the call is done
  for (const auto& shape : s.scratch) scratch.push_back(buffers.acquire(DType::F32, shape));
  for (Tensor& t : scratch) args.push_back(&t);
  PackedArgs packed(args);
  const int64_t rows = s.splitDim >= 0 ? outs[0].shape()[size_t(s.splitDim)] : 1;
  if (s.splitDim < 0 || rows < 2 || outs[0].numel() < kParallelElements || omp_get_max_threads() < 2) {
    packed.call(s.kernel->code.fn);
    return;
  }
  // Generated loops are sequential: slabs of the split dim on the OpenMP threads.
  const int64_t chunks = std::min<int64_t>(rows, 4 * omp_get_max_threads());
  ukernels::affineFor(chunks, [&](int64_t c) {
    PackedArgs slab = packed;
    for (size_t i = 0; i < args.size(); ++i)
      if (s.argSplitDims[i] >= 0) slab.slice(i, size_t(s.argSplitDims[i]), rows * c / chunks, rows * (c + 1) / chunks);
    slab.call(s.kernel->code.fn);
  });
}

// What a step is, for the profile: how it runs and what it computes.
std::string stepLabel(const Step& s) {
  auto region = FusedRegion::of(*s.node);
  std::string what = region ? region->label() : s.node->op();
  switch (s.kind) {
    case Step::Native: return s.native->describe() + (s.kernel ? " + compiled epilogue" : "");
    case Step::Compiled: return "compiled " + what;
    case Step::Interp: return "interp " + what;
    case Step::View: return "view " + what;
    case Step::Sub: return what;
  }
  return what;
}

}  // namespace

void Program::runStep(const Step& s, std::vector<Tensor>& env, std::vector<Tensor>& args,
                      std::vector<Tensor>& outs) const {
  args.clear();
  auto output = [&](size_t i) {
    const Value* y = s.node->output(i);  // f32 but for typed ops' (native, or Typed kernels on halide)
    std::vector<int64_t> shape = y->shape().staticDims();
    if (i > 0 || s.arenaOffset < 0) return buffers->acquire(y->dtype(), shape);  // plan-memory places output 0
    return Tensor::view(y->dtype(), shape, std::shared_ptr<void>(arena, static_cast<char*>(arena.get()) + s.arenaOffset));
  };
  if (s.kind == Step::Compiled) {
    if (s.arenaOffset >= 0) outs.assign(1, output(0));
    callKernel(s, env, outs, s.arenaOffset >= 0, *buffers);
  } else if (s.kind == Step::Native) {
    for (int slot : s.nativeIn) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
    outs.clear();
    for (size_t i = 0; i < s.out.size(); ++i) outs.push_back(output(i));
    s.native->runAll(args, outs);
    if (s.kernel) callKernel(s, env, outs, true, *buffers);
  } else if (s.kind == Step::View) {
    const Tensor& x = env[size_t(s.in[0])];
    outs.assign(1, s.viewWindow ? x.window(s.viewOffset, s.viewShape) : x.reshaped(s.viewShape));
  } else {
    for (int slot : s.in) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
    outs = s.kind == Step::Sub ? s.sub->run(args) : (*s.interpKernel)(*s.node, args);
  }
  finishStep(s, outs, env);
}

std::vector<Tensor> Program::run(const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> env = takeSlots(inputs), args, outs;
  if (!profiling) {
    for (const Step& s : steps) runStep(s, env, args, outs);
    return finishRun(env, "cpu");
  }
  stepMs.resize(steps.size());
  stepCalls.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    runStep(steps[i], env, args, outs);
    stepMs[i] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    stepCalls[i]++;
  }
  return finishRun(env, "cpu");
}

void enableProfiling(Program& p) {
  p.profiling = true;
  for (Step& s : p.steps)
    if (s.sub) enableProfiling(*s.sub);
}

void resetProfile(Program& p) {
  p.stepMs.assign(p.stepMs.size(), 0.0);
  p.stepCalls.assign(p.stepCalls.size(), 0);
  for (Step& s : p.steps)
    if (s.sub) resetProfile(*s.sub);
}

namespace {

// A dedup-patterns instance's body node names (its first instance's, in body order) mapped to this instance's
// own (its provenance, in the same order), so that every instance's steps are profiled under their own layers'
// names; empty for any other region, or where the two lists do not line up.
std::unordered_map<std::string, std::string> instanceNames(const Node& region) {
  std::unordered_map<std::string, std::string> names;
  auto r = FusedRegion::of(region);
  auto it = region.attrs().find("provenance");
  if (!r || r->kind() != RegionKind::Pattern || it == region.attrs().end()) return names;
  const auto* own = std::get_if<std::vector<std::string>>(&it->second);
  const auto& body = r->body().nodes();
  if (!own || own->size() != body.size()) return names;
  for (size_t k = 0; k < body.size(); ++k) names[body[k]->name()] = (*own)[k];
  return names;
}

void collectProfileNamed(const Program& p, std::vector<StepTime>& out,
                         const std::unordered_map<std::string, std::string>& renamed) {
  for (size_t i = 0; i < p.steps.size() && i < p.stepMs.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.kind == Step::Sub) {
      collectProfileNamed(*s.sub, out, instanceNames(*s.node));
      continue;
    }
    auto it = renamed.find(s.node->name());
    const std::string& name = it == renamed.end() ? s.node->name() : it->second;
    out.push_back({stepLabel(s), name + " -> " + s.node->output(0)->type().str(), p.stepMs[i], p.stepCalls[i]});
  }
}

}  // namespace

void collectProfile(const Program& p, std::vector<StepTime>& out) { collectProfileNamed(p, out, {}); }

void forEachConstant(const Program& p, const std::function<void(const Tensor&)>& fn) {
  for (const auto& [slot, t] : p.constants) fn(t);
  for (const Step& s : p.steps)
    if (s.sub) forEachConstant(*s.sub, fn);
}

}  // namespace friction::codegen
