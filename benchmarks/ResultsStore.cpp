#include "benchmarks/ResultsStore.h"

#include <sqlite3.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "ir/Error.h"
#include "ir/Revision.h"
#include "ir/TextFormat.h"

namespace friction::bench {
namespace {

const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS measurements (
  id INTEGER PRIMARY KEY,
  cell_key TEXT NOT NULL UNIQUE,
  experiment TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  model TEXT NOT NULL, model_hash TEXT NOT NULL, backend TEXT NOT NULL, batch INTEGER NOT NULL,
  passes TEXT NOT NULL, config_json TEXT NOT NULL, threads INTEGER NOT NULL,
  n INTEGER NOT NULL, median_ms REAL NOT NULL, p10_ms REAL NOT NULL, p90_ms REAL NOT NULL,
  ci_low_ms REAL NOT NULL, ci_high_ms REAL NOT NULL, unstable INTEGER NOT NULL, stop_reason TEXT NOT NULL,
  compile_ms REAL NOT NULL, peak_rss_kb INTEGER NOT NULL, max_abs_error REAL, max_rel_error REAL,
  samples_json TEXT NOT NULL,
  cpu_model TEXT NOT NULL, cpu_cores INTEGER NOT NULL, cpu_flags TEXT NOT NULL,
  git_revision TEXT NOT NULL, tool_version TEXT NOT NULL, libraries TEXT NOT NULL,
  executor TEXT NOT NULL DEFAULT '', internal_timing INTEGER NOT NULL DEFAULT 0,
  group_key TEXT NOT NULL DEFAULT '', round_sizes_json TEXT NOT NULL DEFAULT '[]', contention REAL);
CREATE INDEX IF NOT EXISTS measurements_experiment ON measurements (experiment);
CREATE TABLE IF NOT EXISTS attributions (
  experiment TEXT NOT NULL, model TEXT NOT NULL, backend TEXT NOT NULL, batch INTEGER NOT NULL,
  method TEXT NOT NULL, pass TEXT NOT NULL, value_ms REAL NOT NULL, stderr_ms REAL NOT NULL,
  ci_low_ms REAL, ci_high_ms REAL, margin_ms REAL,
  PRIMARY KEY (experiment, model, backend, batch, method, pass));
CREATE TABLE IF NOT EXISTS rounds (
  group_key TEXT NOT NULL, round INTEGER NOT NULL, order_json TEXT NOT NULL, start_s REAL NOT NULL,
  calibration_serial_ms REAL NOT NULL, calibration_parallel_ms REAL NOT NULL, load_avg REAL NOT NULL,
  slow INTEGER NOT NULL, dropped INTEGER NOT NULL, quiesce_ms REAL NOT NULL, cross_core_ns REAL,
  near_wait_ms REAL, far_blocks INTEGER, memory_gbps REAL, PRIMARY KEY (group_key, round));
)";

// Version 2 -> 3: the interleaved rounds (group, round sizes, contention, the rounds table) and attribution CIs.
const char* kUpgradeFrom2 = R"(
ALTER TABLE measurements ADD COLUMN group_key TEXT NOT NULL DEFAULT '';
ALTER TABLE measurements ADD COLUMN round_sizes_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE measurements ADD COLUMN contention REAL;
ALTER TABLE attributions ADD COLUMN ci_low_ms REAL;
ALTER TABLE attributions ADD COLUMN ci_high_ms REAL;
UPDATE meta SET value = '3' WHERE key = 'schema_version';
)";

// Version 3 -> 4: the margin an attribution's verdict used.
const char* kUpgradeFrom3 = R"(
ALTER TABLE attributions ADD COLUMN margin_ms REAL;
UPDATE meta SET value = '4' WHERE key = 'schema_version';
)";

// Version 4 -> 5: each round's core-to-core round trip, the wait for near cores and the blocks timed far.
// (A file upgraded from version 2 has no rounds table yet: it gets version 4's first.)
const char* kUpgradeFrom4 = R"(
CREATE TABLE IF NOT EXISTS rounds (
  group_key TEXT NOT NULL, round INTEGER NOT NULL, order_json TEXT NOT NULL, start_s REAL NOT NULL,
  calibration_serial_ms REAL NOT NULL, calibration_parallel_ms REAL NOT NULL, load_avg REAL NOT NULL,
  slow INTEGER NOT NULL, dropped INTEGER NOT NULL, quiesce_ms REAL NOT NULL, PRIMARY KEY (group_key, round));
ALTER TABLE rounds ADD COLUMN cross_core_ns REAL;
ALTER TABLE rounds ADD COLUMN near_wait_ms REAL;
ALTER TABLE rounds ADD COLUMN far_blocks INTEGER;
UPDATE meta SET value = '5' WHERE key = 'schema_version';
)";

// Version 5 -> 6: each round's memory bandwidth.
const char* kUpgradeFrom5 = R"(
ALTER TABLE rounds ADD COLUMN memory_gbps REAL;
UPDATE meta SET value = '6' WHERE key = 'schema_version';
)";

// The measurement columns, in the order add() binds them and mergeFrom copies them.
const char* kMeasurementColumns = R"(cell_key, experiment, model, model_hash, backend, batch, passes,
    config_json, threads, n, median_ms, p10_ms, p90_ms, ci_low_ms, ci_high_ms, unstable, stop_reason, compile_ms,
    peak_rss_kb, max_abs_error, max_rel_error, samples_json, cpu_model, cpu_cores, cpu_flags, git_revision,
    tool_version, libraries, executor, internal_timing, group_key, round_sizes_json, contention)";

// Prepared statement with RAII finalize.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) {
    FRICTION_CHECK(sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK,
                   std::string("results store: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.c_str(), -1, SQLITE_TRANSIENT); }
  void real(int i, double v) { sqlite3_bind_double(s, i, v); }
  void integer(int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  double colRealOrNan(int i) const {  // NULL (a column added after the row was written) reads as NaN
    return sqlite3_column_type(s, i) == SQLITE_NULL ? std::nan("") : sqlite3_column_double(s, i);
  }
  std::string colText(int i) const {
    auto* t = sqlite3_column_text(s, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
};

std::string cpuInfoField(const std::string& field) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field, 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 2);
    }
  return "";
}

}  // namespace

Fingerprint Fingerprint::ofThisMachine() {
  Fingerprint fp;
  fp.cpuModel = cpuInfoField("model name");
  // The flags that change kernel choice; the full list is long and noisy.
  std::set<std::string> all;
  std::istringstream flags(cpuInfoField("flags"));
  for (std::string f; flags >> f;) all.insert(f);
  for (const char* f : {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "amx_tile"})
    if (all.count(f)) fp.cpuFlags += (fp.cpuFlags.empty() ? "" : " ") + std::string(f);
  fp.cores = int(std::thread::hardware_concurrency());
  fp.gitRevision = friction::revision();
  fp.toolVersion = "friction 0.1";
  fp.libraries = nlohmann::json{{"sqlite", sqlite3_libversion()}, {"compiler", __VERSION__}}.dump();
  return fp;
}

ResultsStore::ResultsStore(const std::string& path) : path_(path) {
  FRICTION_CHECK(sqlite3_open(path.c_str(), &db_) == SQLITE_OK,
                 "cannot open results store '" + path + "': " + (db_ ? sqlite3_errmsg(db_) : "out of memory"));
  sqlite3_busy_timeout(db_, 10000);
  try {
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    int v = 0;
    exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    {
      Stmt get(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
      if (sqlite3_step(get.s) == SQLITE_ROW) v = std::stoi(get.colText(0));
    }
    if (v == 2) inTransaction([&] { exec(kUpgradeFrom2); }), v = 3;
    if (v == 3) inTransaction([&] { exec(kUpgradeFrom3); }), v = 4;
    if (v == 4) inTransaction([&] { exec(kUpgradeFrom4); }), v = 5;
    if (v == 5) inTransaction([&] { exec(kUpgradeFrom5); }), v = 6;
    exec(kSchema);
    if (v != 0) {
      FRICTION_CHECK(v == kSchemaVersion, "results store '" + path + "' has schema version " + std::to_string(v) +
                                              ", this friction writes version " + std::to_string(kSchemaVersion));
    } else {
      exec("INSERT INTO meta (key, value) VALUES ('schema_version', '" + std::to_string(kSchemaVersion) + "')");
    }
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

ResultsStore::~ResultsStore() { sqlite3_close(db_); }

void ResultsStore::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("results store '" + path_ + "': " + msg);
  }
}

std::string enabledPasses(const PipelineOptions& options) {
  std::string r;
  for (const PassInfo* p : buildPipeline(options)) r += (r.empty() ? "" : ",") + p->name;
  return r;
}

std::string CellRecord::key(int threads) const {
  return experiment + "|" + modelHash + "|" + backend + "|" + std::to_string(batch) + "|" + passes + "|t" +
         std::to_string(threads);
}

void markAAControl(CellRecord& twin) {
  twin.cellKey += kAASuffix;
  auto cfg = nlohmann::json::parse(twin.configJson.empty() ? "{}" : twin.configJson);
  cfg["control"] = "A/A";
  twin.configJson = cfg.dump();
}

bool isAAControl(const CellRecord& r) { return r.cellKey.ends_with(kAASuffix); }

bool ResultsStore::hasCell(const std::string& cellKey) const {
  Stmt q(db_, "SELECT 1 FROM measurements WHERE cell_key = ?");
  q.text(1, cellKey);
  return sqlite3_step(q.s) == SQLITE_ROW;
}

void ResultsStore::add(const CellRecord& r, const Fingerprint& fp) {
  std::string sql = std::string("INSERT OR REPLACE INTO measurements (") + kMeasurementColumns + ") VALUES (?";
  for (int k = 1; k < 33; ++k) sql += ",?";
  Stmt q(db_, (sql + ")").c_str());
  const Measurement& m = r.m;
  int i = 1;
  q.text(i++, r.cellKey), q.text(i++, r.experiment), q.text(i++, r.model), q.text(i++, r.modelHash);
  q.text(i++, r.backend), q.integer(i++, r.batch), q.text(i++, r.passes), q.text(i++, r.configJson);
  q.integer(i++, m.threads), q.integer(i++, int64_t(m.summary.n)), q.real(i++, m.summary.median);
  q.real(i++, m.summary.p10), q.real(i++, m.summary.p90), q.real(i++, m.summary.medianCI.low);
  q.real(i++, m.summary.medianCI.high), q.integer(i++, m.summary.unstable), q.text(i++, m.stopReason);
  q.real(i++, m.compileMs), q.integer(i++, m.peakRssKb);
  if (m.maxAbsError >= 0) q.real(i, m.maxAbsError), q.real(i + 1, m.maxRelError);
  i += 2;  // unbound parameters are NULL: not checked
  q.text(i++, nlohmann::json(m.samplesMs).dump()), q.text(i++, fp.cpuModel), q.integer(i++, fp.cores);
  q.text(i++, fp.cpuFlags), q.text(i++, fp.gitRevision), q.text(i++, fp.toolVersion), q.text(i++, fp.libraries);
  q.text(i++, m.executor), q.integer(i++, m.internalTiming);
  q.text(i++, m.group), q.text(i++, nlohmann::json(m.roundSizes).dump());
  if (m.contention > 0) q.real(i, m.contention);
  FRICTION_CHECK(sqlite3_step(q.s) == SQLITE_DONE, "results store '" + path_ + "': " + sqlite3_errmsg(db_));
}

std::vector<CellRecord> ResultsStore::cells(const std::string& experimentPrefix, bool withSamples) const {
  Stmt q(db_, R"(SELECT cell_key, experiment, model, model_hash, backend, batch, passes, config_json, threads,
    median_ms, p10_ms, p90_ms, ci_low_ms, ci_high_ms, unstable, stop_reason, compile_ms, peak_rss_kb,
    max_abs_error, max_rel_error, CASE WHEN ? THEN samples_json ELSE '' END, n, executor, internal_timing, group_key,
    round_sizes_json, contention FROM measurements
    WHERE experiment LIKE ? || '%' ORDER BY id)");
  q.integer(1, withSamples);
  q.text(2, experimentPrefix);
  std::vector<CellRecord> out;
  while (sqlite3_step(q.s) == SQLITE_ROW) {
    CellRecord r;
    int i = 0;
    r.cellKey = q.colText(i++), r.experiment = q.colText(i++), r.model = q.colText(i++);
    r.modelHash = q.colText(i++), r.backend = q.colText(i++), r.batch = sqlite3_column_int64(q.s, i++);
    r.passes = q.colText(i++), r.configJson = q.colText(i++);
    Measurement& m = r.m;
    m.threads = sqlite3_column_int(q.s, i++);
    m.summary.median = sqlite3_column_double(q.s, i++), m.summary.p10 = sqlite3_column_double(q.s, i++);
    m.summary.p90 = sqlite3_column_double(q.s, i++), m.summary.medianCI.low = sqlite3_column_double(q.s, i++);
    m.summary.medianCI.high = sqlite3_column_double(q.s, i++), m.summary.unstable = sqlite3_column_int(q.s, i++);
    m.stopReason = q.colText(i++), m.compileMs = sqlite3_column_double(q.s, i++);
    m.peakRssKb = long(sqlite3_column_int64(q.s, i++));
    bool checked = sqlite3_column_type(q.s, i) != SQLITE_NULL;
    m.maxAbsError = checked ? sqlite3_column_double(q.s, i) : -1;
    m.maxRelError = checked ? sqlite3_column_double(q.s, i + 1) : -1;
    i += 2;
    if (withSamples) m.samplesMs = nlohmann::json::parse(q.colText(i)).get<std::vector<double>>();
    i++;
    m.summary.n = size_t(sqlite3_column_int64(q.s, i++));
    m.executor = q.colText(i++), m.internalTiming = sqlite3_column_int(q.s, i++);
    m.group = q.colText(i++), m.roundSizes = nlohmann::json::parse(q.colText(i++)).get<std::vector<size_t>>();
    m.contention = sqlite3_column_double(q.s, i++);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<double> ResultsStore::samplesOf(const std::string& cellKey) const {
  Stmt q(db_, "SELECT samples_json FROM measurements WHERE cell_key = ?");
  q.text(1, cellKey);
  FRICTION_CHECK(sqlite3_step(q.s) == SQLITE_ROW, "results store '" + path_ + "': no cell '" + cellKey + "'");
  return nlohmann::json::parse(q.colText(0)).get<std::vector<double>>();
}

std::vector<Fingerprint> ResultsStore::fingerprints() const {
  Stmt q(db_, "SELECT DISTINCT cpu_model, cpu_flags, git_revision, tool_version, libraries, cpu_cores FROM measurements");
  std::vector<Fingerprint> out;
  while (sqlite3_step(q.s) == SQLITE_ROW)
    out.push_back({q.colText(0), q.colText(1), q.colText(2), q.colText(3), q.colText(4), sqlite3_column_int(q.s, 5)});
  return out;
}

std::map<std::string, std::string> ResultsStore::executorDescriptions() const {
  Stmt q(db_, "SELECT backend, executor FROM measurements WHERE executor != '' GROUP BY backend");
  std::map<std::string, std::string> out;
  while (sqlite3_step(q.s) == SQLITE_ROW) out[q.colText(0)] = q.colText(1);
  return out;
}

void ResultsStore::inTransaction(const std::function<void()>& f) {
  exec("SAVEPOINT friction_tx");  // a savepoint, so transactions nest (a sweep group's cells and its rounds)
  try {
    f();
    exec("RELEASE friction_tx");
  } catch (...) {
    exec("ROLLBACK TO friction_tx; RELEASE friction_tx");
    throw;
  }
}

void ResultsStore::setAttributions(const std::vector<AttributionRecord>& rows) {
  inTransaction([&] {
    for (const auto& r : rows) {
      Stmt q(db_, R"(INSERT OR REPLACE INTO attributions (experiment, model, backend, batch, method, pass, value_ms,
        stderr_ms, ci_low_ms, ci_high_ms, margin_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?))");
      q.text(1, r.experiment), q.text(2, r.model), q.text(3, r.backend), q.integer(4, r.batch);
      q.text(5, r.method), q.text(6, r.pass), q.real(7, r.valueMs), q.real(8, r.stdErrMs);
      if (r.hasCI()) q.real(9, r.ciLowMs), q.real(10, r.ciHighMs);
      if (!std::isnan(r.marginMs)) q.real(11, r.marginMs);
      FRICTION_CHECK(sqlite3_step(q.s) == SQLITE_DONE, "results store '" + path_ + "': " + sqlite3_errmsg(db_));
    }
  });
}

std::vector<AttributionRecord> ResultsStore::attributions() const {
  Stmt q(db_, "SELECT experiment, model, backend, batch, method, pass, value_ms, stderr_ms, ci_low_ms, ci_high_ms, "
              "margin_ms "
              "FROM attributions ORDER BY experiment, model, backend, batch, method, rowid");
  std::vector<AttributionRecord> out;
  while (sqlite3_step(q.s) == SQLITE_ROW) {
    AttributionRecord r;
    r.experiment = q.colText(0), r.model = q.colText(1), r.backend = q.colText(2);
    r.batch = sqlite3_column_int64(q.s, 3), r.method = q.colText(4), r.pass = q.colText(5);
    r.valueMs = sqlite3_column_double(q.s, 6), r.stdErrMs = sqlite3_column_double(q.s, 7);
    r.ciLowMs = q.colRealOrNan(8), r.ciHighMs = q.colRealOrNan(9), r.marginMs = q.colRealOrNan(10);
    out.push_back(std::move(r));
  }
  return out;
}

void ResultsStore::setRounds(const std::string& group, const RoundsResult& r) {
  inTransaction([&] {
    Stmt del(db_, "DELETE FROM rounds WHERE group_key = ?");
    del.text(1, group);
    FRICTION_CHECK(sqlite3_step(del.s) == SQLITE_DONE, "results store '" + path_ + "': " + sqlite3_errmsg(db_));
    for (size_t k = 0; k < r.rounds.size(); ++k) {
      const RoundRecord& rr = r.rounds[k];
      std::vector<std::string> order;
      for (size_t c : rr.order) order.push_back(r.labels[c]);
      Stmt q(db_, R"(INSERT INTO rounds (group_key, round, order_json, start_s, calibration_serial_ms,
        calibration_parallel_ms, load_avg, slow, dropped, quiesce_ms, cross_core_ns, near_wait_ms, far_blocks,
        memory_gbps) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?))");
      q.text(1, group), q.integer(2, int64_t(k)), q.text(3, nlohmann::json(order).dump()), q.real(4, rr.startSeconds);
      q.real(5, rr.calibration.serialMs), q.real(6, rr.calibration.parallelMs), q.real(7, rr.loadAverage);
      q.integer(8, rr.slow), q.integer(9, rr.dropped), q.real(10, rr.quiesceMs);
      q.real(11, rr.calibration.crossCoreNs), q.real(12, rr.nearWaitMs), q.integer(13, rr.farBlocks);
      q.real(14, rr.calibration.memoryGBs);
      FRICTION_CHECK(sqlite3_step(q.s) == SQLITE_DONE, "results store '" + path_ + "': " + sqlite3_errmsg(db_));
    }
  });
}

std::vector<RoundRow> ResultsStore::rounds(const std::string& groupPrefix) const {
  Stmt q(db_, R"(SELECT group_key, round, order_json, start_s, calibration_serial_ms, calibration_parallel_ms, load_avg,
    slow, dropped, quiesce_ms, cross_core_ns, near_wait_ms, far_blocks, memory_gbps FROM rounds
    WHERE group_key LIKE ? || '%' ORDER BY group_key, round)");
  q.text(1, groupPrefix);
  std::vector<RoundRow> out;
  while (sqlite3_step(q.s) == SQLITE_ROW) {
    RoundRow r;
    r.group = q.colText(0), r.round = sqlite3_column_int64(q.s, 1);
    r.order = nlohmann::json::parse(q.colText(2)).get<std::vector<std::string>>();
    r.startSeconds = sqlite3_column_double(q.s, 3), r.serialCalibrationMs = sqlite3_column_double(q.s, 4);
    r.parallelCalibrationMs = sqlite3_column_double(q.s, 5), r.loadAverage = sqlite3_column_double(q.s, 6);
    r.slow = sqlite3_column_int(q.s, 7), r.dropped = sqlite3_column_int(q.s, 8);
    r.quiesceMs = sqlite3_column_double(q.s, 9);
    r.crossCoreNs = q.colRealOrNan(10);
    r.nearWaitMs = sqlite3_column_double(q.s, 11), r.farBlocks = sqlite3_column_int(q.s, 12);
    r.memoryGBs = q.colRealOrNan(13);
    out.push_back(std::move(r));
  }
  return out;
}

void ResultsStore::mergeFrom(const std::string& otherPath) {
  { ResultsStore check(otherPath); }  // refuses other schema versions with a clear message
  Stmt attach(db_, "ATTACH DATABASE ? AS other");
  attach.text(1, otherPath);
  FRICTION_CHECK(sqlite3_step(attach.s) == SQLITE_DONE, "cannot attach '" + otherPath + "': " + sqlite3_errmsg(db_));
  try {
    // A comparison group's cells were paired round by round: it must come whole from one store, and a group
    // both stores hold must have been measured on the same kind of machine.
    Stmt clash(db_, R"(SELECT o.group_key, o.cpu_model, o.cpu_cores, m.cpu_model, m.cpu_cores FROM other.measurements o
      JOIN measurements m ON o.group_key = m.group_key WHERE o.group_key != '' AND
      (o.cpu_model != m.cpu_model OR o.cpu_cores != m.cpu_cores OR o.cpu_flags != m.cpu_flags) LIMIT 1)");
    if (sqlite3_step(clash.s) == SQLITE_ROW)
      throw Error("cannot merge '" + otherPath + "': comparison group '" + clash.colText(0) + "' was measured on " +
                  clash.colText(1) + " (" + clash.colText(2) + " cores) there and on " + clash.colText(3) + " (" +
                  clash.colText(4) + " cores) here; its cells must not be compared across machines");
    // Columns are listed by name so the id column is renumbered here.
    exec(R"(BEGIN;
      INSERT OR IGNORE INTO measurements (created_at, )" + std::string(kMeasurementColumns) + R"()
      SELECT created_at, )" + kMeasurementColumns + R"( FROM other.measurements
      WHERE group_key = '' OR group_key NOT IN (SELECT group_key FROM measurements);
      INSERT OR IGNORE INTO attributions SELECT * FROM other.attributions;
      INSERT OR IGNORE INTO rounds SELECT * FROM other.rounds;
      COMMIT;)");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    exec("DETACH DATABASE other");
    throw;
  }
  exec("DETACH DATABASE other");
}

std::string modelHash(const Graph& g) {
  // FNV-1a over the structure (constants elided) and then every weight's bytes.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* data, size_t n) {
    auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  std::string structure = printGraph(g, PrintOptions{.maxConstantBytes = 0});
  mix(structure.data(), structure.size());
  for (const Value* v : g.initializers()) mix(v->constant().rawData(), v->constant().byteSize());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace friction::bench
