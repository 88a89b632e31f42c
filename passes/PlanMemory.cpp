// plan-memory: liveness-based buffer assignment for intermediates, i.e. the
// outputs of top-level nodes that are not graph outputs (Constant nodes'
// outputs are parameters, not intermediates). In node order each value lives
// over [def, last use]; values are placed greedy-by-size (largest first) at
// the best-fitting 64-byte-aligned gap among already placed values whose
// intervals overlap, in one arena. A node's output never shares with its own
// inputs (their intervals meet at the node). Values are not aliased
// (Reshape & co. get their own buffers), and Fused bodies are not planned:
// their internals are the kernel's business.
//
// Concat in place: when a Concat's inputs are contiguous blocks of its result
// (every dim before the axis is 1: NCHW channels at batch 1, a class token
// before the patches), an input that a node writes (not a view, constant or
// another Concat) and that starts 64-byte aligned is placed inside the result
// at its block, the result's interval widened to cover it; its producer then
// writes straight into the result and the Concat copies nothing for it (the
// cpu backend's copy skips a piece that is already in place). An input is
// placed in at most one Concat; the others copy it.
//
// Pattern bodies: dedup-patterns' instances share one body graph, which the
// cpu backend runs as a program of its own per instance, outside the arena.
// Each body gets a plan of its own (its metadata, same keys), so an instance's
// intermediates reuse memory the way the top level's do; instances run one at
// a time, so they can share one block for it. Stats: "pattern bodies planned".
//
// Symbolic dims: the plan is for static shapes only. With any symbolic dim
// the pass records nothing and counts "skipped (symbolic shapes)"; bind the
// batch first (friction run --batch, or the zoo's batch=B knob).
//
// The pass only annotates; the graph's values are unchanged. Metadata:
//   memory.values (strings), memory.offsets, memory.sizes (ints),
//   memory.within (strings: the Concat result a value lies in, or ""),
//   memory.arena_bytes, memory.naive_bytes (int)
// Stats: "values planned", "arena bytes", "naive bytes" (no reuse), and
// "peak live bytes" (the largest sum of simultaneously live values: the lower
// bound any plan needs), "concat inputs in place".
#include <algorithm>
#include <unordered_set>

#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"
#include "passes/Pass.h"

namespace friction {
namespace {

constexpr int64_t kAlign = 64;
int64_t alignUp(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

struct Buffer {
  const Value* value;
  int64_t size;   // bytes, unaligned
  int def, last;  // live interval in node indices, inclusive
  int64_t offset = -1;
  Buffer* host = nullptr;  // a Concat input in place: lies in host's bytes at hostOffset
  int64_t hostOffset = 0;
};

int64_t bytesOf(const Value* v) { return *v->shape().numel() * int64_t(dtypeSize(v->dtype())); }

// Places the inputs of Concats whose inputs are contiguous blocks of the result inside the result's buffer.
void placeConcatInputsInPlace(const Graph& g, std::vector<Buffer>& bufs, std::unordered_map<const Value*, int>& index,
                              PassContext* stats) {
  auto writtenByANode = [](const Value* v) {
    const Node* p = v->producer();
    return p && p->numOutputs() == 1 && p->op() != "Constant" && p->op() != "Concat" && !hasTrait(*p, OpTrait::View);
  };
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    auto host = index.find(n.output(0));
    if (n.op() != "Concat" || host == index.end()) continue;
    const Shape& ys = n.output(0)->shape();
    int64_t axis = n.attrInt("axis", 0);
    if (axis < 0) axis += int64_t(ys.rank());
    bool contiguous = axis >= 0 && axis < int64_t(ys.rank());
    for (int64_t d = 0; contiguous && d < axis; ++d) contiguous = ys[size_t(d)].value == 1;
    if (!contiguous) continue;
    Buffer& h = bufs[size_t(host->second)];
    std::unordered_set<const Value*> seen;
    int64_t offset = 0;
    for (const Value* in : n.inputs()) {
      auto it = in ? index.find(in) : index.end();
      if (it != index.end() && seen.insert(in).second && offset % kAlign == 0 && writtenByANode(in) &&
          !bufs[size_t(it->second)].host) {
        Buffer& m = bufs[size_t(it->second)];
        m.host = &h, m.hostOffset = offset;
        h.def = std::min(h.def, m.def), h.last = std::max(h.last, m.last);
        if (stats) stats->count("concat inputs in place");
      }
      offset += in ? bytesOf(in) : 0;
    }
  }
}

// The plan of g's top-level values, into its metadata, counted in `stats` unless null; false (and no plan) where
// a shape is symbolic.
bool planGraph(Graph& g, PassContext* stats) {
  for (const char* k : {"memory.values", "memory.offsets", "memory.sizes", "memory.within", "memory.arena_bytes",
                        "memory.naive_bytes"})
    g.metadata().erase(k);
  std::unordered_map<const Value*, int> index;  // value -> buffers index
  std::vector<Buffer> bufs;
  std::vector<const Value*> outputs = {g.outputs().begin(), g.outputs().end()};
  auto isOutput = [&](const Value* v) { return std::find(outputs.begin(), outputs.end(), v) != outputs.end(); };
  const auto& nodes = g.nodes();
  for (int i = 0; i < int(nodes.size()); ++i) {
    const Node& n = *nodes[i];
    for (const Value* in : n.inputs())
      if (auto it = index.find(in); in && it != index.end()) bufs[it->second].last = i;
    if (n.op() == "Constant") continue;
    for (const Value* v : n.outputs()) {
      if (isOutput(v)) continue;
      if (!v->shape().hasRank() || !v->shape().isStatic()) return false;
      index[v] = int(bufs.size());
      bufs.push_back({v, bytesOf(v), i, i});
    }
  }
  placeConcatInputsInPlace(g, bufs, index, stats);

  // Largest first; among equals, earliest definition, so the plan is deterministic.
  std::vector<Buffer*> order;
  for (auto& b : bufs)
    if (!b.host) order.push_back(&b);
  std::stable_sort(order.begin(), order.end(), [](const Buffer* a, const Buffer* b) { return a->size > b->size; });
  std::vector<Buffer*> placed;
  int64_t arena = 0, naive = 0;
  for (const Buffer& b : bufs) naive += alignUp(b.size);
  for (Buffer* b : order) {
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of live-overlapping buffers
    for (const Buffer* q : placed)
      if (q->def <= b->last && b->def <= q->last) busy.push_back({q->offset, q->offset + alignUp(q->size)});
    std::sort(busy.begin(), busy.end());
    // Best fit: the smallest gap that holds b; else the end of the busy ranges.
    int64_t need = alignUp(b->size), cursor = 0, best = -1, bestGap = INT64_MAX;
    for (auto [lo, hi] : busy) {
      if (lo - cursor >= need && lo - cursor < bestGap) best = cursor, bestGap = lo - cursor;
      cursor = std::max(cursor, hi);
    }
    b->offset = best >= 0 ? best : cursor;
    arena = std::max(arena, b->offset + need);
    placed.push_back(b);
  }
  for (Buffer& b : bufs)
    if (b.host) b.offset = b.host->offset + b.hostOffset;

  // Peak of simultaneously live bytes, by a sweep over node indices.
  std::vector<int64_t> delta(nodes.size() + 1, 0);
  for (const auto& b : bufs)
    if (!b.host) delta[b.def] += alignUp(b.size), delta[b.last + 1] -= alignUp(b.size);
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) peak = std::max(peak, live += d);

  std::vector<std::string> names, within;
  std::vector<int64_t> offsets, sizes;
  for (const auto& b : bufs) {
    names.push_back(b.value->name());
    offsets.push_back(b.offset);
    sizes.push_back(b.size);
    within.push_back(b.host ? b.host->value->name() : "");
  }
  g.metadata()["memory.values"] = names;
  g.metadata()["memory.offsets"] = offsets;
  g.metadata()["memory.sizes"] = sizes;
  g.metadata()["memory.within"] = within;
  g.metadata()["memory.arena_bytes"] = arena;
  g.metadata()["memory.naive_bytes"] = naive;
  if (stats) {
    stats->count("values planned", int64_t(bufs.size()));
    stats->count("arena bytes", arena);
    stats->count("naive bytes", naive);
    stats->count("peak live bytes", peak);
  }
  return true;
}

}  // namespace

void planMemory(Graph& g, PassContext& ctx) {
  if (!planGraph(g, &ctx)) {
    ctx.count("skipped (symbolic shapes)");
    return;
  }
  std::unordered_set<const Graph*> bodies;
  for (const auto& n : g.nodes()) {
    auto region = FusedRegion::of(*n);
    if (!region || region->kind() != RegionKind::Pattern || !bodies.insert(&region->body()).second) continue;
    // The body is the node's own (shared with the other instances): planned in place.
    if (planGraph(*std::get<std::shared_ptr<Graph>>(*n->findAttr("body")), nullptr))
      ctx.count("pattern bodies planned");
  }
}

}  // namespace friction
