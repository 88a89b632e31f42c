// `friction sweep SPEC.toml`: measures every cell of a sweep specification
// (benchmarks/SweepSpec.h) into the results store, committing each cell as it
// completes; `--resume` skips stored cells and `--shard i/n` takes every n-th
// cell so a scheduler can fan a sweep out; `--dry-run` prints the cell list and
// count without measuring. `friction merge` combines the stores afterwards. A
// cell whose measurement fails is reported and skipped (not stored); the sweep
// goes on and exits 1 at the end.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/SweepSpec.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace friction::cli {
namespace {

struct SweepArgs {
  std::string spec, db = "friction-results.db", shard;
  bool resume = false, dryRun = false;
};

void sweep(const SweepArgs& a) {
  bench::SweepSpec spec = bench::parseSweepSpec(a.spec);
  const std::string& name = spec.name;
  const bench::MeasureOptions& mo = spec.measure;
  std::vector<bench::SweepCell> cells = spec.expandCells();
  auto [shardIndex, shardCount] = a.shard.empty() ? std::pair<size_t, size_t>(0, 1) : bench::parseShard(a.shard);
  std::vector<bench::SweepCell> mine = bench::shardCells(cells, shardIndex, shardCount);

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
    const bench::SweepCell& c = mine[k];
    PipelineOptions po = bench::parseSweepConfig(c.config);
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
