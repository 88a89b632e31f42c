// dedup-patterns: finds the repeated blocks of a deep model and turns every
// instance into a `Fused` node of kind "pattern" whose body graph is shared by
// all instances of one pattern, so codegen compiles each pattern once.
//
// How (linear in graph size, no all-pairs comparison):
//  1. Every top-level node except Constant nodes gets a structural id: op,
//     attributes (Fused bodies printed structurally), input/output types
//     (symbolic dims included), and its wiring as relative offsets to the
//     producers of its inputs. Float constants count by type only (weights of
//     one shape are the same position); integer constants (shapes, axes) by
//     value, since they decide shapes. Ids are interned strings, so equal ids
//     mean equal structure (no hash collisions).
//  2. In the node sequence, the distance to the next node with the same id,
//     histogrammed, gives candidate periods p. For each (most frequent first),
//     a linear scan finds runs where id[t] == id[t+p]: k >= 2 consecutive
//     isomorphic segments. The segment phase is the one whose boundaries cut
//     the fewest edges (difference array over residues, O(edges + p)).
//  3. Each segment gets an exact, position-independent key (node ids plus
//     wiring as internal refs / external input slots, weight tying included);
//     neighbours with an equal key extend the run (e.g. a first block whose
//     input comes from further away). Equal keys form one pattern.
//  4. Segments are contiguous in topological order, so contracting one into a
//     node cannot make a cycle. Weights and other external values become node
//     inputs (body inputs in first-use order); integer constants are copied
//     into the body. Body outputs are the union, over instances, of values
//     used after the instance.
// Results: stats "patterns", "instances", "nodes covered", and metadata
// "dedup.patterns" = ["<hash>:<instances>:<nodes per instance>", ...].
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/FusedRegion.h"
#include "ir/OpRegistry.h"
#include "ir/Structural.h"
#include "passes/Pass.h"
#include "passes/PassUtil.h"

namespace friction {
namespace {

// Integer constants are structure (isStructuralConst): compared by value and copied into the body.

// Structure keeps tracked contents: shape arithmetic decides shapes.
const StructureOptions kStructure{/*hashTensors=*/false, /*knownContents=*/true};

// Op, attributes (Fused bodies structurally) and types of a node, without
// its wiring; integer constant inputs by value, weights by type.
std::string baseSignature(const Node& n) {
  std::string s = n.op() + "|";
  for (const auto& [name, a] : n.attrs())
    if (name != "provenance") s += name + "=" + structuralAttribute(a, kStructure) + ";";
  s += "|";
  for (const Value* in : n.inputs()) {
    if (!in) {
      s += "_,";
      continue;
    }
    s += structuralType(in, kStructure);
    if (isStructuralConst(in)) s += "=" + structuralAttribute(*constantData(in), kStructure);
    else if (constantData(in)) s += "w";
    s += ",";
  }
  s += "->";
  for (const Value* out : n.outputs()) s += structuralType(out, kStructure) + ",";
  return s;
}

class Interner {
 public:
  int operator()(const std::string& s) { return ids_.emplace(s, int(ids_.size())).first->second; }

 private:
  std::unordered_map<std::string, int> ids_;
};

struct Pattern {
  std::string key;
  int length = 0;
  std::vector<int> starts;  // sequence positions of its instances
};

class Dedup {
 public:
  Dedup(Graph& g, PassContext& ctx) : g_(g), ctx_(ctx) {}

  void run() {
    g_.metadata().erase("dedup.patterns");
    collect();
    findRuns();
    rewrite();
  }

 private:
  void collect() {
    Interner baseIds, wiredIds;
    for (const auto& n : g_.nodes()) {
      if (n->op() == "Constant") continue;  // its output is a constant input of whoever uses it
      pos_[n.get()] = int(seq_.size());
      seq_.push_back(n.get());
    }
    std::unordered_map<const Value*, int> graphInput;
    for (size_t i = 0; i < g_.inputs().size(); ++i) graphInput[g_.inputs()[i]] = int(i);
    base_.resize(seq_.size());
    baseHash_.resize(seq_.size());
    id_.resize(seq_.size());
    int unique = 0;
    for (size_t i = 0; i < seq_.size(); ++i) {
      const Node& n = *seq_[i];
      // Earlier patterns are not nested into new ones: give them ids that never repeat.
      if (auto region = FusedRegion::of(n); region && region->kind() == RegionKind::Pattern) {
        base_[i] = baseIds("unique#" + std::to_string(unique));
        id_[i] = wiredIds("unique#" + std::to_string(unique++));
        continue;
      }
      std::string sig = baseSignature(n);
      base_[i] = baseIds(sig);
      baseHash_[i] = fnv1a64(sig);
      std::string w = std::to_string(base_[i]) + "|";
      for (const Value* in : n.inputs()) {
        if (!in || constantData(in)) w += "c,";
        else if (auto it = pos_.find(in->producer()); in->producer() && it != pos_.end())
          w += std::to_string(int(i) - it->second) + "." + std::to_string(in->producerIndex()) + ",";
        else if (auto gi = graphInput.find(in); gi != graphInput.end()) w += "g" + std::to_string(gi->second) + ",";
        else w += "?,";
      }
      id_[i] = wiredIds(w);
    }
    covered_.assign(seq_.size(), false);
  }

  // Exact, position-independent key of the segment [s, s+p): node ids and
  // wiring as internal refs or external slots (first-use order).
  // With `portable`, nodes are named by a hash of their signature instead of
  // this graph's intern ids, so the same pattern hashes alike in any graph.
  std::string key(int s, int p, bool portable = false) const {
    std::ostringstream os;
    std::unordered_map<const Value*, int> slot;
    for (int i = s; i < s + p; ++i) {
      const Node& n = *seq_[i];
      if (portable) os << hex64(baseHash_[i]) << "(";
      else os << base_[i] << "(";
      for (const Value* in : n.inputs()) {
        if (!in) os << "_";
        else if (isStructuralConst(in)) os << "k";
        else if (auto it = pos_.find(in->producer()); in->producer() && it != pos_.end() && it->second >= s &&
                                                       it->second < i)
          os << "i" << (it->second - s) << "." << in->producerIndex();
        else os << "x" << slot.emplace(in, int(slot.size())).first->second;
        os << ",";
      }
      os << ")";
    }
    return os.str();
  }

  bool free(int s, int p) const {
    if (s < 0 || s + p > int(seq_.size())) return false;
    for (int i = s; i < s + p; ++i)
      if (covered_[i]) return false;
    return true;
  }

  // (cuts per boundary, phase) for the phases in [0, p) whose segment
  // boundaries cut the fewest edges of the span [a, end): at most 8, fewest first.
  std::vector<std::pair<double, int>> bestPhases(int a, int end, int p) const {
    std::vector<int64_t> diff(p + 1, 0);
    for (int v = a; v < end; ++v)
      for (const Value* in : seq_[v]->inputs()) {
        if (!in || !in->producer()) continue;
        auto it = pos_.find(in->producer());
        if (it == pos_.end() || it->second < a) continue;
        int u = it->second, len = v - u;
        if (len >= p) continue;  // cut by every phase
        // Boundary b cuts it when u < b <= v: residues (u-a+1 .. v-a) mod p, a cyclic range.
        int lo = (u - a + 1) % p, hi = lo + len;  // [lo, hi)
        if (hi <= p) {
          diff[lo]++, diff[hi]--;
        } else {
          diff[lo]++, diff[p]--;
          diff[0]++, diff[hi - p]--;
        }
      }
    std::vector<std::pair<double, int>> cuts;  // per boundary inside the span: phases have more or fewer
    int64_t c = 0;
    for (int r = 0; r < p; ++r) {
      c += diff[r];
      int first = r == 0 ? p : r;  // boundaries at a + first + m*p, strictly inside (a, end)
      int64_t boundaries = first < end - a ? (end - a - first - 1) / p + 1 : 0;
      if (a + r + p <= end) cuts.push_back({boundaries ? double(c) / double(boundaries) : 0.0, r});
    }
    std::stable_sort(cuts.begin(), cuts.end(), [](auto x, auto y) { return x.first < y.first; });
    if (cuts.size() > 8) cuts.resize(8);
    return cuts;
  }

  // `count` segments from s0, plus neighbours with the same exact key.
  std::vector<int> extend(int s0, int count, int p) const {
    std::vector<int> starts;
    for (int m = 0; m < count; ++m) starts.push_back(s0 + m * p);
    std::string first = key(starts.front(), p);
    while (free(starts.front() - p, p) && key(starts.front() - p, p) == first) starts.insert(starts.begin(), starts.front() - p);
    std::string last = key(starts.back(), p);
    while (free(starts.back() + p, p) && key(starts.back() + p, p) == last) starts.push_back(starts.back() + p);
    return starts;
  }

  void addRun(int a, int end, int p) {
    // The phase that gathers the most instances (a first block fed from
    // elsewhere joins by its exact key), then the fewest cut edges, then a
    // segment starting at a weighted op (Conv, MatMul, LayerNorm, ...: blocks
    // of a plain chain are ambiguous otherwise).
    std::vector<int> starts;
    std::tuple<size_t, double, bool> best{0, 0.0, false};
    for (auto [cuts, r] : bestPhases(a, end, p)) {
      std::vector<int> s = extend(a + r, (end - a - r) / p, p);
      bool weighted = false;
      for (const Value* in : seq_[s.front()]->inputs()) weighted |= in && constantData(in) && !isStructuralConst(in);
      std::tuple<size_t, double, bool> score{s.size(), -cuts, weighted};
      if (s.size() >= 2 && score > best) best = score, starts = std::move(s);
    }
    for (int s : starts) {
      if (!free(s, p)) continue;
      std::string k = key(s, p);
      auto [it, added] = byKey_.emplace(k, int(patterns_.size()));
      if (added) patterns_.push_back({k, p, {}});
      patterns_[it->second].starts.push_back(s);
      for (int i = s; i < s + p; ++i) covered_[i] = true;
    }
  }

  // Wiring ids first (discriminative: they find the period of deep stacks);
  // then op/type ids alone, for short runs whose first block is fed from elsewhere.
  void findRuns() {
    scan(id_);
    scan(base_);
  }

  void scan(const std::vector<int>& ids) {
    int n = int(seq_.size());
    std::unordered_map<int, int> last;
    std::unordered_map<int, int64_t> hist;
    for (int i = 0; i < n; ++i) {
      auto [it, added] = last.emplace(ids[i], i);
      if (!added) hist[i - it->second]++, it->second = i;
    }
    std::vector<std::pair<int64_t, int>> periods;  // (count, p)
    for (auto [p, c] : hist) periods.push_back({c, p});
    std::sort(periods.begin(), periods.end(), [](auto x, auto y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
    if (periods.size() > 16) periods.resize(16);  // bounded: the work stays linear
    for (auto [c, p] : periods) {
      if (2 * p > n) continue;  // two instances must fit
      for (int t = 0; t + p < n;) {
        if (covered_[t] || covered_[t + p] || ids[t] != ids[t + p]) {
          ++t;
          continue;
        }
        int a = t;
        while (t + p < n && !covered_[t] && !covered_[t + p] && ids[t] == ids[t + p]) ++t;
        if (t - a >= p) addRun(a, t + p, p);
      }
    }
  }

  bool worthIt(const Pattern& pat) const {
    if (pat.starts.size() < 2) return false;
    // A single plain op is one kernel already; a single region still gains a shared body.
    return pat.length >= 2 || seq_[pat.starts.front()]->op() == "Fused";
  }

  void rewrite() {
    struct Replacement {
      Value* from;
      Value* to;
    };
    std::vector<Replacement> replacements;
    std::unordered_set<const Node*> erased;
    std::vector<std::string> summary;
    std::vector<Node*> created;
    std::unordered_set<const Value*> graphOutputs(g_.outputs().begin(), g_.outputs().end());
    UseIndex uses(g_);
    for (const Pattern& pat : patterns_) {
      if (!worthIt(pat)) continue;
      int p = pat.length;
      auto inside = [&](const Node* n, int s) {
        auto it = pos_.find(n);
        return it != pos_.end() && it->second >= s && it->second < s + p;
      };
      // Body outputs: every (node, output) that some instance uses after itself.
      std::set<std::pair<int, int>> outs;
      for (int s : pat.starts)
        for (int i = s; i < s + p; ++i)
          for (size_t k = 0; k < seq_[i]->numOutputs(); ++k) {
            const Value* v = seq_[i]->output(k);
            bool escapes = graphOutputs.count(v) > 0;
            for (const Node* u : uses.users(v)) escapes |= !inside(u, s);
            if (escapes) outs.insert({i - s, int(k)});
          }
      if (outs.empty()) continue;  // dead instances: leave them to eliminate-dead-code
      std::string hash = hex64(fnv1a64(key(pat.starts.front(), p, true)));
      auto body = buildBody(pat.starts.front(), p, outs, "pattern_" + hash);
      summary.push_back(hash + ":" + std::to_string(pat.starts.size()) + ":" + std::to_string(p));
      ctx_.count("patterns");
      for (size_t j = 0; j < pat.starts.size(); ++j) {
        int s = pat.starts[j];
        std::vector<Value*> inputs;
        std::unordered_set<const Value*> seen;
        std::vector<std::string> provenance, outNames;
        for (int i = s; i < s + p; ++i) {
          provenance.push_back(seq_[i]->name());
          erased.insert(seq_[i]);
          for (Value* in : seq_[i]->inputs())
            if (in && !isStructuralConst(in) && !inside(in->producer(), s) && seen.insert(in).second)
              inputs.push_back(in);
        }
        for (auto [i, k] : outs) outNames.push_back(g_.freshName(seq_[s + i]->output(k)->name()));
        auto attrs = fusedAttrs(body, RegionKind::Pattern, provenance);
        attrs["pattern"] = hash;
        Node* f = g_.addNode("Fused", inputs, outNames, attrs, "pattern_" + hash.substr(0, 8) + "_" + std::to_string(j));
        inferNode(*f);
        int o = 0;
        for (auto [i, k] : outs) replacements.push_back({seq_[s + i]->output(k), f->output(o++)});
        created.push_back(f);
        ctx_.count("instances");
        ctx_.count("nodes covered", p);
      }
    }
    if (!created.empty()) {
      // Rewire after all regions exist: a region's input may be another region's old output.
      UseIndex rewired(g_);
      for (auto& r : replacements) rewired.replaceAllUses(r.from, r.to);
      g_.eraseNodes([&](const Node& n) { return erased.count(&n) > 0; });
      g_.topologicalSort();
    }
    ctx_.stats.try_emplace("patterns", 0);
    ctx_.stats.try_emplace("instances", 0);
    ctx_.stats.try_emplace("nodes covered", 0);
    if (!summary.empty()) g_.metadata()["dedup.patterns"] = summary;
  }

  // The shared body, built from one instance: external values become inputs in
  // first-use order, integer constants are copied in.
  std::shared_ptr<Graph> buildBody(int s, int p, const std::set<std::pair<int, int>>& outs, const std::string& name) {
    auto body = std::make_shared<Graph>(name);
    body->setOpset(g_.opset());
    std::unordered_map<const Value*, Value*> map;
    for (int i = s; i < s + p; ++i) {
      const Node& n = *seq_[i];
      std::vector<Value*> ins;
      for (Value* in : n.inputs()) {
        if (!in) {
          ins.push_back(nullptr);
          continue;
        }
        auto it = map.find(in);
        if (it == map.end()) {
          Value* b = isStructuralConst(in) ? body->addInitializer(in->name(), *constantData(in))
                                           : body->addInput(in->name(), in->type());
          b->setKnownContents(in->knownContents());
          it = map.emplace(in, b).first;
        }
        ins.push_back(it->second);
      }
      std::vector<std::string> names;
      for (const Value* out : n.outputs()) names.push_back(out->name());
      Node* m = body->addNode(n.op(), ins, names, n.attrs(), n.name());
      for (size_t k = 0; k < n.numOutputs(); ++k) {
        m->output(k)->setType(n.output(k)->type());
        m->output(k)->setKnownContents(n.output(k)->knownContents());
        map[n.output(k)] = m->output(k);
      }
    }
    for (auto [i, k] : outs) body->addOutput(map.at(seq_[s + i]->output(k)));
    return body;
  }

  Graph& g_;
  PassContext& ctx_;
  std::vector<Node*> seq_;
  std::unordered_map<const Node*, int> pos_;
  std::vector<int> base_, id_;
  std::vector<uint64_t> baseHash_;
  std::vector<bool> covered_;
  std::vector<Pattern> patterns_;
  std::unordered_map<std::string, int> byKey_;
};

}  // namespace

void dedupPatterns(Graph& g, PassContext& ctx) { Dedup(g, ctx).run(); }

}  // namespace friction
