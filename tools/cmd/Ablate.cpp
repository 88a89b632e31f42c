// `friction ablate`: measures a model with passes switched off/on and
// attributes latency to each pass (leave-one-out, add-one-in, or Shapley
// values with pairwise interactions). Every measurement goes to the results
// store as it completes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/metrics/Attribution.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"
#include "vendor_bridge/Bridges.h"

namespace friction::cli {
namespace {

struct AblateArgs {
  std::string model, mode = "loo", db = "friction-results.db";
  std::vector<int64_t> batches = {1, 8};
  std::vector<std::string> over;  // passes to attribute (default: all)
  int permutations = 16;
  bool resume = false, json = false;
  bench::MeasureOptions measure;
};

// Measures pass subsets on demand (memoized), writing each to the store.
class Ablation {
 public:
  // `vendor`: the items are the backend's own switches, and friction's passes stay off.
  Ablation(const AblateArgs& a, std::vector<std::string> passes, bool vendor, int64_t batch,
           bench::ResultsStore& store, size_t expected)
      : a_(a), passes_(std::move(passes)), vendor_(vendor), batch_(batch), store_(store), expected_(expected),
        reference_(loadForBatch(a.model, batch)), hash_(bench::modelHash(*reference_)) {}

  double latency(metrics::PassMask mask) {
    auto it = cache_.find(mask);
    if (it != cache_.end()) return it->second;
    std::vector<std::string> off;
    std::string label;
    for (size_t p = 0; p < passes_.size(); ++p)
      if (!(mask >> p & 1)) off.push_back(passes_[p]), label += " -" + passes_[p];
    PipelineOptions o;
    bench::MeasureOptions mo = a_.measure;
    if (vendor_) {
      o.passes = {"none"};
      mo.backend = vendor::withSwitchesOff(a_.measure.backend, off);
    } else {
      o.disable = off;
    }
    bench::CellRecord r;
    r.experiment = "ablate:" + a_.mode;
    r.model = a_.model, r.modelHash = hash_, r.backend = mo.backend, r.batch = batch_;
    r.passes = bench::enabledPasses(o);
    r.cellKey = r.key(a_.measure.threads);
    auto t0 = std::chrono::steady_clock::now();
    bool cached = a_.resume && store_.hasCell(r.cellKey);
    if (cached) {
      for (const auto& c : store_.cells(r.experiment))
        if (c.cellKey == r.cellKey) r.m = c.m;
    } else {
      auto g = loadAndOptimize(a_.model, batch_, o);
      r.m = bench::measure(*g, reference_.get(), mo);
      nlohmann::json cfg{{"mode", a_.mode}, {"disabled", off}, {"vendor_switches", vendor_}, {"warmup", a_.measure.warmup},
                         {"reps", a_.measure.reps}, {"target_ci", a_.measure.targetRelCI}, {"seed", a_.measure.seed}};
      r.configJson = cfg.dump();
      store_.add(r, fingerprint_);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    elapsed_ += secs;
    size_t done = cache_.size() + 1;
    double eta = done < expected_ ? elapsed_ / double(done) * double(expected_ - done) : 0;
    std::fprintf(stderr, "[%zu/%zu] batch %ld%s: %.3f ms%s%s  (ETA %.0f s)\n", done, expected_, long(batch_),
                 label.empty() ? (vendor_ ? " all switches" : " all passes") : label.c_str(), r.m.summary.median, cached ? " (stored)" : "",
                 r.m.summary.unstable ? " UNSTABLE" : "", eta);
    return cache_[mask] = r.m.summary.median;
  }

 private:
  const AblateArgs& a_;
  std::vector<std::string> passes_;
  bool vendor_;
  int64_t batch_;
  bench::ResultsStore& store_;
  size_t expected_;
  std::unique_ptr<Graph> reference_;
  std::string hash_;
  bench::Fingerprint fingerprint_ = bench::Fingerprint::ofThisMachine();
  std::map<metrics::PassMask, double> cache_;
  double elapsed_ = 0;
};

void ablate(const AblateArgs& a) {
  // A vendor backend is ablated over its own switches (friction's passes off); friction's backends over passes.
  std::vector<std::string> switches = vendor::vendorSwitches(a.measure.backend);
  bool vendorMode = !switches.empty();
  std::vector<std::string> passes = a.over;
  if (passes.empty() && vendorMode) passes = switches;
  if (passes.empty())
    for (const auto& p : allPasses()) passes.push_back(p.name);
  for (const auto& p : passes)
    FRICTION_CHECK(vendorMode ? std::find(switches.begin(), switches.end(), p) != switches.end() : findPass(p) != nullptr,
                   vendorMode ? "'" + p + "' is not a switch of backend " + a.measure.backend : "unknown pass '" + p + "'");
  int n = int(passes.size());
  FRICTION_CHECK(n > 0 && n < 31, "ablate needs 1..30 passes");
  FRICTION_CHECK(a.mode == "loo" || a.mode == "aoi" || a.mode == "shapley", "--mode must be loo, aoi or shapley");
  bool exact = a.mode == "shapley" && n <= 6;  // 2^6 = 64 subsets; beyond, sample permutations
  size_t expected = a.mode == "shapley" ? (exact ? size_t(1) << n : size_t(a.permutations) * size_t(n) + 1) : size_t(n) + 2;

  bench::ResultsStore store(a.db);
  nlohmann::json out{{"model", a.model}, {"backend", a.measure.backend}, {"mode", a.mode}, {"passes", passes},
                     {"vendor_switches", vendorMode}, {"db", a.db}};
  for (int64_t batch : a.batches) {
    Ablation ab(a, passes, vendorMode, batch, store, expected);
    metrics::SetFunction v = [&](metrics::PassMask m) { return ab.latency(m); };
    double all = v(metrics::fullMask(n)), none = v(0);
    nlohmann::json row{{"batch", batch}, {"all_ms", all}, {"none_ms", none}};
    std::vector<double> value, err;
    if (a.mode == "loo") value = metrics::leaveOneOut(n, v);
    if (a.mode == "aoi") value = metrics::addOneIn(n, v);
    if (a.mode == "shapley" && exact) {
      value = metrics::shapleyExact(n, v);
      row["interactions_ms"] = metrics::shapleyInteractions(n, v);
    }
    if (a.mode == "shapley" && !exact) {
      auto s = metrics::shapleySampled(n, v, a.permutations, a.measure.seed);
      value = s.value, err = s.stdErr;
      row["permutations"] = s.permutations;
    }
    row["attribution_ms"] = value;
    if (!err.empty()) row["stderr_ms"] = err;
    std::vector<bench::AttributionRecord> records;
    auto record = [&](const std::string& method, const std::string& pass, double v, double e) {
      records.push_back({"ablate:" + a.mode, a.model, a.measure.backend, method, pass, batch, v, e});
    };
    for (int p = 0; p < n; ++p) record(a.mode, passes[size_t(p)], value[size_t(p)], err.empty() ? 0 : err[size_t(p)]);
    if (row.contains("interactions_ms"))
      for (int p = 0; p < n; ++p)
        for (int q = p + 1; q < n; ++q)
          record("interaction", passes[size_t(p)] + "|" + passes[size_t(q)], row["interactions_ms"][p][q], 0);
    store.setAttributions(records);
    out["batches"].push_back(row);
    if (a.json) continue;
    const char* meaning = a.mode == "loo"   ? "latency added by turning the pass off"
                          : a.mode == "aoi" ? "latency change from turning only this pass on"
                                            : "Shapley value (share of all-on minus all-off)";
    std::printf("\n%s  backend %s  batch %ld: all on %.3f ms, all off %.3f ms\n%-34s %12s %8s   (%s)\n",
                a.model.c_str(), a.measure.backend.c_str(), long(batch), all, none, "pass", "ms", "%", meaning);
    for (int p = 0; p < n; ++p)
      std::printf("%-34s %12.3f %7.1f%%%s\n", passes[size_t(p)].c_str(), value[size_t(p)], 100 * value[size_t(p)] / all,
                  err.empty() ? "" : ("  +- " + std::to_string(err[size_t(p)])).c_str());
  }
  if (a.json) std::cout << out.dump(2) << "\n";
  else std::printf("\nmeasurements stored in %s\n", a.db.c_str());
}

}  // namespace

void addAblate(CLI::App& app) {
  auto args = std::make_shared<AblateArgs>();
  auto* cmd = app.add_subcommand("ablate", "attribute latency to passes (leave-one-out, add-one-in, Shapley)");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  cmd->add_option("--backend", args->measure.backend, "backend to measure");
  cmd->add_option("--batches", args->batches, "batch sizes (comma-separated)")->delimiter(',');
  cmd->add_option("--mode", args->mode, "loo | aoi | shapley");
  cmd->add_option("--over", args->over, "passes (or, for a vendor backend, its switches) to attribute (default: all)")
      ->delimiter(',');
  cmd->add_option("--permutations", args->permutations, "sampled Shapley: permutations (more than 6 passes)");
  cmd->add_option("--db", args->db, "results store (SQLite)");
  cmd->add_flag("--resume", args->resume, "reuse cells already in the store");
  cmd->add_option("--warmup", args->measure.warmup, "warm-up runs per cell");
  cmd->add_option("--reps", args->measure.reps, "maximum measured runs per cell");
  cmd->add_option("--target-ci", args->measure.targetRelCI, "adaptive stop: CI half-width / median target");
  cmd->add_option("--max-seconds", args->measure.maxSeconds, "time budget per cell");
  cmd->add_option("--threads", args->measure.threads, "OpenMP threads");
  cmd->add_flag("!--no-check", args->measure.checkOutputs, "skip the comparison with the interpreter");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args] { ablate(*args); });
}

}  // namespace friction::cli
