// The results store: one SQLite file, schema documented in docs/results-store.md.
// Every measurement is committed as it completes (WAL journal), so a killed
// sweep or ablation loses nothing already measured, and `hasCell` lets a
// resumed one skip finished cells.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/Protocol.h"
#include "passes/PassManager.h"

struct sqlite3;

namespace friction::bench {

constexpr int kSchemaVersion = 2;

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

// A pass's attributed latency for one model/backend/batch ("loo", "aoi",
// "shapley", or "interaction" with pass = "a|b").
struct AttributionRecord {
  std::string experiment, model, backend, method, pass;
  int64_t batch = 1;
  double valueMs = 0, stdErrMs = 0;
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
  // Runs `f` (e.g. many add() calls) as one transaction: for bulk imports, not for measurements.
  void inTransaction(const std::function<void()>& f);
  // Rows whose experiment starts with the prefix. Without `withSamples` the raw
  // samples are left out (m.samplesMs empty; summary.n still set): much faster
  // on large stores. samplesOf() fetches them for one cell.
  std::vector<CellRecord> cells(const std::string& experimentPrefix = "", bool withSamples = true) const;
  std::vector<double> samplesOf(const std::string& cellKey) const;
  // Replaces the attribution rows of (experiment, model, backend, batch, method) with `rows`.
  void setAttributions(const std::vector<AttributionRecord>& rows);
  std::vector<AttributionRecord> attributions() const;
  // Copies every measurement and attribution of another store that this one lacks (same schema version).
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
