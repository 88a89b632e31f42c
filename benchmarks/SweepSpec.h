// A sweep specification (TOML): models x depths x batches x backends x pass
// configurations, each cell measured under the protocol (benchmarks/Protocol.h)
// by `friction sweep`. `executors` (a list of {backend, config} pairs)
// replaces the backends x configs product when only some pairs are wanted
// (e.g. a vendor on the unoptimized model only). The cells that will be
// compared form a group (by default every model and executor at one depth and
// batch: the report ranks models and compares executors there), measured
// together in interleaved rounds (benchmarks/Rounds.h). A scheduler fans a
// sweep out by shards of whole groups.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/Protocol.h"
#include "passes/PassManager.h"

namespace friction::bench {

// One measurement of a sweep: a model on a backend at a batch under a pass configuration.
struct SweepCell {
  std::string model, backend, config;
  int64_t batch = 1;
  std::string group;  // the comparison group: "d<depth>|b<batch>" (files: "d-"), or "<model>|b<batch>"
};

// The cells of one comparison group, in measurement order.
struct SweepGroup {
  std::string key;
  std::vector<SweepCell> cells;
};

struct SweepExecutor {
  std::string backend, config = "default";
};

struct SweepSpec {
  std::string name = "sweep";
  std::vector<std::string> models;
  std::vector<int64_t> depths;  // zoo models are measured at each depth (their depth knob); files as they are
  std::vector<int64_t> batches = {1};
  std::vector<std::string> backends = {"interp"};
  std::vector<std::string> configs = {"all-off", "default"};  // see parseSweepConfig
  std::vector<SweepExecutor> executors;  // when not empty, replaces backends x configs
  // warmup, threads, seed, check; a spec's defaults: 2, 0, 0, true. (reps is accepted and unused: the
  // rounds' block_ms or reps_per_round size the repetitions.)
  MeasureOptions measure;
  // rounds, min_rounds, reps_per_round, block_ms, block_warmup_ms, target_ci, order, repeat_slow_rounds;
  // max_seconds is the budget per cell, so a group's rounds get max_seconds x its cell count. Defaults: 30, 15,
  // 0, 8, 10, 0, shuffled, false, 30 (RoundsOptions' defaults but for max_seconds).
  RoundsOptions rounds;
  double maxSecondsPerCell = 30;
  // group_by: "depth-batch" (default) or "model-batch" (fewer programs resident at once, but no paired
  // comparison between models).
  std::string groupBy = "depth-batch";
  // aa_control: each group measures its first executor twice (the A/A control), as a cell whose key ends "|A/A".
  bool aaControl = false;

  // Every cell, in measurement order: per model (each depth in turn), per backend, per batch, per config; or,
  // with executors, per model, per executor, per batch.
  std::vector<SweepCell> expandCells() const;
  // The cells by comparison group, groups in order of first appearance, cells in expandCells order.
  std::vector<SweepGroup> expandGroups() const;
};

// Reads and checks a spec: unknown keys, wrong types, no model, a bad configuration, an unknown backend or
// backend option all throw Error naming the file (`source` for text).
SweepSpec parseSweepSpec(const std::string& path);
SweepSpec parseSweepSpecText(const std::string& toml, const std::string& source);

// A sweep configuration: "default", "all-off", "-a,-b" (default without), "+a,+b" (only these and their
// prerequisites), "=a,b" (exactly these, in order).
PipelineOptions parseSweepConfig(const std::string& config);

// "i/n" (the --shard option) as {i, n}.
std::pair<size_t, size_t> parseShard(const std::string& text);
// Shard `index` of `count`: the groups whose position % count == index, in order. A group is never split, so
// the cells that will be compared are always measured together.
std::vector<SweepGroup> shardGroups(const std::vector<SweepGroup>& groups, size_t index, size_t count);

}  // namespace friction::bench
