#include "codegen/ProgramBuilder.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "codegen/KernelAnalysis.h"
#include "codegen/Legalize.h"
#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"
#include "runtime/MemoryLimit.h"
#include "runtime/ukernels/Buffers.h"

namespace friction::codegen {
namespace {

// A Dropout that passes its input through: no mask asked for, training_mode absent or a constant false.
bool isInferenceDropout(const Node& n) {
  if (n.op() != "Dropout" || n.numOutputs() != 1) return false;
  if (n.numInputs() < 3 || !n.input(2)) return true;
  const Tensor* training = constantData(n.input(2));
  return training && training->numel() == 1 && training->elementAsInt(0) == 0;
}

// A View-trait op (Reshape, Flatten, Squeeze, Unsqueeze, Identity), a Cast or
// CastLike to the type it already has, or a Dropout at inference, whose result type is known: at run time, its
// input's buffer under a new shape.
bool isZeroCopyView(const Node& n) {
  const Value* x = n.numInputs() > 0 ? n.input(0) : nullptr;
  const Value* y = n.numOutputs() == 1 ? n.output(0) : nullptr;
  return (hasTrait(n, OpTrait::View) || n.op() == "Cast" || n.op() == "CastLike" || isInferenceDropout(n)) && x && y &&
         y->shape().isStatic() &&
         x->dtype() == y->dtype() &&
         (!x->shape().isStatic() || x->shape().numel() == y->shape().numel());
}

bool hasShapeArithmetic(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) { return isShapeArithmetic(*n); });
}

// A region operand that is a constant shape value (folded outside) is one inside the body too.
bool isConstantShapeValue(const Value* v) {
  return v->isConstant() && (isInteger(v->dtype()) || v->dtype() == DType::Bool);
}

// A region operand its body's program reads as a constant: a shape value, or a half-precision weight, which
// legalize() then widens to f32 once instead of on each run.
bool bodyReadsAsConstant(const Value* v) {
  return isConstantShapeValue(v) || (v->isConstant() && isHalf(v->dtype()));
}

bool allStatic(const std::vector<Value*>& values) {
  return std::all_of(values.begin(), values.end(), [](const Value* v) { return !v || v->shape().isStatic(); });
}

// Regions the passes made before shape arithmetic was folded (fold-constants
// off) keep unknown dims at their boundary even when their operands are
// static now: each such region gets a body copy of its own, folded against
// its operands, and what follows is re-inferred. Returns how many nodes got
// static results.
int64_t resolveRegionTypes(Graph& g) {
  int64_t resolved = 0;
  std::unordered_map<const Value*, Value*> constants;  // a region's shape-value results that folded
  for (const auto& node : g.nodes()) {
    Node& n = *node;
    auto region = FusedRegion::of(n);
    const bool shapeValues = region && isShapeArithmetic(n);  // computed inside a region the passes made
    if ((allStatic(n.outputs()) && !shapeValues) || !allStatic(n.inputs())) continue;
    if (!region) {
      reinferNode(n);
      resolved += allStatic(n.outputs());
      continue;
    }
    std::shared_ptr<Graph> body = cloneGraph(region->body());
    for (size_t i = 0; i < n.numInputs(); ++i) {
      body->inputs()[i]->setType(n.input(i)->type());
      if (isConstantShapeValue(n.input(i))) body->inputs()[i]->setConstant(n.input(i)->constant());
    }
    inferGraph(*body);
    foldShapeArithmetic(*body);
    bool folded = true;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      const Value* out = body->outputs()[i];
      n.output(i)->setType(out->type());
      if (isConstantShapeValue(out)) constants[n.output(i)] = g.addInitializer(g.freshName(out->name()), out->constant());
      else folded = false;
    }
    n.setAttr("body", body);
    resolved += folded || allStatic(n.outputs());
  }
  if (constants.empty()) return resolved;
  replaceAllUses(g, constants);
  g.eraseNodes([&](const Node& n) {
    return n.numOutputs() > 0 && std::all_of(n.outputs().begin(), n.outputs().end(), [&](const Value* v) {
             return constants.count(v) > 0;
           });
  });
  return resolved;
}

}  // namespace

std::unique_ptr<Program> ProgramBuilder::build(const Graph& g) { return buildResolved(g, {}); }

std::unique_ptr<Program> ProgramBuilder::buildResolved(const Graph& g, const OuterMap& outerOf) {
  const bool unresolved =
      std::any_of(g.nodes().begin(), g.nodes().end(), [](const auto& n) { return !allStatic(n->outputs()); });
  if (!hasShapeArithmetic(g) && !needsLegalizing(g, options_) && !unresolved) return build(g, outerOf);
  std::shared_ptr<Graph> resolved = cloneGraph(g);
  OuterMap outer;  // outerOf over the copy's inputs
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    auto it = outerOf.find(g.inputs()[i]);
    if (it == outerOf.end()) continue;
    outer[resolved->inputs()[i]] = it->second;
    if (bodyReadsAsConstant(it->second)) resolved->inputs()[i]->setConstant(it->second->constant());
  }
  int64_t folded = foldShapeArithmetic(*resolved);
  while (resolveRegionTypes(*resolved) > 0) {
    const int64_t more = foldShapeArithmetic(*resolved);
    folded += more;
    if (more == 0) break;
  }
  const int64_t legalized = legalize(*resolved, options_);  // after folding, which makes split sizes and shapes static
  if (folded + legalized == 0 && !unresolved) return build(g, outerOf);
  stats_.shapeNodesFolded += folded;
  stats_.legalized += legalized;
  auto p = build(*resolved, outer);
  p->resolved = std::move(resolved);
  return p;
}

std::unique_ptr<Program> ProgramBuilder::build(const Graph& g, const OuterMap& outerOf) {
  auto p = std::make_unique<Program>();
  auto resolve = [&](const Value* v) {
    auto it = outerOf.find(v);
    return it == outerOf.end() ? v : it->second;
  };
  auto slotOf = [&](const Value* v) { return p->slotOf(v); };
  for (const Value* v : g.inputs()) p->inputSlots.push_back(slotOf(v));
  for (const Value* v : g.initializers()) p->constants.emplace_back(slotOf(v), v->constant());
  const auto& registry = interp::KernelRegistry::instance();
  for (const auto& node : g.nodes()) {
    const Node& n = *node;
    if (options_.target != Target::Cuda) checkOutputsFitMemory(n);  // the cuda plan's memory is the device's
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
    std::vector<const Value*> outer;
    for (const Value* v : n.inputs()) outer.push_back(resolve(v));
    // The GPU and halide targets generate what they can (Structured kernels included); the cpu prefers its
    // microkernels; the halide target runs none.
    const bool generatedFirst = options_.target != Target::Cpu;
    if (isZeroCopyView(n)) {
      s.kind = Step::View;
      s.viewShape = n.output(0)->shape().staticDims();
      stats_.views++;
    } else if (auto offset = options_.slicesAsViews() ? contiguousSliceOffset(n, outer) : std::nullopt) {
      s.kind = Step::View;
      s.viewWindow = true;
      s.viewOffset = *offset;
      s.viewShape = n.output(0)->shape().staticDims();
      stats_.views++;
    } else if (generatedFirst && compiledStep(s, *p, resolve)) {
      // a generated kernel
    } else if (auto native = options_.nativeSteps() ? matchNative(n, outer, nullptr, options_.ukernels()) : nullptr) {
      s.kind = Step::Native;
      native->prepare();
      s.native = std::move(native);
      s.nativeIn = s.in;
      stats_.nativeCalls++;
      stats_.nativeOps[s.native->describe()]++;
    } else if (!generatedFirst && compiledStep(s, *p, resolve)) {
      // a compiled kernel, or a native anchor with its epilogue
    } else if (auto region = FusedRegion::of(n)) {
      s.kind = Step::Sub;
      const Graph& body = region->body();
      std::unordered_map<const Value*, const Value*> inner;
      for (size_t i = 0; i < body.inputs().size() && i < n.numInputs(); ++i) inner[body.inputs()[i]] = resolve(n.input(i));
      s.sub = buildResolved(body, inner);  // pattern bodies hold shape arithmetic too
      s.sub->buffers = p->buffers;  // what the body's plan leaves out (its outputs) reuses the program's buffers
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

bool ProgramBuilder::compiledStep(Step& s, Program& p, const std::function<const Value*(const Value*)>& resolve) {
  const Node& n = *s.node;
  auto view = analyzeKernel(n, options_);
  if (!view) return false;
  s.kind = Step::Compiled;
  if (view->listsArguments()) {
    s.argInputs = view->argInputs;  // possibly none: every operand a constant the kernel embeds
  } else {  // every present input, in order: decided here, not on every call
    for (size_t i = 0; i < s.in.size(); ++i)
      if (s.in[i] >= 0) s.argInputs.push_back(int(i));
  }
  s.scratch = view->scratch;
  if (view->splitDim >= 0) {
    s.splitDim = view->splitDim;
    s.argSplitDims = view->inputSplitDims;
    s.argSplitDims.resize(view->inputs.size() + view->outputs.size(), view->splitDim);  // outputs span the domain
  }
  if (view->kind == KernelKind::NativeEpilogue) {
    // The anchor's microkernel writes the region's output buffer; the epilogue
    // follows in place, inside the microkernel when it can apply it itself.
    const Node& anchor = *view->nodes.front();
    std::vector<const Value*> outer = FusedRegion::of(n)->outerInputs(anchor);
    std::vector<const Value*> resolved;
    for (const Value* v : outer) resolved.push_back(resolve(v));
    s.kind = Step::Native;
    s.native = matchNativeAnchor(anchor, resolved, options_.ukernels());
    s.native->prepare();
    for (const Value* v : outer) s.nativeIn.push_back(v ? p.slotOf(v) : -1);
    auto fused = matchFusedEpilogue(n, anchor, resolve);
    bool inside = fused && s.native->fuse(*fused);
    if (inside && (fused->bias || fused->residual)) s.nativeIn.resize(4, -1);
    if (inside && fused->bias) s.nativeIn[2] = p.slotOf(fused->bias);
    if (inside && fused->residual) s.nativeIn[3] = p.slotOf(fused->residual);
    stats_.nativeCalls++;
    stats_.nativeOps[s.native->describe()]++;
    if (inside) return true;
  }
  useKernel(s);
  return true;
}

void ProgramBuilder::useKernel(Step& s) {
  const Node& n = *s.node;
  std::string key = structuralKey(n);
  auto [it, fresh] = cache_.emplace(key, nullptr);
  if (fresh) {
    auto region = FusedRegion::of(n);
    it->second = std::make_shared<KernelEntry>();
    it->second->label = (region ? region->label() : n.op()) + " -> " + n.output(0)->type().str();
    pending_.emplace_back(key, &n);
    pendingEntries_.push_back(it->second);
  }
  s.kernel = it->second;
  stats_.kernelCalls++;
  if (!fresh) stats_.kernelsReused++;
  auto& use = used_[key];
  use.first = it->second;
  use.second++;
}

void ProgramBuilder::compilePending(KernelSource& source) {
  if (pending_.empty()) return;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<const Node*> nodes;
  std::vector<std::string> keys;
  for (const auto& [key, node] : pending_) keys.push_back(key), nodes.push_back(node);
  KernelBatch batch = source.kernels(nodes, keys);
  FRICTION_CHECK(batch.kernels.size() == nodes.size(), "cpu: the kernel source gave " +
                                                           std::to_string(batch.kernels.size()) + " kernels for " +
                                                           std::to_string(nodes.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    pendingEntries_[i]->code = std::move(batch.kernels[i]);
    if (!pendingEntries_[i]->code.fn && pendingEntries_[i]->code.error.empty())
      pendingEntries_[i]->code.error = "no kernel from " + source.describe();
  }
  (source.compiles() ? stats_.kernelsCompiled : stats_.kernelsLoaded) += int64_t(nodes.size());
  stats_.phases += batch.times;
  stats_.compileMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  pending_.clear();
  pendingEntries_.clear();
}

void ProgramBuilder::demoteFailed(Program& p) {
  for (Step& s : p.steps) {
    if (s.kind == Step::Sub) demoteFailed(*s.sub);
    if ((s.kind != Step::Compiled && s.kind != Step::Native) || !s.kernel || s.kernel->code.fn) continue;
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
    lastError_ = s.kernel->code.error;
  }
}

namespace {

// True when every output of `p` is a buffer `p` allocated itself, never a
// view of one of its inputs (View steps, and the interpreter's Reshape & co.).
bool freshOutputs(const Program& p) {
  for (int o : p.outputSlots) {
    const Step* producer = nullptr;
    for (const Step& s : p.steps)
      if (std::find(s.out.begin(), s.out.end(), o) != s.out.end()) producer = &s;
    if (!producer || !(producer->kind == Step::Compiled || producer->kind == Step::Native ||
                       (producer->kind == Step::Sub && freshOutputs(*producer->sub))))
      return false;
  }
  return true;
}

}  // namespace

// Gives the outputs plan-memory placed (graph metadata memory.*) their arena
// slots: only single-output compiled/native steps, and only values whose
// every consumer cannot hand a view of them past the slot's lifetime
// (compiled/native steps, or regions whose outputs are fresh buffers; not
// views, whose result lives on in the same bytes).
std::pair<int64_t, int64_t> ProgramBuilder::placeInArena(Program& p, const Graph& g) {
  const auto& md = g.metadata();
  auto values = md.find("memory.values"), offsets = md.find("memory.offsets"), bytes = md.find("memory.arena_bytes");
  if (values == md.end() || offsets == md.end() || bytes == md.end()) return {0, 0};
  const auto& names = std::get<std::vector<std::string>>(values->second);
  const auto& offs = std::get<std::vector<int64_t>>(offsets->second);
  std::unordered_map<std::string, int64_t> offsetOf;
  for (size_t i = 0; i < names.size() && i < offs.size(); ++i) offsetOf[names[i]] = offs[i];
  std::vector<bool> eligible(size_t(p.numSlots), true);
  for (int o : p.outputSlots) eligible[size_t(o)] = false;
  for (const Step& s : p.steps)
    if (s.kind == Step::Interp || s.kind == Step::View || (s.kind == Step::Sub && !freshOutputs(*s.sub)))
      for (int in : s.in)
        if (in >= 0) eligible[size_t(in)] = false;
  const int64_t arenaBytes = std::get<int64_t>(bytes->second);
  int64_t placed = 0;
  for (Step& s : p.steps) {
    if ((s.kind != Step::Compiled && s.kind != Step::Native) || s.out.size() != 1 || !eligible[size_t(s.out[0])])
      continue;
    auto it = offsetOf.find(s.node->output(0)->name());
    const Value* v = s.node->output(0);
    if (it == offsetOf.end() || v->dtype() != DType::F32 || !v->shape().isStatic()) continue;
    int64_t size = *v->shape().numel() * int64_t(sizeof(float));
    if (it->second < 0 || it->second + size > arenaBytes) continue;
    s.arenaOffset = it->second;
    placed++;
  }
  return {placed, placed ? arenaBytes : 0};
}

namespace {

std::shared_ptr<void> allocateArena(int64_t bytes) {
  std::shared_ptr<void> arena(ukernels::allocateBuffer(size_t(bytes)), std::free);
  FRICTION_CHECK(arena != nullptr, "cpu: out of memory allocating the " + std::to_string(bytes) + "-byte arena");
  return arena;
}

}  // namespace

// An instance's intermediates live only while its step runs, and steps run one at a time, so the instances of
// one program share one block. Left in pool buffers, each instance's were memory of its own, cold in the
// caches: MNASNet's dedup'd blocks ran 1.2x slower than the same blocks with dedup-patterns off.
void ProgramBuilder::placePatternArenas(Program& p) {
  int64_t blockBytes = 0;
  std::vector<Program*> placed;
  for (Step& s : p.steps) {
    if (s.kind != Step::Sub) continue;
    placePatternArenas(*s.sub);  // nested instances run inside this one's step: a block of their own
    const auto [values, bytes] = placeInArena(*s.sub, FusedRegion::of(*s.node)->body());
    if (values == 0) continue;
    stats_.patternArenaValues += values;
    blockBytes = std::max(blockBytes, bytes);
    placed.push_back(s.sub.get());
  }
  if (placed.empty()) return;
  std::shared_ptr<void> block = allocateArena(blockBytes);
  for (Program* q : placed) q->arena = block;
  stats_.patternArenaBytes += blockBytes;
}

void ProgramBuilder::finish(Program& p, const Graph& g) {
  demoteFailed(p);
  const auto [values, bytes] = placeInArena(p, g);
  if (values) {
    p.arena = allocateArena(bytes);
    stats_.arenaValues += values;
    stats_.arenaBytes = bytes;
  }
  placePatternArenas(p);
}

std::unique_ptr<Program> ProgramBuilder::buildProgram(const Graph& g, KernelSource& source) {
  auto program = build(g);
  compilePending(source);
  finish(*program, g);
  stats_.kernels = kernelStats();
  return program;
}

std::vector<KernelCompileStat> ProgramBuilder::kernelStats() const {
  std::vector<KernelCompileStat> out;
  for (const auto& [key, use] : used_) {
    const KernelEntry& e = *use.first;
    KernelCompileStat k{e.label, use.second};
    if (e.code.timedAlone) k.buildMs = e.code.own.buildMs, k.lowerMs = e.code.own.lowerMs, k.jitMs = e.code.own.jitMs;
    k.compiled = e.code.fn != nullptr;
    out.push_back(k);
  }
  return out;
}

}  // namespace friction::codegen
