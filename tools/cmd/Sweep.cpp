// `friction sweep SPEC.toml`: measures every cell of models x depths x
// batches x backends x pass configurations into the results store, committing
// each cell as it completes; `--resume` skips stored cells and `--shard i/n`
// takes every n-th cell so a scheduler can fan a sweep out. `friction merge`
// combines the stores afterwards.
#include <sqlite3.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "benchmarks/ResultsStore.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace friction::cli {
namespace {

struct Cell {
  std::string model, backend, config;
  int64_t batch;
};

// "default", "all-off", "-a,-b" (default without), "+a,+b" (only), "=a,b" (exactly, in order).
PipelineOptions parseConfig(const std::string& c) {
  PipelineOptions o;
  if (c == "default") return o;
  if (c == "all-off") {
    o.passes = {"none"};
    return o;
  }
  FRICTION_CHECK(!c.empty() && std::string("-+=").find(c[0]) != std::string::npos,
                 "sweep: configuration '" + c + "' must be default, all-off, -a,-b, +a,+b or =a,b");
  std::stringstream ss(c);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty() && std::string("-+=").find(item[0]) != std::string::npos) item = item.substr(1);
    (c[0] == '-' ? o.disable : c[0] == '+' ? o.only : o.passes).push_back(item);
  }
  return o;
}

template <typename T>
std::vector<T> list(const toml::table& t, const char* key, std::vector<T> def) {
  const toml::array* a = t[key].as_array();
  if (!a) {
    FRICTION_CHECK(!t.contains(key), std::string("sweep spec: '") + key + "' must be an array");
    return def;
  }
  std::vector<T> r;
  for (const auto& e : *a) {
    auto v = e.value<T>();
    FRICTION_CHECK(v.has_value(), std::string("sweep spec: '") + key + "' has an element of the wrong type");
    r.push_back(*v);
  }
  return r;
}

struct SweepArgs {
  std::string spec, db = "friction-results.db", shard;
  bool resume = false;
};

void sweep(const SweepArgs& a) {
  toml::table spec;
  try {
    spec = toml::parse_file(a.spec);
  } catch (const toml::parse_error& e) {
    throw Error(a.spec + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  for (const auto& [k, v] : spec) {
    static const std::set<std::string> known = {"name", "models", "depths", "batches", "backends", "configs",
                                                "reps", "warmup", "target_ci", "max_seconds", "threads", "seed", "check"};
    FRICTION_CHECK(known.count(std::string(k.str())), a.spec + ": unknown key '" + std::string(k.str()) + "'");
  }
  std::string name = spec["name"].value_or(std::string("sweep"));
  auto models = list<std::string>(spec, "models", {});
  FRICTION_CHECK(!models.empty(), a.spec + ": 'models' lists no model");
  auto depths = list<int64_t>(spec, "depths", {});
  auto batches = list<int64_t>(spec, "batches", {1});
  auto backends = list<std::string>(spec, "backends", {"interp"});
  auto configs = list<std::string>(spec, "configs", {"all-off", "default"});
  bench::MeasureOptions mo;
  mo.reps = int(spec["reps"].value_or(int64_t(10)));
  mo.warmup = int(spec["warmup"].value_or(int64_t(2)));
  mo.targetRelCI = spec["target_ci"].value_or(0.0);
  mo.maxSeconds = spec["max_seconds"].value_or(30.0);
  mo.threads = int(spec["threads"].value_or(int64_t(0)));
  mo.seed = uint64_t(spec["seed"].value_or(int64_t(0)));
  mo.checkOutputs = spec["check"].value_or(true);

  // Zoo models get each depth as a knob; files are taken as they are.
  std::vector<std::string> expanded;
  for (const auto& m : models) {
    if (depths.empty() || m.rfind("zoo:", 0) != 0) {
      expanded.push_back(m);
      continue;
    }
    for (int64_t d : depths) {
      std::string base = std::regex_replace(m, std::regex("([?&])depth=[0-9]+&?"), "$1");
      if (!base.empty() && (base.back() == '&' || base.back() == '?')) base.pop_back();
      expanded.push_back(base + (base.find('?') == std::string::npos ? "?" : "&") + "depth=" + std::to_string(d));
    }
  }
  for (const auto& c : configs) buildPipeline(parseConfig(c));  // reject bad configurations before measuring
  std::vector<Cell> cells;
  for (const auto& m : expanded)
    for (const auto& b : backends)
      for (int64_t batch : batches)
        for (const auto& c : configs) cells.push_back({m, b, c, batch});

  size_t shardIndex = 0, shardCount = 1;
  if (!a.shard.empty()) {
    std::smatch sm;
    FRICTION_CHECK(std::regex_match(a.shard, sm, std::regex("([0-9]+)/([0-9]+)")), "--shard must look like i/n, e.g. 0/4");
    shardIndex = std::stoul(sm[1]), shardCount = std::stoul(sm[2]);
    FRICTION_CHECK(shardCount > 0 && shardIndex < shardCount, "--shard i/n needs 0 <= i < n");
  }
  std::vector<Cell> mine;
  for (size_t i = 0; i < cells.size(); ++i)
    if (i % shardCount == shardIndex) mine.push_back(cells[i]);

  bench::ResultsStore store(a.db);
  auto fp = bench::Fingerprint::ofThisMachine();
  std::fprintf(stderr, "sweep %s: %zu cells (%zu in this shard) into %s\n", name.c_str(), cells.size(), mine.size(),
               a.db.c_str());
  auto start = std::chrono::steady_clock::now();
  size_t measured = 0, skipped = 0;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<Graph>> references;
  for (size_t k = 0; k < mine.size(); ++k) {
    const Cell& c = mine[k];
    PipelineOptions po = parseConfig(c.config);
    auto g = loadAndOptimize(c.model, c.batch, po);
    auto& ref = references[{c.model, c.batch}];
    if (!ref) ref = loadForBatch(c.model, c.batch);
    bench::CellRecord r;
    r.experiment = "sweep:" + name;
    r.model = c.model, r.backend = c.backend, r.batch = c.batch, r.modelHash = bench::modelHash(*ref);
    for (const PassInfo* p : buildPipeline(po))
      r.passes += (r.passes.empty() ? "" : ",") + p->name;
    r.cellKey = r.experiment + "|" + r.modelHash + "|" + r.backend + "|" + std::to_string(r.batch) + "|" + r.passes +
                "|t" + std::to_string(mo.threads);
    if (a.resume && store.hasCell(r.cellKey)) {
      skipped++;
      continue;
    }
    bench::MeasureOptions cellOptions = mo;
    cellOptions.backend = c.backend;
    r.m = bench::measure(*g, ref.get(), cellOptions);
    r.configJson = nlohmann::json{{"sweep", name}, {"config", c.config}, {"reps", mo.reps}, {"warmup", mo.warmup},
                                  {"target_ci", mo.targetRelCI}, {"seed", mo.seed}}.dump();
    store.add(r, fp);
    measured++;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double eta = elapsed / double(measured) * double(mine.size() - k - 1);
    std::fprintf(stderr, "[%zu/%zu] %s %s batch %ld %s: %.3f ms%s  (ETA %.0f s)\n", k + 1, mine.size(),
                 c.model.c_str(), c.backend.c_str(), long(c.batch), c.config.c_str(), r.m.summary.median,
                 r.m.summary.unstable ? " UNSTABLE" : "", eta);
  }
  std::printf("sweep %s: %zu measured, %zu already stored, into %s\n", name.c_str(), measured, skipped, a.db.c_str());
}

struct MergeArgs {
  std::string output;
  std::vector<std::string> inputs;
};

void merge(const MergeArgs& a) {
  size_t before = bench::ResultsStore(a.output).cells().size();
  for (const auto& in : a.inputs) bench::ResultsStore(a.output).mergeFrom(in);
  size_t after = bench::ResultsStore(a.output).cells().size();
  std::printf("merged %zu file(s) into %s: %zu new measurements, %zu in all\n", a.inputs.size(), a.output.c_str(),
              after - before, after);
}

}  // namespace

void addSweep(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "measure models x depths x batches x backends x pass configurations");
  cmd->add_option("spec", args->spec, "sweep specification (TOML)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--db", args->db, "results store (SQLite)");
  cmd->add_flag("--resume", args->resume, "skip cells already in the store");
  cmd->add_option("--shard", args->shard, "i/n: measure only cells with index % n == i");
  cmd->callback([args] { sweep(*args); });

  auto margs = std::make_shared<MergeArgs>();
  auto* m = app.add_subcommand("merge", "combine results stores (e.g. the shards of a sweep)");
  m->add_option("output", margs->output, "the store to merge into (created if missing)")->required();
  m->add_option("inputs", margs->inputs, "stores to merge from")->required()->check(CLI::ExistingFile);
  m->callback([margs] { merge(*margs); });
}

}  // namespace friction::cli
