// `friction sweep SPEC.toml`: measures every cell of models x depths x
// batches x backends x pass configurations into the results store, committing
// each cell as it completes; `--resume` skips stored cells and `--shard i/n`
// takes every n-th cell so a scheduler can fan a sweep out. `friction merge`
// combines the stores afterwards. `executors` (a list of {backend, config}
// pairs) replaces the backends x configs product when only some pairs are
// wanted (e.g. a vendor on the unoptimized model only); `--dry-run` prints the
// cell list and count without measuring. A cell whose measurement fails is
// reported and skipped (not stored); the sweep goes on and exits 1 at the end.
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
#include "ir/Spec.h"
#include "runtime/Backend.h"
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
  bool resume = false, dryRun = false;
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
                                                "reps", "warmup", "target_ci", "max_seconds", "threads", "seed", "check",
                                                "executors"};
    FRICTION_CHECK(known.count(std::string(k.str())), a.spec + ": unknown key '" + std::string(k.str()) + "'");
  }
  std::string name = spec["name"].value_or(std::string("sweep"));
  auto models = list<std::string>(spec, "models", {});
  FRICTION_CHECK(!models.empty(), a.spec + ": 'models' lists no model");
  auto depths = list<int64_t>(spec, "depths", {});
  auto batches = list<int64_t>(spec, "batches", {1});
  auto backends = list<std::string>(spec, "backends", {"interp"});
  auto configs = list<std::string>(spec, "configs", {"all-off", "default"});
  // Explicit (backend, config) pairs instead of the backends x configs product.
  std::vector<std::pair<std::string, std::string>> executors;
  if (spec.contains("executors")) {
    FRICTION_CHECK(!spec.contains("backends") && !spec.contains("configs"),
                   a.spec + ": 'executors' replaces 'backends' and 'configs': give one or the other");
    const toml::array* ex = spec["executors"].as_array();
    FRICTION_CHECK(ex && !ex->empty(), a.spec + ": 'executors' must be a non-empty array of {backend, config} tables");
    for (const auto& e : *ex) {
      const toml::table* t = e.as_table();
      FRICTION_CHECK(t, a.spec + ": each of 'executors' must be a table like { backend = \"cpu\", config = \"default\" }");
      for (const auto& [k, v] : *t)
        FRICTION_CHECK(k.str() == "backend" || k.str() == "config",
                       a.spec + ": unknown key '" + std::string(k.str()) + "' in 'executors' (keys: backend, config)");
      auto b = (*t)["backend"].value<std::string>();
      FRICTION_CHECK(b.has_value(), a.spec + ": an entry of 'executors' has no backend");
      executors.emplace_back(*b, (*t)["config"].value_or(std::string("default")));
    }
    configs.clear();
    for (const auto& [b, c] : executors) configs.push_back(c);
  }
  bench::MeasureOptions mo;
  mo.reps = int(spec["reps"].value_or(int64_t(10)));
  mo.warmup = int(spec["warmup"].value_or(int64_t(2)));
  mo.targetRelCI = spec["target_ci"].value_or(0.0);
  mo.maxSeconds = spec["max_seconds"].value_or(30.0);
  mo.threads = int(spec["threads"].value_or(int64_t(0)));
  mo.seed = uint64_t(spec["seed"].value_or(int64_t(0)));
  mo.checkOutputs = spec["check"].value_or(true);

  // Zoo models get each depth as their last knob (replacing a depth they have); files are taken as they are.
  std::vector<std::string> expanded;
  for (const auto& m : models) {
    if (depths.empty() || m.rfind("zoo:", 0) != 0) {
      expanded.push_back(m);
      continue;
    }
    Spec base = Spec::parse(m, "model");
    base.erase("depth");
    for (int64_t d : depths) {
      Spec deep = base;
      deep.set("depth", std::to_string(d));
      expanded.push_back(deep.print());
    }
  }
  for (const auto& c : configs) buildPipeline(parseConfig(c));  // reject bad configurations before measuring
  // ... and unknown backends or backend options.
  if (!spec.contains("executors"))
    for (const auto& b : backends) createBackend(b);
  for (const auto& e : executors) createBackend(e.first);
  std::vector<Cell> cells;
  if (!spec.contains("executors")) {
    for (const auto& m : expanded)
      for (const auto& b : backends)
        for (int64_t batch : batches)
          for (const auto& c : configs) cells.push_back({m, b, c, batch});
  } else {
    for (const auto& m : expanded)
      for (const auto& [b, c] : executors)
        for (int64_t batch : batches) cells.push_back({m, b, c, batch});
  }

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

  if (a.dryRun) {  // the cells, in order, without opening the store or measuring
    for (size_t i = 0; i < mine.size(); ++i)
      std::printf("%s %s batch %ld %s\n", mine[i].model.c_str(), mine[i].backend.c_str(), long(mine[i].batch),
                  mine[i].config.c_str());
    std::printf("sweep %s: %zu cells (%zu in this shard), dry run: nothing measured\n", name.c_str(), cells.size(),
                mine.size());
    return;
  }
  bench::ResultsStore store(a.db);
  auto fp = bench::Fingerprint::ofThisMachine();
  std::fprintf(stderr, "sweep %s: %zu cells (%zu in this shard) into %s\n", name.c_str(), cells.size(), mine.size(),
               a.db.c_str());
  auto start = std::chrono::steady_clock::now();
  size_t measured = 0, skipped = 0;
  std::vector<std::string> failures;
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
    r.passes = bench::enabledPasses(po);
    r.cellKey = r.key(mo.threads);
    if (a.resume && store.hasCell(r.cellKey)) {
      skipped++;
      continue;
    }
    bench::MeasureOptions cellOptions = mo;
    cellOptions.backend = c.backend;
    try {
      r.m = bench::measure(*g, ref.get(), cellOptions);
    } catch (const std::exception& e) {  // e.g. a vendor that cannot compile this model: the other cells go on
      failures.push_back(c.model + " " + c.backend + " batch " + std::to_string(c.batch) + " " + c.config + ": " + e.what());
      std::fprintf(stderr, "[%zu/%zu] FAILED (not stored): %s\n", k + 1, mine.size(), failures.back().c_str());
      continue;
    }
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
  FRICTION_CHECK(failures.empty(), "sweep " + name + ": " + std::to_string(failures.size()) +
                                       " cell(s) failed and were not stored (--resume retries them); the first: " +
                                       failures.front());
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
  cmd->add_flag("--dry-run", args->dryRun, "print the cells (model backend batch config) and their count; measure nothing");
  cmd->callback([args] { sweep(*args); });

  auto margs = std::make_shared<MergeArgs>();
  auto* m = app.add_subcommand("merge", "combine results stores (e.g. the shards of a sweep)");
  m->add_option("output", margs->output, "the store to merge into (created if missing)")->required();
  m->add_option("inputs", margs->inputs, "stores to merge from")->required()->check(CLI::ExistingFile);
  m->callback([margs] { merge(*margs); });
}

}  // namespace friction::cli
