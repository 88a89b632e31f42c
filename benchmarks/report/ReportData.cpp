#include "benchmarks/report/ReportData.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "benchmarks/metrics/Paired.h"
#include "benchmarks/metrics/Ranking.h"
#include "benchmarks/metrics/Scaling.h"
#include "ir/Error.h"
#include "ir/Spec.h"
#include "passes/PassManager.h"

namespace friction::bench {
namespace {

using nlohmann::json;
using Cells = std::vector<CellRecord>;

// The labels cells are grouped by, computed once per distinct string: a large store repeats a few models and
// pass sets over up to millions of cells, and a spec parse or configLabel costs microseconds a call.
class CellLabels {
 public:
  const std::string def = enabledPasses({});
  const std::string& config(const std::string& passes) {
    return memo(configs_, passes, [&] { return configLabel(passes, def); });
  }
  const DepthVariant& depth(const std::string& model) {
    return memo(depths_, model, [&] { return depthVariant(model); });
  }

 private:
  template <typename V, typename F>
  static const V& memo(std::map<std::string, V>& m, const std::string& key, F make) {
    auto it = m.find(key);
    return it != m.end() ? it->second : m.emplace(key, make()).first->second;
  }
  std::map<std::string, std::string> configs_;
  std::map<std::string, DepthVariant> depths_;
};

// Each cell's per-round values (the medians of its round blocks), in order; nullopt when any cell was measured
// before rounds existed (one block, no rounds to resample).
std::optional<std::vector<std::vector<double>>> roundValues(const std::vector<const CellRecord*>& cells,
                                                            const ResultsStore& store) {
  std::vector<std::vector<double>> out;
  for (const CellRecord* c : cells) {
    if (c->m.roundSizes.size() < kMinPairedRounds) return std::nullopt;
    out.push_back(metrics::blockMedians(store.samplesOf(c->cellKey), c->m.roundSizes));
  }
  return out;
}

// The slope of y over ln x: phi from log latencies, delta-phi from log ratios.
double slopeOverLogBatch(const std::vector<double>& batches, const std::vector<double>& y) {
  std::vector<double> x;
  for (double b : batches) x.push_back(std::log(b));
  return metrics::fitLine(x, y).slope;
}

// Latency vs batch for each (model, backend, configuration), with friction metrics.
json batchSeries(const Cells& cells, CellLabels& labels, const ResultsStore& store) {
  std::map<std::tuple<std::string, std::string, std::string>, std::map<int64_t, const CellRecord*>> groups;
  for (const auto& c : cells) groups[{c.model, c.backend, labels.config(c.passes)}][c.batch] = &c;
  json out = json::array();
  for (const auto& [key, byBatch] : groups) {
    json s{{"model", std::get<0>(key)}, {"backend", std::get<1>(key)}, {"config", std::get<2>(key)}};
    std::vector<metrics::BatchPoint> pts;
    for (const auto& [b, c] : byBatch) {
      const auto& m = c->m.summary;
      s["points"].push_back({{"batch", b}, {"median_ms", m.median}, {"p10_ms", m.p10}, {"p90_ms", m.p90},
                             {"ci_ms", {m.medianCI.low, m.medianCI.high}}, {"unstable", m.unstable}});
      pts.push_back({double(b), m.median});
    }
    if (pts.size() >= 2) {  // batch metrics need two batches (a partial sweep may have one)
      auto bm = metrics::batchMetrics(pts);
      std::vector<const CellRecord*> series;
      std::vector<double> batches;
      for (const auto& [b, c] : byBatch) series.push_back(c), batches.push_back(double(b));
      // Measured in rounds: F(b) and phi from the medians of the round medians, with bootstrap CIs over every
      // batch's rounds. Otherwise from the cells' medians, F(b)'s interval joining the latency intervals at b
      // and b0 (conservative), phi with none.
      const auto rounds = roundValues(series, store);
      const metrics::Interval ci0 = series[0]->m.summary.medianCI;
      const double b0 = batches[0];
      for (size_t i = 0; i < bm.rows.size(); ++i) {
        const auto& r = bm.rows[i];
        json fci = json{0.0, 0.0};  // F(b0) = 0
        double friction = r.friction;
        if (rounds && i > 0) {
          auto f = metrics::statisticOverSeries(*rounds, [&](const std::vector<double>& m) {
            return std::max(0.0, 1 - r.batch * m[0] / (b0 * m[i]));
          });
          friction = f.value, fci = {f.ci.low, f.ci.high};
        } else if (i > 0) {
          const metrics::Interval ci = series[i]->m.summary.medianCI;
          double eLow = r.batch * ci0.low / (b0 * ci.high), eHigh = r.batch * ci0.high / (b0 * ci.low);
          fci = {std::max(0.0, 1 - eHigh), std::max(0.0, 1 - eLow)};
        }
        s["metrics"].push_back({{"batch", r.batch}, {"throughput", r.throughput}, {"cost_ms", r.costMs},
                                {"efficiency", r.efficiency}, {"friction", friction}, {"friction_ci", fci}});
      }
      s["phi"] = bm.phi.slope;
      if (rounds) {
        auto phi = metrics::statisticOverSeries(*rounds, [&](const std::vector<double>& m) {
          std::vector<double> logs;
          for (double v : m) logs.push_back(std::log(v));
          return slopeOverLogBatch(batches, logs);
        });
        s["phi"] = phi.value;
        s["phi_ci"] = {phi.ci.low, phi.ci.high};
      }
    }
    out.push_back(s);
  }
  return out;
}

// Model set compared between two conditions A and B: per model, its cell under each.
using CellPair = std::pair<const CellRecord*, const CellRecord*>;

// Ranks the models measured under both conditions (lower median first) and lists the pairs whose order flips
// significantly (docs/metrics.md, "Ranking inversions"), on the raw samples. Null with fewer than two models.
json compareModels(const std::map<std::string, CellPair>& models, const ResultsStore& store, double minEffect) {
  std::vector<metrics::RankedItem> items;
  std::vector<CellPair> pairs;
  for (const auto& [model, pair] : models)
    if (pair.first && pair.second) {
      items.push_back({model, store.samplesOf(pair.first->cellKey), store.samplesOf(pair.second->cellKey), {}, {}});
      pairs.push_back(pair);
    }
  if (items.size() < 2) return nullptr;
  // A condition whose cells were all measured in one group's rounds is compared pair by pair, round by round.
  auto sameRounds = [&](auto side) {
    return std::all_of(pairs.begin(), pairs.end(), [&](const CellPair& p) {
      const Measurement& m = (p.*side)->m;
      return measuredTogether(m, (pairs[0].*side)->m);
    });
  };
  bool pairedA = sameRounds(&CellPair::first), pairedB = sameRounds(&CellPair::second);
  for (size_t k = 0; k < items.size(); ++k) {
    if (pairedA) items[k].roundsA = metrics::blockMedians(items[k].samplesA, pairs[k].first->m.roundSizes);
    if (pairedB) items[k].roundsB = metrics::blockMedians(items[k].samplesB, pairs[k].second->m.roundSizes);
  }
  metrics::RankingOptions ro;
  ro.minEffect = minEffect;
  auto r = metrics::compareRankings(items, ro);
  json j{{"kendall_tau", r.kendallTau}, {"inversions", json::array()}, {"paired_a", pairedA}, {"paired_b", pairedB}};
  for (size_t i = 0; i < items.size(); ++i)
    j["items"].push_back({{"name", items[i].name}, {"median_a_ms", r.mediansA[i]}, {"median_b_ms", r.mediansB[i]},
                          {"rank_a", r.rankA[i]}, {"rank_b", r.rankB[i]}});
  for (const auto& inv : r.inversions)
    j["inversions"].push_back({{"a", items[inv.i].name}, {"b", items[inv.j].name},
                               {"ratio_a", inv.underA.ratio}, {"ci_a", {inv.underA.ci.low, inv.underA.ci.high}},
                               {"ratio_b", inv.underB.ratio}, {"ci_b", {inv.underB.ci.low, inv.underB.ci.high}}});
  return j;
}

// Items = models; condition A = all passes off, B = the default pipeline, within one backend.
json rankings(const Cells& cells, const std::string& def, const ResultsStore& store, double minEffect) {
  std::map<std::pair<std::string, int64_t>, std::map<std::string, CellPair>> groups;
  for (const auto& c : cells) {
    auto& slot = groups[{c.backend, c.batch}][c.model];
    if (c.passes.empty()) slot.first = &c;
    if (c.passes == def) slot.second = &c;
  }
  json out = json::array();
  for (const auto& [key, models] : groups) {
    json j = compareModels(models, store, minEffect);
    if (j.is_null()) continue;
    j.update({{"backend", key.first}, {"batch", key.second}, {"condition_a", "all-off"}, {"condition_b", "default"}});
    out.push_back(j);
  }
  return out;
}

// Latency (median and CI) by block count for each (family, backend, config, batch) of depth variants.
using DepthKey = std::tuple<std::string, std::string, std::string, int64_t>;
using DepthSeries = std::map<DepthKey, std::map<int64_t, const metrics::Summary*>>;
DepthSeries depthSeries(const Cells& cells, CellLabels& labels) {
  DepthSeries out;
  for (const auto& c : cells)
    if (const auto& v = labels.depth(c.model))
      out[{v->first, c.backend, labels.config(c.passes), c.batch}][v->second] = &c.m.summary;
  return out;
}

// Zoo models that differ only in depth=N: latency per added block, all-off vs default.
json depthScaling(const DepthSeries& series) {
  json out = json::array();
  for (const auto& [key, baseline] : series) {
    const auto& [family, backend, config, batch] = key;
    auto compiled = series.find({family, backend, "default", batch});
    if (config != "all-off" || compiled == series.end()) continue;
    std::vector<metrics::DepthPoint> base, comp;
    std::vector<std::pair<metrics::Interval, metrics::Interval>> cis;
    for (const auto& [n, lat] : baseline)
      if (auto it = compiled->second.find(n); it != compiled->second.end()) {
        base.push_back({double(n), lat->median}), comp.push_back({double(n), it->second->median});
        cis.push_back({lat->medianCI, it->second->medianCI});
      }
    if (base.size() < 2) continue;
    auto d = metrics::depthScaling(base, comp);
    json j{{"family", family},
           {"backend", backend},
           {"batch", batch},
           {"slope_baseline_ms", d.baseline.slope},
           {"slope_compiled_ms", d.compiled.slope},
           {"slope_ratio", d.slopeRatio}};
    for (size_t i = 0; i < base.size(); ++i)
      j["points"].push_back({{"blocks", base[i].blocks}, {"baseline_ms", base[i].latencyMs},
                             {"compiled_ms", comp[i].latencyMs}, {"speedup", d.rows[i].speedup},
                             {"baseline_ci_ms", {cis[i].first.low, cis[i].first.high}},
                             {"compiled_ci_ms", {cis[i].second.low, cis[i].second.high}},
                             {"speedup_ci", {cis[i].first.low / cis[i].second.high, cis[i].first.high / cis[i].second.low}}});
    out.push_back(j);
  }
  return out;
}

// Per executor: phi per model (from the batch series) and the latency slope per added block per depth family
// and batch. Every depth measured is fitted (docs/study.md: staged CNNs are cleaner on depth >= 4).
json executors(const json& series, const DepthSeries& depth) {
  std::map<std::string, json> byName;
  auto entry = [&](const std::string& backend, const std::string& config) -> json& {
    json& e = byName[executorName(backend, config)];
    if (e.is_null())
      e = {{"executor", executorName(backend, config)}, {"backend", backend}, {"config", config},
           {"phi", json::object()}, {"phi_ci", json::object()}, {"depth_slopes", json::array()}};
    return e;
  };
  for (const auto& s : series) {
    json& e = entry(s["backend"].get<std::string>(), s["config"].get<std::string>());
    if (s.contains("phi")) e["phi"][s["model"].get<std::string>()] = s["phi"];
    if (s.contains("phi_ci")) e["phi_ci"][s["model"].get<std::string>()] = s["phi_ci"];
  }
  for (const auto& [key, byDepth] : depth) {
    const auto& [family, backend, config, batch] = key;
    if (byDepth.size() < 2) continue;
    std::vector<double> n, lat;
    for (const auto& [blocks, summary] : byDepth) n.push_back(double(blocks)), lat.push_back(summary->median);
    auto fit = metrics::fitLine(n, lat);
    entry(backend, config)["depth_slopes"].push_back(
        {{"family", family}, {"batch", batch}, {"slope_ms", fit.slope}, {"intercept_ms", fit.intercept},
         {"r2", fit.r2}, {"blocks", n}, {"median_ms", lat}});
  }
  json out = json::array();
  for (auto& [name, e] : byName) out.push_back(std::move(e));
  return out;
}

// Each executor's model ranking against the reference executor's, at each batch and depth (models with a
// depth=N knob are compared with the other models at the same N; models without one form one group). Adds
// each executor's totals ("vs_reference") to `execs`.
json executorRankings(const Cells& cells, CellLabels& labels, const std::string& reference, json& execs,
                      const ResultsStore& store, double minEffect) {
  using Group = std::pair<int64_t, std::optional<int64_t>>;  // batch, depth
  std::map<std::string, std::map<Group, std::map<std::string, const CellRecord*>>> byExec;
  for (const auto& c : cells) {
    const auto& v = labels.depth(c.model);
    Group group{c.batch, v ? std::optional(v->second) : std::nullopt};
    byExec[executorName(c.backend, labels.config(c.passes))][group][c.model] = &c;
  }
  const auto& ref = byExec.at(reference);
  json out = json::array();
  for (auto& e : execs) {
    const std::string name = e["executor"];
    if (name == reference) continue;
    size_t inversions = 0, groups = 0;
    double tauSum = 0;
    for (const auto& [group, models] : byExec[name]) {
      auto refModels = ref.find(group);
      if (refModels == ref.end()) continue;
      std::map<std::string, CellPair> pairs;
      for (const auto& [model, cell] : models)
        if (auto r = refModels->second.find(model); r != refModels->second.end()) pairs[model] = {r->second, cell};
      json j = compareModels(pairs, store, minEffect);
      if (j.is_null()) continue;
      j.update({{"reference", reference}, {"executor", name}, {"batch", group.first},
                {"depth", group.second ? json(*group.second) : json(nullptr)}});
      inversions += j["inversions"].size();
      if (double tau = j["kendall_tau"]; !std::isnan(tau)) tauSum += tau, ++groups;
      out.push_back(j);
    }
    e["vs_reference"] = {{"reference", reference}, {"inversions", inversions}, {"groups_with_tau", groups},
                         {"mean_kendall_tau", groups ? json(tauSum / groups) : json(nullptr)}};
  }
  return out;
}

// Each executor against the reference executor, cell by cell (same model and batch): the paired ratio over
// rounds when the two cells were measured in the same rounds, else the ratio of medians with independent
// bootstraps. A cell "differs" when the ratio's CI clears 1 by minEffect. Adds each executor's summary
// ("ratios_vs_reference": how many cells, the share that differ, the share within 3% and 5% of the reference)
// to `execs`.
// Per (executor, model, batch) measured in the same rounds as the reference: the per-round log ratios.
using RoundLogRatios = std::map<std::tuple<std::string, std::string, int64_t>, std::vector<double>>;

json executorRatios(const Cells& cells, CellLabels& labels, const std::string& reference, json& execs,
                    const ResultsStore& store, double minEffect, RoundLogRatios& logRatios) {
  std::map<std::string, std::map<std::pair<std::string, int64_t>, const CellRecord*>> byExec;
  for (const auto& c : cells) byExec[executorName(c.backend, labels.config(c.passes))][{c.model, c.batch}] = &c;
  const auto& ref = byExec.at(reference);
  json out = json::array();
  for (auto& e : execs) {
    const std::string name = e["executor"];
    if (name == reference) continue;
    size_t n = 0, differing = 0, within3 = 0, within5 = 0;
    for (const auto& [key, cell] : byExec[name]) {
      auto r = ref.find(key);
      if (r == ref.end()) continue;
      const Measurement &a = cell->m, &b = r->second->m;
      std::vector<double> sa = store.samplesOf(cell->cellKey), sb = store.samplesOf(r->second->cellKey);
      bool paired = measuredTogether(a, b);
      metrics::RatioCI ratio;
      if (paired) {
        std::vector<double> ra = metrics::blockMedians(sa, a.roundSizes), rb = metrics::blockMedians(sb, b.roundSizes);
        auto p = metrics::pairedRatio(ra, rb, 0, 2000, 0.95, minEffect);
        ratio = {p.ratio, p.ci, p.direction};
        std::vector<double> logs;
        for (size_t k = 0; k < ra.size(); ++k) logs.push_back(std::log(ra[k] / rb[k]));
        logRatios[{name, key.first, key.second}] = std::move(logs);
      } else {
        ratio = metrics::medianRatioCI(sa, sb, 0, 2000, 0.95, minEffect);
      }
      n++, differing += ratio.direction != 0;
      within3 += std::abs(ratio.ratio - 1) <= 0.03, within5 += std::abs(ratio.ratio - 1) <= 0.05;
      out.push_back({{"executor", name}, {"reference", reference}, {"model", key.first}, {"batch", key.second},
                     {"ratio", ratio.ratio}, {"ci", {ratio.ci.low, ratio.ci.high}}, {"differs", ratio.direction != 0},
                     {"paired", paired}});
    }
    auto share = [n](size_t k) { return n ? json(double(k) / double(n)) : json(nullptr); };
    e["ratios_vs_reference"] = {{"cells", n}, {"differing", share(differing)}, {"within_3_percent", share(within3)},
                                {"within_5_percent", share(within5)}};
  }
  return out;
}

// Compiler friction mitigation (docs/metrics.md) of each executor against the reference, per model: S(b), the
// reference's latency over the executor's (the inverse of the paired ratio, with its CI), R(b) = S(b) / S(b0)
// at the smallest batch b0, and delta-phi = phi(executor) - phi(reference), negative when the executor's cost
// falls faster with the batch. When every batch was measured in rounds shared with the reference, R(b) and
// delta-phi (the slope of the median per-round log ratio over ln b) get bootstrap CIs over each batch's
// rounds; otherwise R(b)'s interval joins the two S intervals (conservative) and delta-phi has none.
json mitigations(const json& execRatios, const json& execs, const std::string& reference,
                 const RoundLogRatios& logRatios) {
  std::map<std::string, const json*> phis;
  for (const auto& e : execs) phis[e["executor"]] = &e["phi"];
  std::map<std::pair<std::string, std::string>, std::map<int64_t, const json*>> rows;
  for (const auto& r : execRatios) rows[{r["executor"], r["model"]}][r["batch"].get<int64_t>()] = &r;
  json out = json::array();
  for (const auto& [key, byBatch] : rows) {
    const auto& [name, model] = key;
    if (byBatch.size() < 2) continue;
    // S and its interval: the ratio is executor / reference latency.
    auto speedup = [](const json& r) {
      return std::array<double, 3>{1 / r["ratio"].get<double>(), 1 / r["ci"][1].get<double>(), 1 / r["ci"][0].get<double>()};
    };
    const auto s0 = speedup(*byBatch.begin()->second);
    std::vector<std::vector<double>> rounds;  // per batch, the per-round log ratios; empty unless all paired
    std::vector<double> batches;
    for (const auto& [batch, r] : byBatch) {
      batches.push_back(double(batch));
      if (auto it = logRatios.find({name, model, batch}); it != logRatios.end()) rounds.push_back(it->second);
    }
    const bool paired = rounds.size() == byBatch.size();
    json j{{"executor", name}, {"reference", reference}, {"model", model}, {"points", json::array()}, {"paired", paired}};
    size_t i = 0;
    for (const auto& [batch, r] : byBatch) {
      auto s = speedup(*r);
      json rci = json{1.0, 1.0};  // R(b0) = 1
      if (paired && i > 0) {  // S(b) / S(b0) = exp(m0 - mb), m the median log ratio (executor / reference)
        auto rb = metrics::statisticOverSeries(rounds, [i](const std::vector<double>& m) { return std::exp(m[0] - m[i]); });
        rci = {rb.ci.low, rb.ci.high};
      } else if (i > 0) {
        rci = {s[1] / s0[2], s[2] / s0[1]};
      }
      j["points"].push_back({{"batch", batch}, {"speedup", s[0]}, {"speedup_ci", {s[1], s[2]}}, {"mitigation", s[0] / s0[0]},
                             {"mitigation_ci", rci}});
      ++i;
    }
    const json &phiE = *phis.at(name), &phiR = *phis.at(reference);
    if (paired) {
      auto d = metrics::statisticOverSeries(rounds, [&](const std::vector<double>& m) { return slopeOverLogBatch(batches, m); });
      j["delta_phi"] = d.value;
      j["delta_phi_ci"] = {d.ci.low, d.ci.high};
    } else if (phiE.contains(model) && phiR.contains(model)) {
      j["delta_phi"] = phiE[model].get<double>() - phiR[model].get<double>();
    }
    out.push_back(std::move(j));
  }
  return out;
}

// Where and with what the cells were measured: every distinct machine and build, and each backend's executor.
json machine(const ResultsStore& store, const Cells& cells) {
  json fingerprints = json::array();
  for (const auto& f : store.fingerprints())
    fingerprints.push_back({{"cpu", f.cpuModel}, {"cores", f.cores}, {"cpu_flags", f.cpuFlags},
                            {"friction_revision", f.gitRevision}, {"tool_version", f.toolVersion},
                            {"libraries", f.libraries}});
  std::set<int> threads;
  for (const auto& c : cells) threads.insert(c.m.threads);
  // The state of the machine while the rounds ran (docs/metrics.md): speed, contention, core-to-core distance,
  // memory bandwidth.
  std::vector<double> contention, crossCore, memory;
  int64_t slow = 0, far = 0, blocks = 0;
  double nearWaitMs = 0;
  const auto rounds = store.rounds();
  for (const auto& r : rounds) {
    contention.push_back(Calibration{r.serialCalibrationMs, r.parallelCalibrationMs}.contention());
    if (!std::isnan(r.crossCoreNs)) crossCore.push_back(r.crossCoreNs);
    if (!std::isnan(r.memoryGBs)) memory.push_back(r.memoryGBs);
    slow += r.slow, far += r.farBlocks, blocks += int64_t(r.order.size()), nearWaitMs += r.nearWaitMs;
  }
  json state = {{"rounds", rounds.size()}, {"slow_rounds", slow}, {"blocks", blocks}, {"far_blocks", far},
                {"near_wait_s", nearWaitMs / 1e3}};
  if (!contention.empty()) state["median_contention"] = metrics::median(contention);
  if (!crossCore.empty()) state["median_cross_core_ns"] = metrics::median(crossCore);
  if (!memory.empty())
    state["memory_gbps"] = {{"p10", metrics::quantile(memory, 0.1)}, {"median", metrics::median(memory)},
                            {"p90", metrics::quantile(memory, 0.9)}};
  return {{"fingerprints", fingerprints}, {"threads", threads}, {"executors", store.executorDescriptions()},
          {"rounds", state}};
}

// The requested reference executor, checked; by default cpu|all-off when measured, else the first executor.
std::string chooseReference(const json& execs, std::string reference) {
  if (reference.empty()) {
    reference = execs.front()["executor"];
    for (const auto& e : execs)
      if (e["executor"] == executorName("cpu", "all-off")) reference = e["executor"];
  }
  std::string known;
  for (const auto& e : execs) known += (known.empty() ? "" : ", ") + e["executor"].get<std::string>();
  FRICTION_CHECK(std::any_of(execs.begin(), execs.end(), [&](const json& e) { return e["executor"] == reference; }),
                 "--reference '" + reference + "' is not an executor of this store (" + known + ")");
  return reference;
}

// The A/A controls (ResultsStore.h): each twin against its original, paired over their rounds, and the share
// of controls called different (CI clears 1 by minEffect: the protocol's observed false-difference rate).
json aaControls(const Cells& all, const ResultsStore& store, double minEffect) {
  std::map<std::string, const CellRecord*> byKey;
  for (const auto& c : all) byKey[c.cellKey] = &c;
  json rows = json::array();
  size_t differences = 0;
  for (const auto& twin : all) {
    if (!isAAControl(twin)) continue;
    auto it = byKey.find(twin.cellKey.substr(0, twin.cellKey.size() - std::string(kAASuffix).size()));
    if (it == byKey.end() || !measuredTogether(twin.m, it->second->m)) continue;
    auto p = metrics::pairedRatio(metrics::blockMedians(store.samplesOf(twin.cellKey), twin.m.roundSizes),
                                  metrics::blockMedians(store.samplesOf(it->first), it->second->m.roundSizes), 0, 2000,
                                  0.95, minEffect);
    differences += p.direction != 0;
    rows.push_back({{"model", twin.model}, {"backend", twin.backend}, {"batch", twin.batch}, {"group", twin.m.group},
                    {"ratio", p.ratio}, {"ci", {p.ci.low, p.ci.high}}, {"false_difference", p.direction != 0}});
  }
  size_t within3 = 0;
  for (const auto& r : rows) within3 += std::abs(r["ratio"].get<double>() - 1) <= 0.03;
  return {{"controls", rows}, {"count", rows.size()},
          {"false_difference_rate", rows.empty() ? json(nullptr) : json(double(differences) / double(rows.size()))},
          {"within_3_percent", rows.empty() ? json(nullptr) : json(double(within3) / double(rows.size()))}};
}

json finiteOrInf(double v) { return std::isfinite(v) ? json(v) : json("inf"); }  // JSON has no infinity

// The output checks: how many cells were checked against the interpreter, the largest error, and every cell
// whose outputs differ (Measurement::outputsDiffer): its timings are of a program that computes something else.
json outputChecks(const Cells& all, CellLabels& labels) {
  json differ = json::array();
  size_t checked = 0;
  double largest = 0;
  for (const auto& c : all) {
    if (c.m.maxRelError < 0) continue;
    checked++;
    largest = std::max(largest, c.m.maxRelError);
    if (c.m.outputsDiffer())
      differ.push_back({{"model", c.model}, {"backend", c.backend}, {"config", labels.config(c.passes)},
                        {"batch", c.batch}, {"max_rel_error", finiteOrInf(c.m.maxRelError)}});
  }
  return {{"checked", checked}, {"threshold", kOutputsDifferRelError}, {"largest_rel_error", finiteOrInf(largest)},
          {"differ", differ}};
}

}  // namespace

// "all-off", "default", or the difference from the default ("-fuse-epilogues").
std::string configLabel(const std::string& passes, const std::string& def) {
  if (passes.empty()) return "all-off";
  if (passes == def) return "default";
  std::set<std::string> on;
  std::stringstream ss(passes);
  for (std::string p; std::getline(ss, p, ',');) on.insert(p);
  std::string label;
  for (const auto& p : allPasses())
    if (!on.count(p.name)) label += (label.empty() ? "-" : ",-") + p.name;
  return label.empty() ? passes : label;
}

DepthVariant depthVariant(const std::string& model) {
  if (model.rfind("zoo:", 0) != 0) return std::nullopt;
  std::optional<Spec> spec;
  try {
    spec = Spec::parse(model, "model");
  } catch (const Error&) {  // a stored name that is no well-formed spec belongs to no family
    return std::nullopt;
  }
  std::string depth = spec->get("depth").value_or("");
  int64_t n = 0;
  auto ec = std::from_chars(depth.data(), depth.data() + depth.size(), n).ec;
  if (depth.empty() || depth.find_first_not_of("0123456789") != std::string::npos || ec != std::errc())
    return std::nullopt;
  spec->set("depth", "*");
  return std::make_pair(spec->print(), n);
}

std::string executorName(const std::string& backend, const std::string& config) { return backend + "|" + config; }

json reportData(const Cells& allCells, const ResultsStore& store, const std::string& requestedReference,
                double minEffect) {
  Cells cells;  // everything but the A/A twins, which only the A/A section reads
  std::copy_if(allCells.begin(), allCells.end(), std::back_inserter(cells), [](const CellRecord& c) { return !isAAControl(c); });
  FRICTION_CHECK(!cells.empty(), "the store holds only A/A controls");
  CellLabels labels;
  json series = batchSeries(cells, labels, store);
  auto depth = depthSeries(cells, labels);
  json execs = executors(series, depth);
  std::string reference = chooseReference(execs, requestedReference);
  json execRankings = executorRankings(cells, labels, reference, execs, store, minEffect);
  RoundLogRatios logRatios;
  json execRatios = executorRatios(cells, labels, reference, execs, store, minEffect, logRatios);
  json data{{"measurements", cells.size()}, {"series", series},
            {"rankings", rankings(cells, labels.def, store, minEffect)}, {"min_effect", minEffect}, {"depth", depthScaling(depth)},
            {"reference", reference}, {"executors", execs}, {"executor_rankings", execRankings},
            {"executor_ratios", execRatios}, {"mitigation", mitigations(execRatios, execs, reference, logRatios)},
            {"aa", aaControls(allCells, store, minEffect)}, {"output_checks", outputChecks(allCells, labels)}};
  for (const auto& r : store.attributions())
    data["attributions"].push_back({{"experiment", r.experiment}, {"model", r.model}, {"backend", r.backend},
                                    {"batch", r.batch}, {"method", r.method}, {"pass", r.pass},
                                    {"value_ms", r.valueMs}, {"stderr_ms", r.stdErrMs},
                                    {"ci_ms", r.hasCI() ? json{r.ciLowMs, r.ciHighMs} : json(nullptr)},
                                    {"measurable", r.measurable()}});
  data["machine"] = machine(store, cells);
  return data;
}

void writeCellsCsv(const Cells& cells, const std::string& path) {
  std::ofstream f(path);
  FRICTION_CHECK(f.good(), "cannot write '" + path + "'");
  f << "experiment,model,backend,batch,passes,threads,n,median_ms,p10_ms,p90_ms,ci_low_ms,ci_high_ms,unstable,"
       "compile_ms,max_abs_error,max_rel_error\n";
  auto q = [](const std::string& s) { return "\"" + std::regex_replace(s, std::regex("\""), "\"\"") + "\""; };
  for (const auto& c : cells) {
    const auto& s = c.m.summary;
    f << q(c.experiment) << "," << q(c.model) << "," << q(c.backend) << "," << c.batch << "," << q(c.passes) << ","
      << c.m.threads << "," << s.n << "," << s.median << "," << s.p10 << "," << s.p90 << ","
      << s.medianCI.low << "," << s.medianCI.high << "," << s.unstable << "," << c.m.compileMs << ","
      << c.m.maxAbsError << "," << c.m.maxRelError << "\n";
  }
}

}  // namespace friction::bench
