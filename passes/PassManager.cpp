#include "passes/PassManager.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/Error.h"
#include "ir/TextFormat.h"
#include "ir/Verifier.h"

namespace friction {
namespace {

std::vector<std::string> splitList(const char* csv) {
  std::vector<std::string> r;
  std::stringstream ss(csv);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) r.push_back(item);
  return r;
}

const PassInfo& requirePass(const std::vector<PassInfo>& registry, const std::string& name) {
  const PassInfo* p = nullptr;
  for (const auto& q : registry)
    if (q.name == name) p = &q;
  if (!p) {
    std::string known;
    for (const auto& q : registry) known += (known.empty() ? "" : ", ") + q.name;
    throw Error("unknown pass '" + name + "' (passes: " + known + ")");
  }
  return *p;
}

}  // namespace

const std::vector<PassInfo>& allPasses() {
  static const std::vector<PassInfo> passes = {
#define FRICTION_PASS(fn, name, summary, prereq, invalidates) \
  {name, summary, splitList(prereq), splitList(invalidates), fn},
#include "passes/PassRegistry.def"
#undef FRICTION_PASS
  };
  return passes;
}

const PassInfo* findPass(const std::string& name) {
  for (const auto& p : allPasses())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<const PassInfo*> buildPipeline(const PipelineOptions& o, std::vector<std::string>* notes) {
  return buildPipelineFrom(allPasses(), o, notes);
}

std::vector<const PassInfo*> buildPipelineFrom(const std::vector<PassInfo>& registry, const PipelineOptions& o,
                                               std::vector<std::string>* notes) {
  int given = int(!o.disable.empty()) + int(!o.only.empty()) + int(!o.passes.empty());
  FRICTION_CHECK(given <= 1, "use only one of --disable, --only and --passes");
  if (o.passes == std::vector<std::string>{"none"}) return {};
  for (const auto* list : {&o.disable, &o.only, &o.passes})
    for (const auto& n : *list) requirePass(registry, n);

  std::vector<const PassInfo*> pipeline;
  if (!o.passes.empty()) {
    // Explicit order: prerequisites must come earlier.
    for (const auto& n : o.passes) {
      const PassInfo& p = requirePass(registry, n);
      for (const auto& pre : p.prerequisites) {
        bool before = std::any_of(pipeline.begin(), pipeline.end(), [&](const PassInfo* q) { return q->name == pre; });
        FRICTION_CHECK(before, "--passes: " + p.name + " needs " + pre + " to run before it");
      }
      pipeline.push_back(&p);
    }
    return pipeline;
  }
  std::set<std::string> chosen;
  if (!o.only.empty()) {
    // Add prerequisites transitively; say so, so the user knows what ran.
    std::vector<std::string> work(o.only.begin(), o.only.end());
    while (!work.empty()) {
      std::string n = work.back();
      work.pop_back();
      if (!chosen.insert(n).second) continue;
      for (const auto& pre : requirePass(registry, n).prerequisites)
        if (!chosen.count(pre)) {
          if (notes) notes->push_back(n + " needs " + pre + ": added");
          work.push_back(pre);
        }
    }
  } else {
    for (const auto& p : registry) chosen.insert(p.name);
    for (const auto& n : o.disable) chosen.erase(n);
    for (const auto& p : registry)
      if (chosen.count(p.name))
        for (const auto& pre : p.prerequisites)
          FRICTION_CHECK(chosen.count(pre), "cannot disable " + pre + ": " + p.name + " needs it (disable " + p.name +
                                                " too, or keep " + pre + ")");
  }
  for (const auto& p : registry)
    if (chosen.count(p.name)) pipeline.push_back(&p);
  return pipeline;
}

GraphStats graphStats(const Graph& g) {
  GraphStats s;
  std::set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  for (const auto& n : g.nodes()) {
    s.nodes++;
    if (n->op() == "Fused") s.fusedRegions++;
    if (n->op() != "Constant") s.kernels++;
    for (const Value* v : n->outputs())
      if (!outputs.count(v) && v->shape().isStatic())
        s.intermediateBytes += *v->shape().numel() * int64_t(dtypeSize(v->dtype()));
  }
  s.parameterBytes = int64_t(g.parameterBytes());
  return s;
}

std::vector<PassRecord> runPipeline(Graph& g, const std::vector<const PassInfo*>& pipeline, const RunOptions& o) {
  // An analysis that a later pass invalidated runs again at the end.
  std::vector<const PassInfo*> schedule = pipeline;
  std::set<const PassInfo*> rerun;
  for (size_t i = 0; i < pipeline.size(); ++i)
    for (const auto& inv : pipeline[i]->invalidates)
      for (size_t j = 0; j < i; ++j)
        if (pipeline[j]->name == inv && rerun.insert(pipeline[j]).second) schedule.push_back(pipeline[j]);
  if (!o.dumpDir.empty()) std::filesystem::create_directories(o.dumpDir);
  // Passes may replace the values a graph returns; the model's interface
  // (its output names) must survive them, so names are restored after each pass.
  std::vector<std::string> outputNames;
  for (const Value* v : g.outputs()) outputNames.push_back(v->name());
  auto restoreOutputNames = [&] {
    for (size_t i = 0; i < g.outputs().size() && i < outputNames.size(); ++i) {
      Value* v = g.outputs()[i];
      if (v->name() == outputNames[i]) continue;
      if (Value* holder = g.findValue(outputNames[i])) g.renameValue(holder, g.freshName(outputNames[i] + ".replaced"));
      g.renameValue(v, outputNames[i]);
    }
  };
  std::vector<PassRecord> records;
  for (size_t k = 0; k < schedule.size(); ++k) {
    const PassInfo& p = *schedule[k];
    PassRecord rec;
    rec.name = p.name;
    rec.before = graphStats(g);
    PassContext ctx;
    auto t0 = std::chrono::steady_clock::now();
    try {
      p.run(g, ctx);
      restoreOutputNames();
      if (o.verifyEach) verify(g);
    } catch (const Error& e) {
      throw Error("pass " + p.name + ": " + e.what());
    }
    rec.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rec.after = graphStats(g);
    rec.stats = std::move(ctx.stats);
    if (!o.dumpDir.empty()) {
      std::string prefix = (k + 1 < 10 ? "0" : "") + std::to_string(k + 1) + "-";
      std::ofstream(std::filesystem::path(o.dumpDir) / (prefix + p.name + ".fir")) << printGraph(g);
    }
    if (o.afterPass) o.afterPass(rec, g);
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace friction
