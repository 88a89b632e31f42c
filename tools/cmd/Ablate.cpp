// `friction ablate`: measures a model with passes switched off/on and
// attributes latency to each pass (leave-one-out, add-one-in, or Shapley
// values with pairwise interactions), each with a CI over interleaved rounds.
// Per batch, every pass subset the attribution needs is compiled and checked
// first, then all are timed together in rounds (benchmarks/Rounds.h) with the
// all-on program a second time as an A/A control, then the attribution is
// computed round by round. Everything goes to the results store.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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
  bool resume = false, json = false, aaControl = true;
  double minEffect = metrics::kDefaultMinEffect;  // relative to the all-on latency
  bench::MeasureOptions measure;
  bench::RoundsOptions rounds;
};

// The attribution of one method: per pass (and, for exact Shapley, per pair) from one set function.
struct Attribution {
  std::vector<double> value;
  std::vector<std::vector<double>> interactions;  // exact Shapley only
};

class Method {
 public:
  Method(const AblateArgs& a, int n) : a_(a), n_(n), exact_(a.mode == "shapley" && n <= 6) {}
  bool exact() const { return exact_; }
  Attribution operator()(const metrics::SetFunction& v) const {
    Attribution r;
    if (a_.mode == "loo") r.value = metrics::leaveOneOut(n_, v);
    if (a_.mode == "aoi") r.value = metrics::addOneIn(n_, v);
    if (a_.mode == "shapley" && exact_) r.value = metrics::shapleyExact(n_, v), r.interactions = metrics::shapleyInteractions(n_, v);
    if (a_.mode == "shapley" && !exact_) r.value = metrics::shapleySampled(n_, v, a_.permutations, a_.measure.seed).value;
    return r;
  }
  // The subsets the method evaluates (with all-on and all-off), found by running it on a recording function.
  std::set<metrics::PassMask> subsets() const {
    std::set<metrics::PassMask> masks = {metrics::fullMask(n_), 0};
    (*this)([&](metrics::PassMask m) {
      masks.insert(m);
      return 0.0;
    });
    return masks;
  }

 private:
  const AblateArgs& a_;
  int n_;
  bool exact_;
};

// One pass subset of one batch: its pipeline (or vendor switches), program and store row.
struct Config {
  metrics::PassMask mask = 0;
  std::string label;  // "all passes", "-a -b"
  std::vector<std::string> off;
  PipelineOptions pipeline;
  bench::CellRecord record;
  std::unique_ptr<Graph> graph;
  size_t cell = 0;  // index of the prepared cell that measures its program
};

// Median and CI over rounds of per-round values; measurable when the CI clears 0 by `margin` (ms: the
// smallest effect worth reporting, minEffect x the all-on latency).
struct Estimate {
  metrics::RoundEstimate e;
  double margin = 0;
  bool measurable() const { return e.ci.clears(0, margin); }
};

void ablateBatch(const AblateArgs& a, const std::vector<std::string>& passes, bool vendor, int64_t batch,
                 bench::ResultsStore& store, nlohmann::json& out) {
  const int n = int(passes.size());
  Method method(a, n);
  std::unique_ptr<Graph> reference = loadForBatch(a.model, batch);
  std::string hash = bench::modelHash(*reference);
  std::string experiment = "ablate:" + a.mode;
  std::string group = experiment + "|" + hash + "|" + a.measure.backend + "|" + std::to_string(batch) + "|t" +
                      std::to_string(a.measure.threads);

  std::vector<Config> configs;
  for (metrics::PassMask mask : method.subsets()) {
    Config c;
    c.mask = mask;
    for (size_t p = 0; p < passes.size(); ++p)
      if (!(mask >> p & 1)) c.off.push_back(passes[p]), c.label += " -" + passes[p];
    c.label = c.label.empty() ? (vendor ? "all switches" : "all passes") : c.label.substr(1);
    PipelineOptions& o = c.pipeline;
    bench::CellRecord& r = c.record;
    r.backend = vendor::withThreads(a.measure.backend, a.measure.threads);  // the row records what ran
    if (vendor) o.passes = {"none"}, r.backend = vendor::withSwitchesOff(r.backend, c.off);
    else o.disable = c.off;
    r.experiment = experiment, r.model = a.model, r.modelHash = hash, r.batch = batch;
    r.passes = bench::enabledPasses(o);
    r.cellKey = r.key(a.measure.threads);
    r.configJson = nlohmann::json{{"mode", a.mode}, {"disabled", c.off}, {"vendor_switches", vendor},
                                  {"warmup", a.measure.warmup}, {"rounds", a.rounds.rounds},
                                  {"reps_per_round", a.rounds.repsPerRound}, {"target_ci", a.rounds.targetRelCI},
                                  {"seed", a.measure.seed}, {"epochs", a.rounds.epochs}}.dump();
    c.graph = loadAndOptimize(a.model, batch, o);
    configs.push_back(std::move(c));
  }
  // The A/A control: the all-on program compiled and measured a second time, under its own key.
  const size_t all = configs.size() - 1;  // the full mask sorts last
  if (a.aaControl) {
    Config c;
    c.mask = configs[all].mask, c.label = configs[all].label + " (A/A)", c.off = configs[all].off;
    c.pipeline = configs[all].pipeline;
    c.record = configs[all].record;
    bench::markAAControl(c.record);
    c.graph = loadAndOptimize(a.model, batch, c.pipeline);
    configs.push_back(std::move(c));
  }

  bool resumed = a.resume && std::all_of(configs.begin(), configs.end(), [&](const Config& c) {
    return store.hasCell(c.record.cellKey);
  });
  std::vector<std::vector<double>> roundValues;  // per configuration
  if (resumed) {
    std::map<std::string, bench::CellRecord> stored;
    for (auto& r : store.cells(experiment))
      if (r.m.group == group) stored[r.cellKey] = std::move(r);
    for (Config& c : configs) {
      auto it = stored.find(c.record.cellKey);
      resumed = resumed && it != stored.end() && !it->second.m.roundSizes.empty();
      if (resumed) c.record.m = it->second.m;
    }
    if (!resumed) std::fprintf(stderr, "batch %ld: stored cells are incomplete or not from rounds; measuring again\n", long(batch));
  }
  if (resumed) {
    for (Config& c : configs) roundValues.push_back(metrics::blockMedians(c.record.m.samplesMs, c.record.m.roundSizes));
    std::fprintf(stderr, "batch %ld: %zu configurations already stored (--resume)\n", long(batch), configs.size());
  } else {
    // Compile and check every configuration before any timing; identical programs (a pass that changed
    // nothing) share one compiled program, except the A/A control, which is its own.
    std::vector<Tensor> expected;
    if (a.measure.checkOutputs) expected = bench::referenceOutputs(*reference, *configs[all].graph, a.measure.seed);
    std::vector<std::unique_ptr<bench::PreparedCell>> cells;
    std::map<std::string, size_t> byProgram;
    for (size_t k = 0; k < configs.size(); ++k) {
      Config& c = configs[k];
      std::string program = c.record.backend + "|" + bench::modelHash(*c.graph);
      bool control = k > all;
      auto it = byProgram.find(program);
      if (it != byProgram.end() && !control) {
        c.cell = it->second;
        continue;
      }
      bench::MeasureOptions mo = a.measure;
      mo.backend = c.record.backend;
      std::fprintf(stderr, "[%zu/%zu] batch %ld: compiling %s\n", k + 1, configs.size(), long(batch), c.label.c_str());
      cells.push_back(bench::prepare(*c.graph, a.measure.checkOutputs ? &expected : nullptr, mo, c.label));
      c.cell = cells.size() - 1;
      if (!control) byProgram[program] = c.cell;
    }
    std::vector<bench::PreparedCell*> timed;
    for (auto& c : cells) timed.push_back(c.get());
    bench::RoundsOptions ro = a.rounds;
    ro.seed = a.measure.seed;
    std::fprintf(stderr, "batch %ld: timing %zu programs (%zu configurations) in interleaved rounds\n", long(batch),
                 cells.size(), configs.size());
    bench::RoundsResult rounds = measureGroup(timed, ro, group, "batch " + std::to_string(batch) + ":");
    std::vector<bench::CellRecord> rows;
    for (Config& c : configs) {
      c.record.m = cells[c.cell]->m;
      rows.push_back(c.record);
      roundValues.push_back(rounds.roundValues(c.cell));
    }
    storeGroup(store, rows, rounds, group);
  }

  // Per round, the attribution of that round's latencies; then the median over rounds with its CI.
  const size_t nRounds = roundValues[all].size();
  std::vector<Attribution> perRound;
  for (size_t r = 0; r < nRounds; ++r) {
    std::map<metrics::PassMask, double> table;
    for (size_t k = 0; k <= all; ++k) table[configs[k].mask] = roundValues[k][r];
    perRound.push_back(method(metrics::tableFunction(table)));
  }
  const double margin = a.minEffect * metrics::median(roundValues[all]);
  auto estimate = [&](auto pick) {
    std::vector<double> v;
    for (const auto& att : perRound) v.push_back(pick(att));
    return Estimate{metrics::medianOverRounds(v, a.measure.seed), margin};
  };
  std::vector<Estimate> value;
  for (int p = 0; p < n; ++p) value.push_back(estimate([p](const Attribution& x) { return x.value[size_t(p)]; }));
  auto latency = [&](size_t k) { return configs[k].record.m.summary.median; };
  // Leave-one-out and add-one-in compare one subset with all-on (all-off): when the pass left the program as it
  // was, the two are one program, measured once, and the value is exactly 0.
  auto unchanged = [&](int p) {
    if (resumed || a.mode == "shapley") return false;
    metrics::PassMask base = a.mode == "loo" ? metrics::fullMask(n) : 0, with = base ^ (metrics::PassMask(1) << p);
    auto index = [&](metrics::PassMask m) {
      for (size_t k = 0; k <= all; ++k)
        if (configs[k].mask == m) return configs[k].cell;
      return size_t(-1);
    };
    return index(base) == index(with);
  };

  nlohmann::json row{{"batch", batch}, {"all_ms", latency(all)}, {"none_ms", latency(0)}, {"rounds", nRounds},
                     {"min_effect_ms", margin}};
  std::vector<bench::AttributionRecord> records;
  std::vector<double> stdErr(size_t(n), 0);
  auto record = [&](const std::string& how, const std::string& pass, const Estimate& e, double err = 0) {
    records.push_back(
        {experiment, a.model, a.measure.backend, how, pass, batch, e.e.value, err, e.e.ci.low, e.e.ci.high, e.margin});
  };
  if (a.mode == "shapley" && !method.exact()) {  // the permutations' own sampling error, beside the rounds' CI
    std::map<metrics::PassMask, double> medians;
    for (size_t k = 0; k <= all; ++k) medians[configs[k].mask] = latency(k);
    auto s = metrics::shapleySampled(n, metrics::tableFunction(medians), a.permutations, a.measure.seed);
    row["stderr_ms"] = s.stdErr, row["permutations"] = s.permutations;
    for (int p = 0; p < n; ++p) stdErr[size_t(p)] = s.stdErr[size_t(p)];
  }
  for (int p = 0; p < n; ++p) {
    row["attribution_ms"].push_back(value[size_t(p)].e.value);
    row["attribution_ci_ms"].push_back({value[size_t(p)].e.ci.low, value[size_t(p)].e.ci.high});
    row["measurable"].push_back(value[size_t(p)].measurable());
    row["program_unchanged"].push_back(unchanged(p));
    record(a.mode, passes[size_t(p)], value[size_t(p)], stdErr[size_t(p)]);
  }
  if (method.exact() && a.mode == "shapley") {
    row["interactions_ms"] = nlohmann::json::array();
    for (int p = 0; p < n; ++p) {
      nlohmann::json line = nlohmann::json::array();
      for (int q = 0; q < n; ++q) {
        Estimate e = estimate([p, q](const Attribution& x) { return x.interactions[size_t(p)][size_t(q)]; });
        line.push_back(e.e.value);
        if (q > p) record("interaction", passes[size_t(p)] + "|" + passes[size_t(q)], e);
      }
      row["interactions_ms"].push_back(line);
    }
  }
  nlohmann::json aaJson;
  std::string aaLine;
  if (a.aaControl) {
    metrics::PairedRatio aa =
        metrics::pairedRatio(roundValues.back(), roundValues[all], a.measure.seed, 2000, 0.95, a.minEffect);
    aaJson = {{"ratio", aa.ratio}, {"ci", {aa.ci.low, aa.ci.high}}, {"false_difference", aa.direction != 0}};
    row["aa_control"] = aaJson;
    char buf[256];
    std::snprintf(buf, sizeof buf, "A/A control (all-on compiled twice): ratio %.3f, 95%% CI %.3f-%.3f: %s", aa.ratio,
                  aa.ci.low, aa.ci.high,
                  aa.direction ? "FALSE DIFFERENCE: the protocol reports a difference that is not there; distrust "
                                 "effects of this size"
                               : "no false difference");
    aaLine = buf;
  }
  store.setAttributions(records);
  out["batches"].push_back(row);
  if (a.json) return;
  const char* meaning = a.mode == "loo"   ? "latency added by turning the pass off"
                        : a.mode == "aoi" ? "latency change from turning only this pass on"
                                          : "Shapley value (share of all-on minus all-off)";
  std::printf("\n%s  backend %s  batch %ld: all on %.3f ms, all off %.3f ms, %zu interleaved rounds; effects within "
              "+-%.3f ms (%.0f%%) are not reported\n%-34s %10s %8s  %-21s (%s)\n",
              a.model.c_str(), a.measure.backend.c_str(), long(batch), latency(all), latency(0), nRounds, margin,
              100 * a.minEffect, "pass", "ms", "%", "95% CI (ms)", meaning);
  for (int p = 0; p < n; ++p) {
    const Estimate& e = value[size_t(p)];
    std::printf("%-34s %10.3f %7.1f%%  [%8.3f, %8.3f]%s\n", passes[size_t(p)].c_str(), e.e.value,
                100 * e.e.value / latency(all), e.e.ci.low, e.e.ci.high,
                unchanged(p) ? "  the pass leaves this program unchanged" : e.measurable() ? "" : "  no measurable effect");
  }
  if (!aaLine.empty()) std::printf("%s\n", aaLine.c_str());
}

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

  bench::ResultsStore store(a.db);
  nlohmann::json out{{"model", a.model}, {"backend", a.measure.backend}, {"mode", a.mode}, {"passes", passes},
                     {"vendor_switches", vendorMode}, {"db", a.db}};
  for (int64_t batch : a.batches) ablateBatch(a, passes, vendorMode, batch, store, out);
  if (a.json) std::cout << out.dump(2) << "\n";
  else std::printf("\nmeasurements stored in %s\n", a.db.c_str());
}

}  // namespace

void addAblate(CLI::App& app) {
  auto args = std::make_shared<AblateArgs>();
  auto* cmd = app.add_subcommand("ablate", "attribute latency to passes (leave-one-out, add-one-in, Shapley)");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  cmd->add_option("--backend", args->measure.backend, "backend to measure");
  cmd->add_option("--batches", args->batches, "batch sizes (comma-separated)")->delimiter(',')->check(Positive);
  cmd->add_option("--mode", args->mode, "loo | aoi | shapley");
  cmd->add_option("--over", args->over, "passes (or, for a vendor backend, its switches) to attribute (default: all)")
      ->delimiter(',');
  cmd->add_option("--permutations", args->permutations, "sampled Shapley: permutations (more than 6 passes)");
  cmd->add_option("--db", args->db, "results store (SQLite)");
  cmd->add_flag("--resume", args->resume, "reuse a batch's cells when all of them are in the store");
  cmd->add_option("--warmup", args->measure.warmup, "warm-up runs per configuration (before the rounds)");
  cmd->add_option("--threads", args->measure.threads, "threads: OpenMP, and a vendor bridge's threads= option (default: the cores no other process holds)");
  cmd->add_flag("!--no-check", args->measure.checkOutputs, "skip the comparison with the interpreter (done before timing)");
  cmd->add_flag("!--no-aa", args->aaControl, "leave out the A/A control (the all-on program measured twice)");
  cmd->add_option("--seed", args->measure.seed, "seed of inputs, round orders and bootstrap");
  cmd->add_option("--min-effect", args->minEffect,
                  "smallest effect reported, relative to the all-on latency: an attribution's CI must clear 0 by "
                  "this much (default 0.02; two compiled copies of one program differ by up to ~1.5%)")
      ->check(CLI::Range(0.0, 1.0));
  addRoundsOptions(cmd, args->rounds);
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args] {
    args->measure.threads = threadsToMeasureWith(args->measure.threads);
    ablate(*args);
  });
}

}  // namespace friction::cli
