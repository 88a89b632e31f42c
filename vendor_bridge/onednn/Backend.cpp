// The `onednn` backend (see OnednnBackend.h). compile() walks the graph once,
// like the cpu backend (codegen/ProgramBuilder.cpp):
//   - Constant nodes are evaluated at compile time;
//   - a node with an exact oneDNN mapping becomes one primitive (weights of
//     Conv, and of MatMul/Gemm with a constant right operand, are reordered
//     once, here, to the format the primitive picked with format_tag::any);
//   - a Fused "nhwc" region (convert-layout's Transpose -> op -> Transpose)
//     becomes one primitive on channels-last memory;
//   - with postops=on, a Fused "epilogue" region, or an anchor's single-use
//     chain (bias/residual Add, activation, Erf-GELU) in an unfused graph,
//     becomes ONE primitive with eltwise/binary post-ops;
//   - an Erf-GELU subgraph (5 nodes with the exact constants) is one eltwise;
//   - other Fused regions run their body as a nested program;
//   - anything else runs the reference interpreter's kernel (the fallback).
// Activations stay in plain layouts (NCHW, or NHWC inside "nhwc" regions), so
// no reorders happen at run time. run() executes the steps over a slot table,
// freeing each intermediate after its last use.
//
// The residual Add is a binary post-op (src1 = the residual), not a sum
// post-op: sum accumulates into dst, which would need dst to be the
// residual's own buffer, and friction tensors share storage (a Reshape's
// output aliases its input), so overwriting it in place is not known to be safe.
//
// Files: Drafts.h (the shared vocabulary), Primitives (one primitive per node),
// PostOps (what oneDNN applies before storing, and the chains that become
// post-ops), Backend.cpp (the program builder, model and backend).
#include "vendor_bridge/onednn/OnednnBackend.h"

#include <omp.h>

#include <chrono>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "ir/Error.h"
#include "ir/Spec.h"
#include "ir/FusedRegion.h"
#include "ir/Uses.h"
#include "runtime/SlotProgram.h"
#include "runtime/interp/KernelRegistry.h"
#include "vendor_bridge/Bridges.h"
#include "vendor_bridge/onednn/PostOps.h"
#include "vendor_bridge/onednn/Primitives.h"

namespace friction::vendor {
namespace {

using namespace onednn;

struct Options {
  bool postops = true;
  int threads = 0;  // 0: OpenMP's default
};

// ---------------------------------------------------------------------------
// Programs: steps over a slot table.

struct Program;

struct RtArg {
  int arg;  // DNNL_ARG_*
  int in;   // index into Step::in
  memory::desc md;
};

struct Step : SlotStep {
  enum Kind { Prim, Interp, Sub } kind = Interp;
  const Node* node = nullptr;
  dnnl::primitive prim;
  std::vector<RtArg> rt;
  std::vector<std::pair<int, memory>> fixed;  // compile-time memory (weights, constant operands)
  memory::desc dstMd;
  std::vector<int64_t> outShape;
  const interp::Kernel* interpKernel = nullptr;
  std::unique_ptr<Program> sub;
};

struct Program : SlotProgram<Step> {
  std::vector<Tensor> run(Context& ctx, const std::vector<Tensor>& inputs) const;
};

Tensor runPrimitive(Context& ctx, const Step& s, const std::vector<Tensor>& env) {
  std::unordered_map<int, memory> args;
  for (const auto& [arg, m] : s.fixed) args.emplace(arg, m);
  for (const RtArg& a : s.rt) {
    const Tensor& t = env[size_t(s.in[size_t(a.in)])];
    FRICTION_CHECK(t.defined() && t.dtype() == DType::F32 && size_t(t.numel()) * 4 == a.md.get_size(),
                   "onednn: " + s.node->describe() + ": input is " + (t.defined() ? t.type().str() : "absent") +
                       ", the primitive was built for another shape");
    args.emplace(a.arg, memory(a.md, ctx.eng, const_cast<void*>(t.rawData())));
  }
  Tensor out(DType::F32, s.outShape);
  args.emplace(DNNL_ARG_DST, memory(s.dstMd, ctx.eng, out.rawData()));
  s.prim.execute(ctx.strm, args);
  ctx.strm.wait();
  return out;
}

std::vector<Tensor> Program::run(Context& ctx, const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> env = takeSlots(inputs), args, outs;
  for (const Step& s : steps) {
    if (s.kind == Step::Prim) {
      outs.assign(1, runPrimitive(ctx, s, env));
    } else {
      args.clear();
      for (int slot : s.in) args.push_back(slot < 0 ? Tensor() : env[size_t(slot)]);
      outs = s.kind == Step::Sub ? s.sub->run(ctx, args) : (*s.interpKernel)(*s.node, args);
    }
    finishStep(s, outs, env);
  }
  return finishRun(env, "onednn");
}

// The op inside a convert-layout "nhwc" region, or nullptr.
const Node* nhwcInner(const Node& n) {
  auto region = FusedRegion::of(n);
  return region ? region->nhwcOp() : nullptr;
}

bool isAnchorOp(const Node& n) {
  if (n.op() == "Conv" || n.op() == "MatMul" || n.op() == "Gemm") return true;
  const Node* inner = nhwcInner(n);
  return inner && inner->op() == "Conv";
}

// ---------------------------------------------------------------------------
// Program builder.

class ProgramBuilder {
 public:
  ProgramBuilder(Context& ctx, const Options& opt, OnednnStats& stats) : ctx_(ctx), drafter_(ctx), opt_(opt), stats_(stats) {}

  // `known`: values of `g` whose contents are known at compile time (a region
  // body's inputs bound to constants outside).
  std::unique_ptr<Program> build(const Graph& g, const std::unordered_map<const Value*, Tensor>& known = {}) {
    auto p = std::make_unique<Program>();
    auto slotOf = [&](const Value* v) { return p->slotOf(v); };
    std::unordered_map<const Value*, Tensor> consts = known;
    Scope sc{nullptr, &consts};
    for (const Value* v : g.inputs()) p->inputSlots.push_back(slotOf(v));
    for (const Value* v : g.initializers()) p->constants.emplace_back(slotOf(v), v->constant());
    const auto& registry = interp::KernelRegistry::instance();
    // Constant nodes are evaluated now: they cost nothing at run time.
    for (const auto& node : g.nodes()) {
      const Node& n = *node;
      if (n.op() != "Constant" || n.numInputs() != 0) continue;
      const interp::Kernel* k = registry.find("Constant");
      FRICTION_CHECK(k, "onednn: no Constant kernel");
      auto outs = (*k)(n, {});
      for (size_t o = 0; o < n.numOutputs() && o < outs.size(); ++o) {
        p->constants.emplace_back(slotOf(n.output(o)), outs[o]);
        consts[n.output(o)] = outs[o];
      }
    }
    UseIndex u(g);
    // Groups of nodes that run as one step, emitted at their last node.
    std::unordered_set<const Node*> absorbed;
    std::map<size_t, Step> deferred;
    auto defer = [&](const std::vector<const Node*>& group, Step s) {
      size_t last = 0;
      for (const Node* m : group) last = std::max(last, u.position(m)), absorbed.insert(m);
      deferred.emplace(last, std::move(s));
    };
    auto toStep = [&](const Node& n, Draft&& d, const Value* out, const Scope& scope) {
      Step s;
      s.kind = Step::Prim;
      s.node = &n;
      s.prim = std::move(d.prim);
      s.fixed = std::move(d.fixed);
      s.dstMd = d.dst;
      s.outShape = out->shape().staticDims();
      for (auto& [arg, op] : d.rt) {
        s.rt.push_back({arg, int(s.in.size()), op.md()});
        s.in.push_back(slotOf(scope.outer(op.v)));
      }
      s.out.push_back(slotOf(out));
      FRICTION_CHECK(s.dstMd.get_size() == size_t(Shape::fromStatic(s.outShape).numel().value_or(0)) * 4,
                     "onednn: " + n.describe() + ": primitive dst does not match the output");
      stats_.primitives++;
      stats_.primitiveKinds[d.kind]++;
      stats_.postOps += d.postOps;
      stats_.weightReorders += d.reorders;
      if (d.fusedNodes > 0) stats_.fusedEpilogues++;
      return s;
    };
    // 1. Epilogue chains in the unfused graph (postops=on).
    if (opt_.postops) {
      for (const auto& node : g.nodes()) {
        const Node& a = *node;
        if (absorbed.count(&a) || !isAnchorOp(a) || a.numOutputs() != 1) continue;
        std::vector<const Node*> chain = chainAfter(u, sc, a, absorbed);
        std::optional<Draft> d;
        // The longest prefix of the chain that oneDNN accepts (e.g. a broadcast it cannot post-op).
        for (; !chain.empty(); chain.pop_back())
          if ((d = tryDraft([&] { return anchorWithChain(a, chain, u, sc); }))) break;
        if (!d) continue;
        std::vector<const Node*> group = {&a};
        group.insert(group.end(), chain.begin(), chain.end());
        defer(group, toStep(a, std::move(*d), chain.back()->output(0), sc));
      }
    }
    // 2. Erf-GELU subgraphs: one eltwise each.
    for (const auto& node : g.nodes())
      for (const Value* x : node->inputs()) {
        if (!x || absorbed.count(node.get())) continue;
        auto gelu = matchGelu(u, sc, x);
        bool free = !gelu.empty();
        for (const Node* m : gelu) free = free && !absorbed.count(m);
        if (!free) continue;
        Post e;
        e.alg = algorithm::eltwise_gelu_erf;
        const Value* y = gelu.back()->output(0);
        std::optional<Draft> d = tryDraft([&] { return drafter_.eltwise(x, y, e); });
        if (d) defer(gelu, toStep(*gelu.back(), std::move(*d), y, sc));
      }
    // 3. Everything else, in order.
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      const Node& n = *g.nodes()[i];
      if (n.op() == "Constant" && n.numInputs() == 0) continue;
      if (absorbed.count(&n)) {
        auto it = deferred.find(i);
        if (it != deferred.end()) p->steps.push_back(std::move(it->second));
        continue;
      }
      std::optional<Step> s;
      if (n.op() == "Fused") {
        s = fusedStep(n, sc, toStep, slotOf, consts);
      } else if (std::optional<Draft> d = tryDraft([&] { return single(n, sc); })) {
        s = toStep(n, std::move(*d), n.output(0), sc);
      }
      if (!s) {
        s.emplace();
        s->kind = Step::Interp;
        s->node = &n;
        s->interpKernel = registry.find(n.op());
        FRICTION_CHECK(s->interpKernel, "onednn: no kernel for op '" + n.op() + "' (node '" + n.name() + "')");
        for (const Value* v : n.inputs()) s->in.push_back(v ? slotOf(v) : -1);
        for (const Value* v : n.outputs()) s->out.push_back(slotOf(v));
        stats_.fallbackNodes++;
        stats_.fallbackOps[n.op()]++;
      }
      p->steps.push_back(std::move(*s));
    }
    for (const Value* v : g.outputs()) p->outputSlots.push_back(slotOf(v));
    p->computeReleases();
    return p;
  }

 private:
  template <typename F>
  std::optional<Draft> tryDraft(F&& f) {
    try {
      return f();
    } catch (const Unmapped&) {
    } catch (const dnnl::error&) {
    } catch (const Error&) {
    }
    return std::nullopt;
  }

  // One node as one primitive (plain layouts).
  Draft single(const Node& n, const Scope& sc) {
    for (const Value* v : n.outputs()) need(isStaticF32(v));
    const std::string& op = n.op();
    if (op == "Conv") {
      const Value* x = n.input(0);
      need(isStaticF32(x));
      return drafter_.conv(n, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())}, dimsOf(n.output(0)),
                           plainTag(n.output(0)->shape().rank()), {});
    }
    if (op == "MatMul") return drafter_.matmul(n, sc, {});
    if (op == "Gemm") return drafter_.gemm(n, sc, {});
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      const Value* x = n.input(0);
      need(isStaticF32(x));
      return drafter_.pool(n, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())}, dimsOf(n.output(0)),
                           plainTag(n.output(0)->shape().rank()));
    }
    if (op == "BatchNormalization") {
      const Value* x = n.input(0);
      need(isStaticF32(x));
      return drafter_.batchnorm(n, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())});
    }
    if (op == "LayerNormalization") return drafter_.layernorm(n, sc);
    if (op == "Softmax" || op == "LogSoftmax") return drafter_.softmax(n);
    if (op == "Transpose") return drafter_.transpose(n);
    if (binaryOf(op)) return drafter_.binary(n, sc);
    if (auto e = eltwiseOf(n, sc)) return drafter_.eltwise(n.input(0), n.output(0), *e);
    throw Unmapped{};
  }

  // A convert-layout region's op on channels-last memory. `sc` maps body values to the program's.
  Draft nhwcRegion(const Node& fused, const Scope& sc, const std::vector<Post>& posts, const Tensor* extraBias = nullptr) {
    const Node* op = nhwcInner(fused);
    need(op && isStaticF32(op->input(0)) && isStaticF32(op->output(0)) && op->input(0)->shape().rank() == 4);
    Operand src{FusedRegion::of(fused)->body().inputs()[0], dimsOf(op->input(0)), Tag::nhwc};
    memory::dims dst = dimsOf(op->output(0));
    if (op->op() == "Conv") return drafter_.conv(*op, sc, src, dst, Tag::nhwc, posts, extraBias);
    need(posts.empty());
    if (op->op() == "BatchNormalization") return drafter_.batchnorm(*op, sc, src);
    return drafter_.pool(*op, sc, src, dst, Tag::nhwc);
  }

  // Substitution of a region body's inputs by the Fused node's inputs (as seen through `outer`).
  static std::unordered_map<const Value*, const Value*> bodyBinding(const Node& fused, const Scope& outer) {
    const Graph& body = FusedRegion::of(fused)->body();
    std::unordered_map<const Value*, const Value*> m;
    for (size_t i = 0; i < body.inputs().size() && i < fused.numInputs(); ++i)
      m[body.inputs()[i]] = outer.outer(fused.input(i));
    return m;
  }
  // The anchor (Conv, MatMul, Gemm or an NHWC conv region) with `chain` as post-ops.
  // `sc` maps the anchor's graph's values to the program's.
  Draft anchorWithChain(const Node& anchor, const std::vector<const Node*>& chain, const UseIndex& u, const Scope& sc) {
    EpiloguePosts epilogue(anchor, chain, u, sc);
    const std::vector<Post>& posts = epilogue.posts();
    const Tensor* extraBias = epilogue.extraBias();
    const Value* out = anchor.output(0);
    Draft d;
    if (nhwcInner(anchor)) {
      auto binding = bodyBinding(anchor, sc);
      Scope inner{&binding, sc.consts};
      d = nhwcRegion(anchor, inner, posts, extraBias);
      // Operands of the region body resolve to the program's values now.
      for (auto& [arg, op] : d.rt) op.v = inner.outer(op.v);
    } else if (anchor.op() == "Conv") {
      const Value* x = anchor.input(0);
      need(isStaticF32(x));
      d = drafter_.conv(anchor, sc, Operand{x, dimsOf(x), plainTag(x->shape().rank())}, dimsOf(out),
                        plainTag(out->shape().rank()), posts, extraBias);
    } else {
      need(!extraBias);
      d = anchor.op() == "MatMul" ? drafter_.matmul(anchor, sc, posts) : drafter_.gemm(anchor, sc, posts);
    }
    d.fusedNodes = int(chain.size());
    return d;
  }


  template <typename ToStep, typename SlotOf>
  std::optional<Step> fusedStep(const Node& n, const Scope& sc, ToStep& toStep, SlotOf& slotOf,
                                const std::unordered_map<const Value*, Tensor>& consts) {
    auto region = FusedRegion::of(n);
    RegionKind kind = region->kind();
    const Graph& body = region->body();
    auto binding = bodyBinding(n, sc);
    Scope bodyScope{&binding, sc.consts};
    if (kind == RegionKind::Nhwc && n.numOutputs() == 1) {
      if (auto d = tryDraft([&] { return nhwcRegion(n, bodyScope, {}); })) {
        for (auto& [arg, op] : d->rt) op.v = bodyScope.outer(op.v);
        return toStep(n, std::move(*d), n.output(0), sc);
      }
    }
    if (kind == RegionKind::Epilogue && opt_.postops && n.numOutputs() == 1 && !body.nodes().empty()) {
      UseIndex bu(body);
      const Node& anchor = *body.nodes()[0];
      std::vector<const Node*> chain;
      for (size_t i = 1; i < body.nodes().size(); ++i) chain.push_back(body.nodes()[i].get());
      bool shape = isAnchorOp(anchor) && body.outputs().size() == 1 &&
                   body.outputs()[0] == (chain.empty() ? anchor.output(0) : chain.back()->output(0));
      if (shape) {
        if (auto d = tryDraft([&] { return anchorWithChain(anchor, chain, bu, bodyScope); })) {
          for (auto& [arg, op] : d->rt) op.v = bodyScope.outer(op.v);
          return toStep(n, std::move(*d), n.output(0), sc);
        }
      }
    }
    // The body node by node; its inputs bound to constants stay known.
    Step s;
    s.kind = Step::Sub;
    s.node = &n;
    std::unordered_map<const Value*, Tensor> known;
    for (size_t i = 0; i < body.inputs().size() && i < n.numInputs(); ++i)
      if (const Tensor* t = sc.constOf(n.input(i))) known[body.inputs()[i]] = *t;
    s.sub = build(body, known);
    for (const Value* v : n.inputs()) s.in.push_back(v ? slotOf(v) : -1);
    for (const Value* v : n.outputs()) s.out.push_back(slotOf(v));
    (void)consts;
    return s;
  }

  Context& ctx_;
  Drafter drafter_;
  const Options& opt_;
  OnednnStats& stats_;
};

// ---------------------------------------------------------------------------

class OnednnModel : public CompiledModel {
 public:
  OnednnModel(std::shared_ptr<Context> ctx, std::unique_ptr<Program> p, OnednnStats stats, Options opt, std::string d)
      : ctx_(std::move(ctx)), program_(std::move(p)), stats_(std::move(stats)), opt_(opt), description_(std::move(d)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    int before = omp_get_max_threads();
    if (opt_.threads > 0) omp_set_num_threads(opt_.threads);
    try {
      auto out = program_->run(*ctx_, inputs);
      if (opt_.threads > 0) omp_set_num_threads(before);
      return out;
    } catch (...) {
      if (opt_.threads > 0) omp_set_num_threads(before);
      throw;
    }
  }
  std::string description() const override { return description_; }
  const OnednnStats& stats() const { return stats_; }
  int64_t interpNodes() const override { return stats_.fallbackNodes; }

 private:
  std::shared_ptr<Context> ctx_;
  std::unique_ptr<Program> program_;
  OnednnStats stats_;
  Options opt_;
  std::string description_;
};

class OnednnBackend : public Backend {
 public:
  explicit OnednnBackend(Options opt) : opt_(opt) {}
  std::string name() const override { return "onednn"; }
  std::unique_ptr<CompiledModel> compile(const Graph& graph) override {
    auto t0 = std::chrono::steady_clock::now();
    auto ctx = std::make_shared<Context>();
    OnednnStats stats;
    int before = omp_get_max_threads();
    if (opt_.threads > 0) omp_set_num_threads(opt_.threads);  // compile-time reorders too
    std::unique_ptr<Program> program;
    try {
      program = ProgramBuilder(*ctx, opt_, stats).build(graph);
    } catch (...) {
      if (opt_.threads > 0) omp_set_num_threads(before);
      throw;
    }
    if (opt_.threads > 0) omp_set_num_threads(before);
    stats.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::string d = "oneDNN " + onednnVersion() + " {\"postops\":\"" + (opt_.postops ? "on" : "off") + "\"" +
                    (opt_.threads > 0 ? ",\"threads\":" + std::to_string(opt_.threads) : std::string()) + "}: " +
                    std::to_string(stats.primitives) + " primitives [";
    bool first = true;
    for (const auto& [k, c] : stats.primitiveKinds) {
      d += (first ? "" : ", ") + k + " x" + std::to_string(c);
      first = false;
    }
    d += "], " + std::to_string(stats.fusedEpilogues) + " with post-ops (" + std::to_string(stats.postOps) +
         " post-ops), " + std::to_string(stats.weightReorders) + " weights reordered, " +
         std::to_string(stats.fallbackNodes) + " nodes on interp fallback";
    if (!stats.fallbackOps.empty()) {
      d += " [";
      first = true;
      for (const auto& [op, c] : stats.fallbackOps) {
        d += (first ? "" : ", ") + op + " x" + std::to_string(c);
        first = false;
      }
      d += "]";
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "; compile %.0f ms", stats.compileMs);
    d += buf;
    return std::make_unique<OnednnModel>(std::move(ctx), std::move(program), std::move(stats), opt_, std::move(d));
  }

 private:
  Options opt_;
};

Options parseOptions(const std::map<std::string, std::string>& o) {
  Options opt;
  for (const auto& [k, v] : o) {
    if (k == "postops") {
      FRICTION_CHECK(v == "on" || v == "off", "onednn: postops must be on or off, got '" + v + "'");
      opt.postops = v == "on";
    } else if (k == "threads") {
      auto t = Spec::integer(v, 1, 1024);
      FRICTION_CHECK(t, "onednn: threads must be a positive integer, got '" + v + "'");
      opt.threads = int(*t);
    } else {
      throw Error("backend onednn: unknown option '" + k + "' (options: postops=on|off, threads=N)");
    }
  }
  return opt;
}

}  // namespace

std::string onednnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

const OnednnStats* onednnStats(const CompiledModel& model) {
  auto* m = dynamic_cast<const OnednnModel*>(&model);
  return m ? &m->stats() : nullptr;
}

void registerOnednnBackend() {
  registerBackend("onednn", [](const std::map<std::string, std::string>& o) -> std::unique_ptr<Backend> {
    return std::make_unique<OnednnBackend>(parseOptions(o));
  });
}

}  // namespace friction::vendor

