// `friction report --db FILE -o report.html`: computes the metrics of
// docs/metrics.md from the results store, writes them as JSON and CSV beside
// the report, and renders the figures with matplotlib (benchmarks/report/).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/metrics/Ranking.h"
#include "benchmarks/metrics/Scaling.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace fs = std::filesystem;

namespace friction::cli {
namespace {

using nlohmann::json;
using Cells = std::vector<bench::CellRecord>;

std::string defaultPipeline() {
  std::string s;
  for (const PassInfo* p : buildPipeline({})) s += (s.empty() ? "" : ",") + p->name;
  return s;
}

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

// Latency vs batch for each (model, backend, configuration), with friction metrics.
json batchSeries(const Cells& cells, const std::string& def) {
  std::map<std::tuple<std::string, std::string, std::string>, std::map<int64_t, const bench::CellRecord*>> groups;
  for (const auto& c : cells) groups[{c.model, c.backend, configLabel(c.passes, def)}][c.batch] = &c;
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
      for (const auto& r : bm.rows)
        s["metrics"].push_back({{"batch", r.batch}, {"throughput", r.throughput}, {"cost_ms", r.costMs},
                                {"efficiency", r.efficiency}, {"friction", r.friction}});
      s["phi"] = bm.phi.slope;
    }
    out.push_back(s);
  }
  return out;
}

// Items = models; condition A = all passes off, B = the default pipeline.
json rankings(const Cells& cells, const std::string& def, const bench::ResultsStore& store) {
  std::map<std::pair<std::string, int64_t>, std::map<std::string, std::pair<const bench::CellRecord*, const bench::CellRecord*>>> groups;
  for (const auto& c : cells) {
    auto& slot = groups[{c.backend, c.batch}][c.model];
    if (c.passes.empty()) slot.first = &c;
    if (c.passes == def) slot.second = &c;
  }
  json out = json::array();
  for (const auto& [key, models] : groups) {
    std::vector<metrics::RankedItem> items;
    for (const auto& [model, pair] : models)
      if (pair.first && pair.second)
        items.push_back({model, store.samplesOf(pair.first->cellKey), store.samplesOf(pair.second->cellKey)});
    if (items.size() < 2) continue;
    auto r = metrics::compareRankings(items);
    json j{{"backend", key.first}, {"batch", key.second}, {"condition_a", "all-off"}, {"condition_b", "default"},
           {"kendall_tau", r.kendallTau}};
    for (size_t i = 0; i < items.size(); ++i)
      j["items"].push_back({{"name", items[i].name}, {"median_a_ms", r.mediansA[i]}, {"median_b_ms", r.mediansB[i]},
                            {"rank_a", r.rankA[i]}, {"rank_b", r.rankB[i]}});
    for (const auto& inv : r.inversions)
      j["inversions"].push_back({{"a", items[inv.i].name}, {"b", items[inv.j].name},
                                 {"ratio_a", inv.underA.ratio}, {"ci_a", {inv.underA.ci.low, inv.underA.ci.high}},
                                 {"ratio_b", inv.underB.ratio}, {"ci_b", {inv.underB.ci.low, inv.underB.ci.high}}});
    out.push_back(j);
  }
  return out;
}

// Zoo models that differ only in depth=N: latency per added block, all-off vs default.
json depthScaling(const Cells& cells, const std::string& def) {
  static const std::regex depthKnob("([?&])depth=([0-9]+)");
  std::map<std::tuple<std::string, std::string, int64_t>, std::map<int64_t, std::pair<double, double>>> groups;
  for (const auto& c : cells) {
    std::smatch m;
    if (c.model.rfind("zoo:", 0) != 0 || !std::regex_search(c.model, m, depthKnob)) continue;
    if (!c.passes.empty() && c.passes != def) continue;
    std::string family = std::regex_replace(c.model, depthKnob, "$1depth=*");
    auto& slot = groups[{family, c.backend, c.batch}][std::stoll(m[2].str())];
    (c.passes.empty() ? slot.first : slot.second) = c.m.summary.median;
  }
  json out = json::array();
  for (const auto& [key, byDepth] : groups) {
    std::vector<metrics::DepthPoint> base, comp;
    for (const auto& [n, lat] : byDepth)
      if (lat.first > 0 && lat.second > 0) base.push_back({double(n), lat.first}), comp.push_back({double(n), lat.second});
    if (base.size() < 2) continue;
    auto d = metrics::depthScaling(base, comp);
    json j{{"family", std::get<0>(key)}, {"backend", std::get<1>(key)}, {"batch", std::get<2>(key)},
           {"slope_baseline_ms", d.baseline.slope}, {"slope_compiled_ms", d.compiled.slope}, {"slope_ratio", d.slopeRatio}};
    for (size_t i = 0; i < base.size(); ++i)
      j["points"].push_back({{"blocks", base[i].blocks}, {"baseline_ms", base[i].latencyMs},
                             {"compiled_ms", comp[i].latencyMs}, {"speedup", d.rows[i].speedup}});
    out.push_back(j);
  }
  return out;
}

void writeCsv(const Cells& cells, const fs::path& path) {
  std::ofstream f(path);
  FRICTION_CHECK(f.good(), "cannot write '" + path.string() + "'");
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

struct ReportArgs {
  std::string db, output = "report.html";
};

void report(const ReportArgs& a) {
  FRICTION_CHECK(fs::exists(a.db), "results store '" + a.db + "' does not exist");
  bench::ResultsStore store(a.db);
  Cells cells = store.cells("", /*withSamples=*/false);  // rankings fetch the few samples they need
  FRICTION_CHECK(!cells.empty(), "results store '" + a.db + "' has no measurements");
  std::string def = defaultPipeline();
  json data{{"db", a.db}, {"measurements", cells.size()}, {"series", batchSeries(cells, def)},
            {"rankings", rankings(cells, def, store)}, {"depth", depthScaling(cells, def)}};
  for (const auto& r : store.attributions())
    data["attributions"].push_back({{"experiment", r.experiment}, {"model", r.model}, {"backend", r.backend},
                                    {"batch", r.batch}, {"method", r.method}, {"pass", r.pass},
                                    {"value_ms", r.valueMs}, {"stderr_ms", r.stdErrMs}});
  if (!cells.empty()) {
    const auto& c = cells.front();
    data["machine"] = {{"threads", c.m.threads}};
  }
  fs::path out(a.output);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::path jsonPath = fs::path(out).replace_extension(".json"), csvPath = fs::path(out).replace_extension(".csv");
  std::ofstream(jsonPath) << data.dump(1);
  writeCsv(cells, csvPath);
  std::string python = std::string(FRICTION_SOURCE_DIR) + "/.venv/bin/python";
  FRICTION_CHECK(fs::exists(python), "report needs matplotlib in the project venv: run scripts/setup.sh");
  std::string cmd = "'" + python + "' '" + FRICTION_SOURCE_DIR + "/benchmarks/report/render_report.py' '" +
                    jsonPath.string() + "' '" + out.string() + "'";
  FRICTION_CHECK(std::system(cmd.c_str()) == 0, "rendering the report failed (" + cmd + ")");
  std::cout << "wrote " << out.string() << " (data: " << jsonPath.string() << ", " << csvPath.string() << ")\n";
}

}  // namespace

void addReport(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "render the results store as one self-contained HTML file (+ JSON, CSV)");
  cmd->add_option("--db", args->db, "results store (SQLite)")->required();
  cmd->add_option("-o,--output", args->output, "output HTML path");
  cmd->callback([args] { report(*args); });
}

}  // namespace friction::cli
