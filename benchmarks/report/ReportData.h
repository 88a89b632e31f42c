// The data of `friction report` (docs/metrics.md), computed from the cells of
// a results store: latency vs batch per (model, backend, configuration) with
// friction metrics, model rankings all-off vs default, depth scaling, and the
// executors (backend + pass configuration, docs/study.md) compared with a
// reference executor. The report renders this JSON (render_report.py).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/metrics/Paired.h"

namespace friction::bench {

// "all-off", "default", or the difference from the default pipeline `def` ("-fuse-epilogues").
std::string configLabel(const std::string& passes, const std::string& def);

// A zoo model with a depth=N knob: its family (the spec with depth=*) and N.
using DepthVariant = std::optional<std::pair<std::string, int64_t>>;
DepthVariant depthVariant(const std::string& model);

// An executor is a backend spec with a friction pass configuration: "backend|config", e.g. "cpu|all-off",
// "ort?level=all&threads=2|all-off" (the study's executors, docs/study.md).
std::string executorName(const std::string& backend, const std::string& config);

// The report's data: "measurements", "series", "rankings", "depth", "reference", "executors",
// "executor_rankings", "executor_ratios", "mitigation" (S(b), R(b) and delta-phi of each executor against the
// reference), "aa", "attributions", "machine" (fingerprints, threads, executor descriptions). `cells` are the store's (without samples: rankings fetch the
// few they need from `store`), at least one. `reference`: the executor the others' model rankings are compared
// with; empty: cpu|all-off when measured, else the first. Throws Error when it is not an executor of the store.
// `minEffect`: comparisons (inversions, executor ratios, A/A controls) count as differences only when their CI
// clears 1 by this relative margin (metrics/Paired.h, ratioDirection).
nlohmann::json reportData(const std::vector<CellRecord>& cells, const ResultsStore& store, const std::string& reference,
                          double minEffect = metrics::kDefaultMinEffect);

// One row per cell with its summary statistics (the report's CSV).
void writeCellsCsv(const std::vector<CellRecord>& cells, const std::string& path);

}  // namespace friction::bench
