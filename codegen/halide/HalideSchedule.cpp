#include "codegen/halide/HalideSchedule.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "ir/Error.h"
#include "ir/Shape.h"
#include "ir/Spec.h"

namespace friction::codegen::halide {
namespace {

// Friction's tiles for one target.
struct Tiles {
  int lanes;         // f32 lanes of a vector: 8 on AVX2, 16 on AVX-512
  int rows = 4;      // rows of an output tile
  // Rows of a reduction's register tile: 8 accumulators of a vector each hide
  // the FMA latency (2 FMAs a cycle, 4 cycles each) and leave registers for
  // the operands in AVX2's 16.
  int updateRows = 8;
  int64_t parallelWork = kParallelWork;  // the least work a stage holds to run in parallel (ScheduleOptions.h)
  bool worthParallel(int64_t work) const { return work >= parallelWork; }
};

// The extent of Halide dim `k` of a friction shape.
int64_t extent(const std::vector<int64_t>& shape, size_t k) { return shape[shape.size() - 1 - k]; }

// The Halide dim of `p`'s vector lanes: its laneDim, else the innermost.
size_t laneHalideDim(const ShapedFunc& p) { return p.laneDim >= 0 ? p.shape.size() - 1 - size_t(p.laneDim) : 0; }

// `vars` with vars[lane] moved innermost (first), the others in order.
std::vector<HL::Var> laneFirst(std::vector<HL::Var> vars, size_t lane) {
  std::rotate(vars.begin(), vars.begin() + int64_t(lane), vars.begin() + int64_t(lane) + 1);
  return vars;
}

// The vector width for a pure loop of `extent` iterations: `lanes`, or for a shorter loop the widest power of
// two it holds, down to 4 (a pure definition's tail shifts inwards: 12 elements as two overlapping vectors of 8);
// 0: scalar. An LSTM cell's 12 hidden units ran scalar, sigmoids and tanhs included.
int vectorWidth(int64_t extent, int lanes) {
  int width = lanes;
  while (width > extent && width > 4) width /= 2;
  return width <= extent ? width : 0;
}

// Vectorizes pure var `lane` of stage `s` (moved innermost) and, with
// `parallel`, runs the outermost of its other vars of extent 2 or more in
// parallel.
void vectorizeAndParallel(HL::Stage s, const std::vector<HL::Var>& vars, const std::vector<int64_t>& shape, size_t lane,
                          int lanes, bool parallel = true) {
  if (vars.empty()) return;
  if (lane != 0) {
    const std::vector<HL::Var> order = laneFirst(vars, lane);
    s.reorder(std::vector<HL::VarOrRVar>(order.begin(), order.end()));
  }
  if (const int width = vectorWidth(extent(shape, lane), lanes)) s.vectorize(vars[lane], width);
  for (size_t k = vars.size(); parallel && k-- > 0;)
    if (k != lane && extent(shape, k) >= 2) {
      s.parallel(vars[k]);
      return;
    }
}

// The pure vars of update `i` of `f` that stay in their own place (a
// reduction may pin a kept dim to 0).
std::vector<HL::Var> updateVars(const HL::Func& f, int i) {
  std::vector<HL::Var> pure = f.args(), kept;
  const auto& lhs = f.update_args(i);
  for (size_t k = 0; k < pure.size(); ++k) {
    const auto* v = lhs[k].as<HL::Internal::Variable>();
    if (v && v->name == pure[k].name()) kept.push_back(pure[k]);
  }
  return kept;
}

// A reduction's panel (ShapedFunc::panel) computed at loop `at`, in its own
// order: the lanes' dim innermost (a convolution's output channels), then
// the rest in the order the reduction steps through them.
void schedulePanel(HL::Func panel, const HL::LoopLevel& at, int lanes) {
  panel.compute_at(at).vectorize(panel.args()[0], lanes);
}

// Update `i` of the reduction `p`: the reduction inside a register tile of
// its pure vars (t.lanes lanes of the lane dim, the hint's or Halide dim 0,
// times t.updateRows of the rows dim: the hint's, else Halide dim 1), so each step of the reduction updates the
// whole tile, the tiles' loops outside, the outermost kept dim of extent 2
// or more in parallel. The tile's loops round up (7 pixels compute as 8
// lanes, into the reduction's own buffer: its inputs are clamped, HalideKernels.h);
// an update cannot recompute lanes (ShiftInwards), and guarding them
// (GuardWithIf) runs the tails scalar. `inSlice`: computed a slice at a time
// inside the output's parallel loop (frictionSchedule): serial, its panel
// packed once at the root.
void scheduleUpdate(const ShapedFunc& p, int i, const Tiles& t, bool inSlice) {
  HL::Func f = p.func;
  HL::Stage s = f.update(i);
  const std::vector<HL::Var> v = f.args(), kept = updateVars(f, i);
  auto dimOf = [&](const HL::Var& x) {
    for (size_t k = 0; k < v.size(); ++k)
      if (v[k].name() == x.name()) return k;
    return v.size();
  };
  const size_t laneDim = laneHalideDim(p), rowDim = p.rowDim >= 0 ? p.shape.size() - 1 - size_t(p.rowDim) : 1;
  auto lane = std::find_if(kept.begin(), kept.end(), [&](const HL::Var& x) { return dimOf(x) == laneDim; });
  const bool lanes = lane != kept.end() && extent(p.shape, laneDim) >= t.lanes / 2;
  auto row = std::find_if(kept.begin(), kept.end(), [&](const HL::Var& x) { return dimOf(x) == rowDim && rowDim != laneDim; });
  const bool rows = lanes && row != kept.end() && extent(p.shape, rowDim) >= t.updateRows / 2;
  HL::Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
  std::vector<HL::VarOrRVar> order;
  if (lanes) {
    s.split(*lane, xo, xi, t.lanes, HL::TailStrategy::RoundUp);
    order.push_back(xi);
  }
  if (rows) {
    s.split(*row, yo, yi, t.updateRows, HL::TailStrategy::RoundUp);
    order.push_back(yi);
  }
  for (const HL::RVar& r : f.rvars(i)) order.push_back(r);
  // The tiles' loops, innermost first: the other kept dims (the rows' as their blocks) and the lanes' blocks,
  // which go innermost of them, or, with a panel, outside all but the batch dims: a panel is packed once a
  // block of lanes, for all the rows and pixels.
  std::vector<std::pair<HL::VarOrRVar, int64_t>> loops;  // with their extents
  const bool panel = lanes && p.panel.defined();
  size_t blocksAt = 0;
  for (const HL::Var& x : kept) {
    if (lanes && x.name() == lane->name()) continue;
    const bool isRow = rows && x.name() == row->name();
    const int64_t e = extent(p.shape, dimOf(x));
    loops.emplace_back(isRow ? HL::VarOrRVar(yo) : HL::VarOrRVar(x), isRow ? e / t.updateRows : e);
    if (panel && p.shape.size() - 1 - dimOf(x) >= size_t(p.batchDims)) blocksAt = loops.size();
  }
  if (lanes) loops.insert(loops.begin() + int64_t(blocksAt), {xo, extent(p.shape, laneDim) / t.lanes});
  for (const auto& l : loops) order.push_back(l.first);
  // In parallel: the outermost loop of 2 or more iterations (a block of lanes only with a panel).
  auto parallel = std::find_if(loops.rbegin(), loops.rend(), [&](const auto& l) {
    return l.second >= 2 && (panel || l.first.name() != xo.name());
  });
  if (order.size() > 1) s.reorder(order);
  if (lanes) s.vectorize(xi);
  if (rows) s.unroll(yi);
  // The steps from the update's own reduction domain: Func::rvars() gives RVars by name only, whose extent()
  // is a symbol, not the constant.
  int64_t work = checkedNumel(p.shape);
  for (const HL::Internal::ReductionVariable& r : f.function().update(i).schedule().rvars())
    if (const int64_t* steps = HL::Internal::as_const_int(r.extent)) work *= *steps;
  if (parallel != loops.rend() && !inSlice && t.worthParallel(work)) s.parallel(parallel->first);
  if (p.panel.defined())
    schedulePanel(p.panel, panel && !inSlice ? HL::LoopLevel(f, xo) : HL::LoopLevel::root(), t.lanes);
}

// Whether `reader` reads the Func named `name`, directly or through the Funcs
// it calls that are inlined (not in `materialized`).
bool readsThroughInlined(const HL::Internal::Function& reader, const std::string& name,
                         const std::set<std::string>& materialized, std::set<std::string>& seen) {
  for (const auto& [callee, f] : HL::Internal::find_direct_calls(reader)) {
    if (callee == name) return true;
    if (!materialized.count(callee) && seen.insert(callee).second && readsThroughInlined(f, name, materialized, seen))
      return true;
  }
  return false;
}

// Friction's own schedule. Outputs: tiled t.lanes x t.rows over their two
// innermost dims where they are that large (vector lanes, unrolled rows),
// parallel over the outermost dim of extent 2 or more. A stage runs in
// parallel only where it holds t.parallelWork elements of work or more. Reductions (a
// contraction's accumulator, pooling, statistics): computed before the
// outputs, their pure definition vectorized, their updates in register tiles
// (scheduleUpdate). A reduction the output alone reads (through inlined Funcs:
// a convolution's bias and Relu), as many elements as the output, is computed
// a slice at a time (ShapedFunc::sliceDim: a channels-last image's rows, a
// batched matmul's batch) inside the output's loop over its third innermost
// dim, when that dim has the slice dim's extent (the output is the reduction
// transposed, or itself: a guess from extents, which at worst costs speed;
// Halide's bounds keep it right) and runs inside the parallel loop: the
// slice's accumulator stays in cache for the epilogue, where a whole one went
// to memory and back twice (MobileNetV2's 1x1 convolutions of 16 input
// channels into 112x112x96). Its panel is then packed once, at the root. The
// other reductions are computed whole, in parallel. Pure producers: inlined,
// or computed whole (fusion=root); those a reduction reads, or two outputs,
// always computed whole.
void frictionSchedule(KernelFuncs& k, bool inlineProducers, const Tiles& t) {
  HL::Func sliced;  // the one output whose loop over Halide dim 2 can hold a reduction's slice
  for (ShapedFunc& out : k.outputs) {
    HL::Func f = out.func;
    std::vector<HL::Var> v = f.args();
    if (v.empty()) continue;
    HL::Var xo("xo"), xi("xi"), yo("yo"), yi("yi");
    const bool tile = v.size() >= 2 && extent(out.shape, 0) >= t.lanes && extent(out.shape, 1) >= t.rows;
    if (tile) f.tile(v[0], v[1], xo, yo, xi, yi, t.lanes, t.rows).vectorize(xi).unroll(yi);
    else if (const int width = vectorWidth(extent(out.shape, 0), t.lanes)) f.vectorize(v[0], width);
    const bool worthParallel = t.worthParallel(checkedNumel(out.shape));
    int parallel = -1;
    for (size_t d = v.size(); worthParallel && d-- > (tile ? 2 : 1) && parallel < 0;)
      if (extent(out.shape, d) >= 2) f.parallel(v[d]), parallel = int(d);
    if (worthParallel && tile && parallel < 0 && extent(out.shape, 1) >= 2 * t.rows) f.parallel(yo);  // [rows, columns]
    if (k.outputs.size() == 1 && tile && parallel >= 2 && extent(out.shape, 2) >= 2) sliced = f;
  }
  // The operands a reduction reads: materialized once rather than recomputed at every step of the reduction
  // (a transposed input read per window tap, with strided loads).
  std::set<std::string> operands, materialized;
  for (ShapedFunc& p : k.producers)
    if (p.func.has_update_definition())
      for (const auto& [name, f] : HL::Internal::find_direct_calls(p.func.function())) operands.insert(name);
  for (ShapedFunc& p : k.producers)
    if (p.func.has_update_definition() || !inlineProducers || operands.count(p.func.name()))
      materialized.insert(p.func.name());
  // A pure producer that two or more outputs read through inlined Funcs: materialized too, else each output
  // recomputes it (an LSTM cell's new state, three gates' activations, read by both c and h). Consumers
  // first, so a producer only a materialized one reads stays inlined into it.
  if (k.outputs.size() > 1)
    for (auto p = k.producers.rbegin(); p != k.producers.rend(); ++p) {
      if (materialized.count(p->func.name())) continue;
      int readers = 0;
      for (const ShapedFunc& out : k.outputs) {
        std::set<std::string> seen;
        readers += readsThroughInlined(out.func.function(), p->func.name(), materialized, seen);
      }
      if (readers >= 2) materialized.insert(p->func.name());
    }
  auto inSlice = [&](const ShapedFunc& p) {
    const std::vector<int64_t>& out = k.outputs[0].shape;
    if (!sliced.defined() || !p.func.has_update_definition() || p.sliceDim < 0 ||
        p.shape[size_t(p.sliceDim)] != extent(out, 2) || checkedNumel(p.shape) != checkedNumel(out))
      return false;
    // Each slice reads the whole panel: worth it only where that is less than the reduction's own traffic.
    const int64_t slices = checkedNumel(out) / (extent(out, 0) * extent(out, 1));
    if (p.panelElements * slices >= checkedNumel(out)) return false;
    for (const ShapedFunc& q : k.producers) {
      std::set<std::string> seen;
      if (q.func.name() != p.func.name() && materialized.count(q.func.name()) &&
          readsThroughInlined(q.func.function(), p.func.name(), materialized, seen))
        return false;  // computed whole, it needs all of p
    }
    return true;
  };
  for (ShapedFunc& p : k.producers) {
    HL::Func f = p.func;
    if (!materialized.count(f.name())) continue;
    const bool slice = inSlice(p);
    if (slice) f.compute_at(sliced, sliced.args()[2]);
    else f.compute_root();
    if (p.laneDim >= 0) f.reorder_storage(laneFirst(f.args(), laneHalideDim(p)));  // the lanes' dim laid out innermost
    vectorizeAndParallel(f, f.args(), p.shape, laneHalideDim(p), t.lanes, !slice && t.worthParallel(checkedNumel(p.shape)));
    for (int i = 0; i < f.num_update_definitions(); ++i) scheduleUpdate(p, i, t, slice);
  }
}

// `f` stored at the loop level where it is computed. An autoscheduler may hoist
// a producer's storage above a loop it is computed inside (store_at outside
// compute_at); Halide 14 then slides a window over that loop, and over a
// loop whose index the producer ignores (a broadcast operand read at a
// clamped index 0, under the batch loop), it skipped recomputing rows that
// storage folding had already overwritten: Adams2019 on a [4,16,32] +
// [1,16,32] Add at 2 threads was off by 4 (TestHalideBackend.cpp). Without
// hoisting there is nothing to slide.
void storeWhereComputed(HL::Internal::Function& f) { f.schedule().store_level() = f.schedule().compute_level(); }

// The loops of stage `s` that an autoscheduler unrolled over a guarded tail
// (the outer loop of a GuardWithIf split, and the loops split or fused from
// it) run serially instead. Their extent is not a constant, and Halide 14
// unrolls such a loop up to a constant bound it derives; on a softmax's max
// (rows split by 8 with a guarded tail, the outer loop unrolled, computed
// inside the attention's row loop over 9 rows) that bound came out one short:
// row 8's max was never updated, stayed -inf, and the softmax read
// inf / inf. Adams2019 on a small ViT at batch 2 (TestHalideBackend.cpp;
// TestHalideSchedule.cpp on a hand-written schedule).
// `s` is a handle: a copy edits the stage's schedule.
void serializeGuardedUnrolls(HL::Internal::StageSchedule s) {
  std::set<std::string> guarded;
  for (const HL::Internal::Split& split : s.splits()) {
    if (split.is_split() && (split.tail == HL::TailStrategy::GuardWithIf || guarded.count(split.old_var)))
      guarded.insert(split.outer);
    if (split.is_rename() && guarded.count(split.old_var)) guarded.insert(split.outer);
    if (split.is_fuse() && (guarded.count(split.outer) || guarded.count(split.inner))) guarded.insert(split.old_var);
  }
  using HL::Internal::ForType;
  for (HL::Internal::Dim& d : s.dims())
    if (d.for_type == ForType::Unrolled && guarded.count(d.var)) d.for_type = ForType::Serial;
}

// An update's vectorized loop over a guarded tail (a pure var split with
// GuardWithIf, a loop of its inner part vectorized) computes whole vectors:
// Halide 14's lowering (its rewrite of vector interleavings) dropped the
// tail's branch of such a loop when the update read another Func, so every
// iteration of the outer loop updated the first vector. Mullapudi2016 on a
// LayerNormalization of 17 rows of 16 lanes summed the squares of rows 0-15
// twice and of row 16 never (TestHalideSchedule.cpp). A Func the pipeline
// computes for itself rounds such splits up (its buffer grows to whole
// vectors; the kernel's inputs are clamped) where rounding up adds
// iterations past the end only: a split of a whole dim or of its outer loops,
// or of an inner loop whose extent it divides. Rounding 128 channels up to
// 3 x 48 would overlap the next block of 128, which another thread updates
// too (Adams2019 on MobileNetV3's depthwise convolutions). Elsewhere, and in
// an output's update, whose buffer cannot grow, the loop runs as scalars.
// `s` is a handle: a copy edits the stage's schedule.
void vectorizeGuardedUpdatesWhole(HL::Internal::StageSchedule s, const std::vector<std::string>& args, bool output) {
  struct Loop {
    bool pure = false;
    // Whether running the loop past its extent computes values past the end only: a whole dim's loop, or
    // the outer loop of one that is; not a split's inner loop, whose next values are the next block's.
    bool extendable = false;
    int64_t extent = -1;      // a split's inner loop: the split's factor; -1: not known
    std::set<size_t> guards;  // the guarded splits of pure loops whose inner part holds this one
  };
  std::map<std::string, Loop> loops;
  for (const std::string& a : args) loops[a] = {true, true, -1, {}};
  std::vector<HL::Internal::Split>& splits = s.splits();
  std::set<size_t> roundable;  // guarded splits that can round up with no overlap
  for (size_t i = 0; i < splits.size(); ++i) {
    const HL::Internal::Split& split = splits[i];
    const Loop old = loops[split.old_var];
    if (split.is_fuse()) {
      const Loop &outer = loops[split.outer], &inner = loops[split.inner];
      Loop fused{outer.pure && inner.pure, false, -1, outer.guards};
      fused.guards.insert(inner.guards.begin(), inner.guards.end());
      loops[split.old_var] = fused;
      continue;
    }
    if (!split.is_split()) {  // a rename (or an RVar made pure): the same loop
      loops[split.outer] = old;
      continue;
    }
    const int64_t* factor = HL::Internal::as_const_int(split.factor);
    loops[split.outer] = {old.pure, old.extendable, -1, old.guards};
    Loop& inner = loops[split.inner] = {old.pure, false, factor ? *factor : -1, old.guards};
    if (old.pure && split.tail == HL::TailStrategy::GuardWithIf) {
      inner.guards.insert(i);
      if (factor && (old.extendable || (old.extent > 0 && old.extent % *factor == 0))) roundable.insert(i);
    }
  }
  using HL::Internal::ForType;
  std::set<size_t> guards;  // the guarded splits over vectorized loops
  for (const HL::Internal::Dim& d : s.dims())
    if (d.for_type == ForType::Vectorized) guards.insert(loops[d.var].guards.begin(), loops[d.var].guards.end());
  if (guards.empty()) return;
  if (!output && std::includes(roundable.begin(), roundable.end(), guards.begin(), guards.end())) {
    for (size_t i : guards) splits[i].tail = HL::TailStrategy::RoundUp;
    return;
  }
  for (HL::Internal::Dim& d : s.dims())
    if (d.for_type == ForType::Vectorized && !loops[d.var].guards.empty()) d.for_type = ForType::Serial;
}

}  // namespace

void repairAutoschedule(const std::vector<HL::Func>& outputs) {
  std::map<std::string, HL::Internal::Function> all;
  std::set<std::string> outputNames;
  for (const HL::Func& out : outputs) {
    all.merge(HL::Internal::find_transitive_calls(out.function()));
    outputNames.insert(out.name());
  }
  for (auto& [name, f] : all) {
    storeWhereComputed(f);
    serializeGuardedUnrolls(f.definition().schedule());
    for (const HL::Internal::Definition& update : f.updates()) {
      serializeGuardedUnrolls(update.schedule());
      vectorizeGuardedUpdatesWhole(update.schedule(), f.args(), outputNames.count(name) > 0);
    }
  }
}

const std::vector<ScheduleInfo>& schedules() {
  static const std::vector<ScheduleInfo> all = {
#define FRICTION_HALIDE_SCHEDULE_INFO(e, spelling, autoscheduler, summary) {Schedule::e, spelling, autoscheduler, summary},
      FRICTION_HALIDE_SCHEDULES(FRICTION_HALIDE_SCHEDULE_INFO)
#undef FRICTION_HALIDE_SCHEDULE_INFO
  };
  return all;
}

const ScheduleInfo& scheduleInfo(Schedule s) { return schedules()[size_t(s)]; }

std::string scheduleSpellings() {
  std::vector<const char*> spellings;
  for (const ScheduleInfo& s : schedules()) spellings.push_back(s.spelling);
  return Spec::alternatives(spellings);
}

Schedule parseSchedule(const std::string& name) {
  for (const ScheduleInfo& s : schedules())
    if (name == s.spelling) return s.schedule;
  throw Error("backend halide: schedule must be " + scheduleSpellings() + ", got '" + name + "'");
}

void loadAutoscheduler(Schedule schedule) {
  const std::string name = scheduleInfo(schedule).autoscheduler;
  if (name.empty()) return;
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(name)) return;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const char* dir = std::getenv("FRICTION_HALIDE_PLUGINS");
  const std::string path = std::string(dir && *dir ? dir : FRICTION_HALIDE_PLUGINS) + "/libautoschedule_" + lower + ".so";
  try {
    HL::load_plugin(path);
  } catch (const HL::Error& e) {
    std::string why = e.what();
    std::replace(why.begin(), why.end(), '\n', ' ');
    throw Error("backend halide: cannot load the " + name + " autoscheduler (" + path + "): " + why);
  }
  loaded.insert(name);
}

int scheduleLanes(const ScheduleOptions& options, const HL::Target& target) {
  return options.lanes ? options.lanes : target.natural_vector_size<float>();
}

void scheduleKernel(KernelFuncs& k, const ScheduleOptions& options, const HL::Target& target) {
  const ScheduleInfo& info = scheduleInfo(options.schedule);
  if (options.schedule == Schedule::None) {
    if (!options.inlineProducers)
      for (ShapedFunc& p : k.producers)
        if (!p.func.has_update_definition()) p.func.compute_root();
    return;
  }
  if (options.schedule == Schedule::Default) {
    Tiles tiles{scheduleLanes(options, target)};
    tiles.parallelWork = options.parallelWork;
    return frictionSchedule(k, options.inlineProducers, tiles);
  }
  loadAutoscheduler(options.schedule);
  for (size_t i = 0; i < k.inputs.size(); ++i) k.inputs[i].set_estimates(regionOf(k.inputShapes[i]));
  std::vector<HL::Func> outputs;
  for (ShapedFunc& out : k.outputs) {
    out.func.set_estimates(regionOf(out.shape));
    outputs.push_back(out.func);
  }
  // Last-level cache and the load/arithmetic balance: Halide's defaults for a generic CPU.
  HL::MachineParams machine(std::max(1, options.threads), 16 * 1024 * 1024, 40);
  // Read by Adams2019 on each call; the callers schedule one kernel at a time (HalideSource's stderr lock).
  if (options.schedule == Schedule::Adams2019) setenv("HL_BEAM_SIZE", std::to_string(options.beam).c_str(), 1);
  HL::Pipeline(outputs).auto_schedule(info.autoscheduler, target, machine);
  repairAutoschedule(outputs);
}

}  // namespace friction::codegen::halide
