// `friction sweep SPEC.toml`: measures every cell of a sweep specification
// (benchmarks/SweepSpec.h) into the results store, one comparison group at a
// time: the group's cells are compiled and checked, then timed together in
// interleaved rounds, then committed. `--resume` skips groups whose cells are
// all stored and `--shard i/n` takes every n-th group so a scheduler can fan a
// sweep out (`--slurm-array OUT.sh` writes the Slurm job array that does it); `--dry-run` prints the cell
// list and count without measuring.
// `friction merge` combines the stores afterwards. A cell that cannot be
// prepared is reported and left out (not stored); the sweep goes on and exits
// 1 at the end.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/SweepSpec.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"
#include "tools/cmd/SlurmArray.h"
#include "vendor_bridge/Bridges.h"

namespace friction::cli {
namespace {

struct SweepArgs {
  std::string spec, db = "friction-results.db", shard, slurmArray;
  size_t shards = 0;
  bool resume = false, dryRun = false;
};

// One cell of a group: its record, optimized program and prepared (compiled, checked) executor.
struct GroupCell {
  bench::SweepCell cell;
  bench::CellRecord record;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<bench::PreparedCell> prepared;
};

class SweepRunner {
 public:
  SweepRunner(const bench::SweepSpec& spec, const SweepArgs& a, bench::ResultsStore& store)
      : spec_(spec), a_(a), store_(store) {}

  // Measures one group's cells together; returns false when it was already stored (--resume).
  bool measureGroup(const bench::SweepGroup& group, size_t index, size_t count) {
    const std::string groupKey = "sweep:" + spec_.name + "|" + group.key + "|t" + std::to_string(spec_.measure.threads);
    std::vector<GroupCell> cells;
    for (const auto& c : group.cells) cells.push_back(makeCell(c, groupKey));
    if (spec_.aaControl) {  // the group's first executor once more, per model
      for (size_t k = 0, n = cells.size(); k < n; ++k)
        if (cells[k].cell.backend == group.cells[0].backend && cells[k].cell.config == group.cells[0].config) {
          GroupCell twin = makeCell(cells[k].cell, groupKey);
          bench::markAAControl(twin.record);
          cells.push_back(std::move(twin));
        }
    }
    if (a_.resume && std::all_of(cells.begin(), cells.end(), [&](const GroupCell& c) { return store_.hasCell(c.record.cellKey); }))
      return false;

    // Compile and check everything before timing anything; a cell that cannot be prepared (a vendor that cannot
    // compile the model) is reported and left out, and the group goes on.
    std::vector<bench::PreparedCell*> timed;
    std::vector<GroupCell*> kept;
    for (size_t k = 0; k < cells.size(); ++k) {
      GroupCell& c = cells[k];
      std::fprintf(stderr, "[group %zu/%zu %s] compiling %zu/%zu: %s %s %s\n", index + 1, count, group.key.c_str(),
                   k + 1, cells.size(), c.cell.model.c_str(), c.cell.backend.c_str(), c.cell.config.c_str());
      bench::MeasureOptions mo = spec_.measure;
      mo.backend = c.record.backend;
      try {
        c.prepared = bench::prepare(*c.graph, mo.checkOutputs ? &expected(c.cell) : nullptr, mo,
                                    c.cell.model + " " + c.cell.backend + " " + c.cell.config +
                                        (bench::isAAControl(c.record) ? " (A/A)" : ""));
        c.prepared->cluster = c.cell.model;  // a group's comparisons are mostly between one model's cells
      } catch (const std::exception& e) {
        failures.push_back(describe(c.cell) + ": " + e.what());
        std::fprintf(stderr, "[group %zu/%zu] FAILED (not stored): %s\n", index + 1, count, failures.back().c_str());
        continue;
      }
      if (c.prepared->m.outputsDiffer()) differing.push_back(describe(c.cell));
      timed.push_back(c.prepared.get());
      kept.push_back(&c);
    }
    expected_.clear();
    if (timed.empty()) return true;
    bench::RoundsOptions ro = spec_.rounds;
    ro.maxSeconds = spec_.maxSecondsPerCell * double(timed.size());
    char progress[256];
    std::snprintf(progress, sizeof progress, "[group %zu/%zu %s]", index + 1, count, group.key.c_str());
    bench::RoundsResult rounds = cli::measureGroup(timed, ro, groupKey, progress);
    std::vector<bench::CellRecord> rows;
    for (GroupCell* c : kept) {
      c->record.m = c->prepared->m;
      rows.push_back(c->record);
    }
    storeGroup(store_, rows, rounds, groupKey);  // whole or not at all: --resume measures it again
    measured += kept.size();
    return true;
  }

  std::vector<std::string> failures;
  std::vector<std::string> differing;  // stored cells whose outputs differ from the interpreter's
  size_t measured = 0;

 private:
  static std::string describe(const bench::SweepCell& c) {
    return c.model + " " + c.backend + " batch " + std::to_string(c.batch) + " " + c.config;
  }
  GroupCell makeCell(const bench::SweepCell& c, const std::string& groupKey) {
    GroupCell g;
    g.cell = c;
    PipelineOptions po = bench::parseSweepConfig(c.config);
    g.graph = loadAndOptimize(c.model, c.batch, po);
    bench::CellRecord& r = g.record;
    r.experiment = "sweep:" + spec_.name;
    // A bridge gets the spec's thread count as its own option (OpenMP settings do not reach its process); the
    // row records the spec that ran.
    r.model = c.model, r.backend = vendor::withThreads(c.backend, spec_.measure.threads), r.batch = c.batch;
    r.modelHash = bench::modelHash(reference(c));
    r.passes = bench::enabledPasses(po);
    r.cellKey = r.key(spec_.measure.threads);
    const auto& mo = spec_.measure;
    const auto& ro = spec_.rounds;
    r.configJson = nlohmann::json{{"sweep", spec_.name}, {"config", c.config}, {"group", groupKey},
                                  {"rounds", ro.rounds}, {"block_ms", ro.blockMs}, {"reps_per_round", ro.repsPerRound},
                                  {"block_warmup_ms", ro.blockWarmupMs}, {"warmup", mo.warmup},
                                  {"target_ci", ro.targetRelCI}, {"seed", mo.seed}, {"epochs", ro.epochs}}.dump();
    return g;
  }
  const Graph& reference(const bench::SweepCell& c) {
    auto& ref = references_[{c.model, c.batch}];
    if (!ref) ref = loadForBatch(c.model, c.batch);
    return *ref;
  }
  // The interpreter's outputs for a model and batch, computed once per group.
  const std::vector<Tensor>& expected(const bench::SweepCell& c) {
    auto it = expected_.find({c.model, c.batch});
    if (it != expected_.end()) return it->second;
    const Graph& ref = reference(c);
    return expected_[{c.model, c.batch}] = bench::referenceOutputs(ref, ref, spec_.measure.seed);
  }

  const bench::SweepSpec& spec_;
  const SweepArgs& a_;
  bench::ResultsStore& store_;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<Graph>> references_;
  std::map<std::pair<std::string, int64_t>, std::vector<Tensor>> expected_;
};

void sweep(const SweepArgs& a) {
  bench::SweepSpec spec = bench::parseSweepSpec(a.spec);
  const std::string& name = spec.name;
  std::vector<bench::SweepGroup> groups = spec.expandGroups();
  auto [shardIndex, shardCount] = a.shard.empty() ? std::pair<size_t, size_t>(0, 1) : bench::parseShard(a.shard);
  std::vector<bench::SweepGroup> mine = bench::shardGroups(groups, shardIndex, shardCount);
  size_t total = 0, inShard = 0;
  for (const auto& g : groups) total += g.cells.size();
  for (const auto& g : mine) inShard += g.cells.size();

  if (!a.slurmArray.empty()) {  // a submission script instead of measuring here
    FRICTION_CHECK(a.shard.empty(), "--slurm-array writes every shard's job: give --shards N, not --shard");
    size_t n = writeSlurmArray({.spec = a.spec, .name = name, .groups = groups.size(), .shards = a.shards,
                                .output = a.slurmArray, .binary = std::filesystem::read_symlink("/proc/self/exe").string()});
    std::printf("wrote %s: sweep %s (%zu cells in %zu groups) as a Slurm job array of %zu shards and a merge job; "
                "submit with: bash %s\n",
                a.slurmArray.c_str(), name.c_str(), total, groups.size(), n, a.slurmArray.c_str());
    return;
  }
  FRICTION_CHECK(a.shards == 0, "--shards goes with --slurm-array (one shard here: --shard i/n)");
  if (a.dryRun) {  // the cells, in order, without opening the store or measuring
    for (const auto& g : mine)
      for (const auto& c : g.cells)
        std::printf("%s %s batch %ld %s group %s\n", c.model.c_str(), c.backend.c_str(), long(c.batch),
                    c.config.c_str(), c.group.c_str());
    std::printf("sweep %s: %zu cells in %zu groups (%zu cells, %zu groups in this shard), dry run: nothing measured\n",
                name.c_str(), total, groups.size(), inShard, mine.size());
    return;
  }
  bench::ResultsStore store(a.db);
  std::fprintf(stderr, "sweep %s: %zu cells in %zu groups (%zu in this shard) into %s\n", name.c_str(), total,
               groups.size(), mine.size(), a.db.c_str());
  SweepRunner runner(spec, a, store);
  size_t skipped = 0;
  for (size_t k = 0; k < mine.size(); ++k)
    if (!runner.measureGroup(mine[k], k, mine.size())) skipped++;
  std::printf("sweep %s: %zu cells measured, %zu groups already stored, into %s\n", name.c_str(), runner.measured,
              skipped, a.db.c_str());
  if (!runner.differing.empty())
    std::fprintf(stderr, "sweep %s: WARNING: %zu cell(s) computed outputs that differ from the interpreter's (stored, "
                 "flagged in the report's output checks); the first: %s\n", name.c_str(), runner.differing.size(),
                 runner.differing.front().c_str());
  FRICTION_CHECK(runner.failures.empty(), "sweep " + name + ": " + std::to_string(runner.failures.size()) +
                                              " cell(s) failed and were not stored (--resume retries them); the first: " +
                                              runner.failures.front());
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
  cmd->add_option("--shard", args->shard, "i/n: measure only comparison groups with index % n == i");
  cmd->add_flag("--dry-run", args->dryRun, "print the cells (model backend batch config) and their count; measure nothing");
  cmd->add_option("--slurm-array", args->slurmArray,
                  "write OUT.sh, which submits the sweep as a Slurm job array (one shard per task) and a dependent "
                  "merge-and-report job; measure nothing here");
  cmd->add_option("--shards", args->shards, "with --slurm-array: array tasks (default: one per group, at most 16)")
      ->check(Positive);
  cmd->callback([args] { sweep(*args); });

  auto margs = std::make_shared<MergeArgs>();
  auto* m = app.add_subcommand("merge", "combine results stores (e.g. the shards of a sweep)");
  m->add_option("output", margs->output, "the store to merge into (created if missing)")->required();
  m->add_option("inputs", margs->inputs, "stores to merge from")->required()->check(CLI::ExistingFile);
  m->callback([margs] { merge(*margs); });
}

}  // namespace friction::cli
