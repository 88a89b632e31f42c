// The results store: one SQLite file, schema documented in docs/results-store.md.
// Every measurement is committed as it completes (WAL journal), so a killed
// sweep or ablation loses nothing already measured, and `hasCell` lets a
// resumed one skip finished cells.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/Protocol.h"
#include "benchmarks/metrics/Stats.h"
#include "passes/PassManager.h"

struct sqlite3;

namespace friction::bench {

constexpr int kSchemaVersion = 6;  // 2 to 5 are upgraded in place when opened

// Where a measurement was taken: recorded in every row.
struct Fingerprint {
  std::string cpuModel, cpuFlags, gitRevision, toolVersion, libraries;
  int cores = 0;
  static Fingerprint ofThisMachine();
};

// One measured cell: model x backend x batch x pass configuration.
struct CellRecord {
  std::string cellKey;     // unique id of the cell (model, backend, batch, passes, threads, experiment)
  std::string experiment;  // e.g. "ablate:loo" or a sweep name
  std::string model, modelHash, backend, passes;  // passes: enabled passes, comma-separated, pipeline order
  int64_t batch = 1;
  std::string configJson;  // the full configuration
  Measurement m;
  // The cell key: experiment|modelHash|backend|batch|passes|t<threads>, with the thread count asked for (0:
  // the default), not the one measured. Stored databases are resumed by it: keep the format.
  std::string key(int threads) const;
};

// The A/A control: a cell measured a second time, as its own program, beside the original in the same rounds.
// Its key is the original's with "|A/A" appended and its config_json says "control": "A/A"; the report compares
// the two and keeps the twin out of every other table.
void markAAControl(CellRecord& twin);
bool isAAControl(const CellRecord& r);
constexpr const char* kAASuffix = "|A/A";

// A pass's attributed latency for one model/backend/batch ("loo", "aoi",
// "shapley", or "interaction" with pass = "a|b").
// Measured in interleaved rounds, the value is the median over rounds of the per-round attribution and
// [ciLowMs, ciHighMs] its bootstrap CI over rounds (NaN: not known, e.g. a store of schema version 2);
// marginMs the smallest effect the ablation counted (its --min-effect times the all-on latency; NaN before
// schema version 4, read as 0).
struct AttributionRecord {
  std::string experiment, model, backend, method, pass;
  int64_t batch = 1;
  double valueMs = 0, stdErrMs = 0;
  double ciLowMs = std::nan(""), ciHighMs = std::nan("");
  double marginMs = std::nan("");
  bool hasCI() const { return !std::isnan(ciLowMs) && !std::isnan(ciHighMs); }
  // The verdict `ablate` printed: the CI clears 0 by the margin.
  bool measurable() const {
    return !hasCI() || metrics::Interval{ciLowMs, ciHighMs}.clears(0, std::isnan(marginMs) ? 0 : marginMs);
  }
};

// One round of an interleaved measurement (Rounds.h), for the comparison group its cells name.
struct RoundRow {
  std::string group;
  int64_t round = 0;
  std::vector<std::string> order;  // the cells' labels in timing order
  double startSeconds = 0, serialCalibrationMs = 0, parallelCalibrationMs = 0, loadAverage = -1;
  double quiesceMs = 0;  // waited in the round for the cores to go quiet before its blocks
  double crossCoreNs = std::nan("");  // the calibration's core-to-core round trip (NaN: before schema 5)
  double nearWaitMs = 0;              // waited in the round for near cores (Rounds.h, waitForNearCores)
  int farBlocks = 0;                  // blocks timed in the far state all the same
  double memoryGBs = std::nan("");    // the calibration's memory bandwidth (NaN: before schema 6)
  bool slow = false, dropped = false;
};

class ResultsStore {
 public:
  // Opens or creates `path`; refuses a file of another schema version.
  explicit ResultsStore(const std::string& path);
  ~ResultsStore();
  ResultsStore(const ResultsStore&) = delete;
  ResultsStore& operator=(const ResultsStore&) = delete;

  bool hasCell(const std::string& cellKey) const;
  // Inserts (or, for the same key, replaces) one row and commits it.
  void add(const CellRecord& r, const Fingerprint& fp);
  // Runs `f` (e.g. many add() calls) as one transaction (nestable): bulk imports, a sweep group's cells.
  void inTransaction(const std::function<void()>& f);
  // Rows whose experiment starts with the prefix. Without `withSamples` the raw
  // samples are left out (m.samplesMs empty; summary.n still set): much faster
  // on large stores. samplesOf() fetches them for one cell.
  std::vector<CellRecord> cells(const std::string& experimentPrefix = "", bool withSamples = true) const;
  std::vector<double> samplesOf(const std::string& cellKey) const;
  // Every distinct machine and build the cells were measured with, and what each backend spec ran as (the
  // executor's description: vendor versions and settings).
  std::vector<Fingerprint> fingerprints() const;
  std::map<std::string, std::string> executorDescriptions() const;
  // Replaces the attribution rows of (experiment, model, backend, batch, method) with `rows`.
  void setAttributions(const std::vector<AttributionRecord>& rows);
  std::vector<AttributionRecord> attributions() const;
  // Replaces the round rows of `group` with `r`'s rounds.
  void setRounds(const std::string& group, const RoundsResult& r);
  std::vector<RoundRow> rounds(const std::string& groupPrefix = "") const;
  // Copies every measurement, attribution and round of another store that this one lacks (same schema version;
  // a version-2 file is upgraded first). A comparison group comes whole from one store: the other's cells of a
  // group this one holds are skipped, and a group both hold from different machines (CPU model, cores, flags)
  // is refused with an Error naming it, since its cells were paired round by round.
  void mergeFrom(const std::string& otherPath);

 private:
  void exec(const std::string& sql) const;
  sqlite3* db_ = nullptr;
  std::string path_;
};

// CellRecord::passes of a pipeline: the names of the passes it runs, comma-separated, in order.
std::string enabledPasses(const PipelineOptions& options);

// A stable 64-bit hash of a graph: structure, types, attributes and weights (hex).
std::string modelHash(const Graph& g);

}  // namespace friction::bench
