// A sweep specification (TOML): models x depths x batches x backends x pass
// configurations, each cell measured under the protocol (benchmarks/Protocol.h)
// by `friction sweep`. `executors` (a list of {backend, config} pairs)
// replaces the backends x configs product when only some pairs are wanted
// (e.g. a vendor on the unoptimized model only). A scheduler fans a sweep out
// by shards: every n-th cell.
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
  // reps, warmup, target_ci, max_seconds, threads, seed, check; a spec's defaults: 10, 2, 0, 30, 0, 0, true.
  MeasureOptions measure;

  // Every cell, in measurement order: per model (each depth in turn), per backend, per batch, per config; or,
  // with executors, per model, per executor, per batch.
  std::vector<SweepCell> expandCells() const;
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
// Shard `index` of `count`: the cells whose position % count == index, in order.
std::vector<SweepCell> shardCells(const std::vector<SweepCell>& cells, size_t index, size_t count);

}  // namespace friction::bench
