// The results store: the cell key (sweeps and ablations resume a stored database by it, so its spelling must
// not change), the interleaved rounds' columns and table, the upgrade of version-2 files, and merging.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <unistd.h>

#include <filesystem>

#include "benchmarks/ResultsStore.h"
#include "ir/Error.h"

namespace friction {
namespace {

TEST(CellRecord, KeyKeepsTheStoredFormat) {
  bench::CellRecord r;
  r.experiment = "sweep:study", r.modelHash = "9f86d081884c7d65", r.backend = "ort?threads=2&level=all";
  r.batch = 8, r.passes = "fold-constants,eliminate-dead-code";
  EXPECT_EQ(r.key(2), "sweep:study|9f86d081884c7d65|ort?threads=2&level=all|8|fold-constants,eliminate-dead-code|t2");
  r.experiment = "ablate:loo", r.passes = "";
  EXPECT_EQ(r.key(0), "ablate:loo|9f86d081884c7d65|ort?threads=2&level=all|8||t0");
}

namespace fs = std::filesystem;

class StoreFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("friction-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A cell measured in three rounds of two samples in `group`.
  static bench::CellRecord cell(const std::string& key, const std::string& group) {
    bench::CellRecord r;
    r.cellKey = key, r.experiment = "sweep:t", r.model = "m", r.modelHash = "h", r.backend = "cpu", r.passes = "";
    r.m.samplesMs = {1, 1.1, 1.2, 1.3, 1.4, 1.5};
    r.m.roundSizes = {2, 2, 2};
    r.m.group = group;
    r.m.contention = 1.07;
    r.m.summary.n = 6;
    return r;
  }
  static bench::RoundsResult threeRounds() {
    bench::RoundsResult r;
    r.labels = {"a", "b"};
    for (int k = 0; k < 3; ++k) {
      bench::RoundRecord rr;
      rr.order = {size_t(k % 2), size_t(1 - k % 2)};
      rr.calibration = {0.3, 0.33};
      rr.quiesceMs = 2;
      rr.calibration.crossCoreNs = 100 + 400 * k;
      rr.calibration.memoryGBs = 20 + k;
      rr.nearWaitMs = 7;
      rr.farBlocks = k;
      rr.slow = k == 2;
      r.rounds.push_back(rr);
    }
    return r;
  }
  fs::path dir_;
};

TEST_F(StoreFiles, RoundsColumnsAndTableRoundTrip) {
  bench::ResultsStore store(path("s.db"));
  auto fp = bench::Fingerprint::ofThisMachine();
  store.add(cell("k1", "g"), fp);
  bench::CellRecord twin = cell("k1", "g");
  bench::markAAControl(twin);
  store.add(twin, fp);
  store.setRounds("g", threeRounds());
  // Two verdicts from the stored margin: [0.1, 0.9] clears 0.05 ms, [0.1, 0.9] does not clear 0.2 ms.
  store.setAttributions({{"ablate:loo", "m", "cpu", "loo", "p", 1, 0.5, 0, 0.1, 0.9, 0.05},
                         {"ablate:loo", "m", "cpu", "loo", "q", 1, 0.5, 0, 0.1, 0.9, 0.2}});

  auto cells = store.cells();
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[0].m.roundSizes, (std::vector<size_t>{2, 2, 2}));
  EXPECT_EQ(cells[0].m.group, "g");
  EXPECT_DOUBLE_EQ(cells[0].m.contention, 1.07);
  EXPECT_FALSE(bench::isAAControl(cells[0]));
  EXPECT_TRUE(bench::isAAControl(cells[1]));
  EXPECT_EQ(cells[1].cellKey, "k1|A/A");
  auto rounds = store.rounds("g");
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[1].order, (std::vector<std::string>{"b", "a"}));
  EXPECT_TRUE(rounds[2].slow);
  EXPECT_DOUBLE_EQ(rounds[0].quiesceMs, 2);
  EXPECT_DOUBLE_EQ(rounds[2].crossCoreNs, 900);
  EXPECT_DOUBLE_EQ(rounds[1].nearWaitMs, 7);
  EXPECT_EQ(rounds[2].farBlocks, 2);
  EXPECT_DOUBLE_EQ(rounds[2].memoryGBs, 22);
  auto att = store.attributions();
  ASSERT_EQ(att.size(), 2u);
  EXPECT_TRUE(att[0].hasCI());
  EXPECT_DOUBLE_EQ(att[0].ciHighMs, 0.9);
  EXPECT_DOUBLE_EQ(att[1].marginMs, 0.2);
  EXPECT_TRUE(att[0].measurable());
  EXPECT_FALSE(att[1].measurable());
}

TEST_F(StoreFiles, VersionTwoIsUpgradedInPlace) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path("v2.db").c_str(), &db), SQLITE_OK);
  // The version-2 schema as friction wrote it, with one row.
  const char* v2 = R"(
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta VALUES ('schema_version', '2');
    CREATE TABLE measurements (id INTEGER PRIMARY KEY, cell_key TEXT NOT NULL UNIQUE, experiment TEXT NOT NULL,
      created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), model TEXT NOT NULL,
      model_hash TEXT NOT NULL, backend TEXT NOT NULL, batch INTEGER NOT NULL, passes TEXT NOT NULL,
      config_json TEXT NOT NULL, threads INTEGER NOT NULL, n INTEGER NOT NULL, median_ms REAL NOT NULL,
      p10_ms REAL NOT NULL, p90_ms REAL NOT NULL, ci_low_ms REAL NOT NULL, ci_high_ms REAL NOT NULL,
      unstable INTEGER NOT NULL, stop_reason TEXT NOT NULL, compile_ms REAL NOT NULL, peak_rss_kb INTEGER NOT NULL,
      max_abs_error REAL, max_rel_error REAL, samples_json TEXT NOT NULL, cpu_model TEXT NOT NULL,
      cpu_cores INTEGER NOT NULL, cpu_flags TEXT NOT NULL, git_revision TEXT NOT NULL, tool_version TEXT NOT NULL,
      libraries TEXT NOT NULL, executor TEXT NOT NULL DEFAULT '', internal_timing INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE attributions (experiment TEXT NOT NULL, model TEXT NOT NULL, backend TEXT NOT NULL,
      batch INTEGER NOT NULL, method TEXT NOT NULL, pass TEXT NOT NULL, value_ms REAL NOT NULL,
      stderr_ms REAL NOT NULL, PRIMARY KEY (experiment, model, backend, batch, method, pass));
    INSERT INTO measurements (cell_key, experiment, model, model_hash, backend, batch, passes, config_json, threads,
      n, median_ms, p10_ms, p90_ms, ci_low_ms, ci_high_ms, unstable, stop_reason, compile_ms, peak_rss_kb,
      samples_json, cpu_model, cpu_cores, cpu_flags, git_revision, tool_version, libraries)
      VALUES ('old', 'sweep:t', 'm', 'h', 'cpu', 1, '', '{}', 2, 2, 1.5, 1, 2, 1, 2, 0, 'reps', 3, 100, '[1,2]',
              'cpu', 2, '', 'r', 'v', '{}');
    INSERT INTO attributions VALUES ('ablate:loo', 'm', 'cpu', 1, 'loo', 'p', 0.5, 0);)";
  ASSERT_EQ(sqlite3_exec(db, v2, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  bench::ResultsStore store(path("v2.db"));
  auto cells = store.cells();
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].m.samplesMs, (std::vector<double>{1, 2}));
  EXPECT_TRUE(cells[0].m.roundSizes.empty());  // one burst: no rounds, no group
  EXPECT_EQ(cells[0].m.group, "");
  EXPECT_FALSE(store.attributions()[0].hasCI());
  EXPECT_TRUE(std::isnan(store.attributions()[0].marginMs));
  store.add(cell("new", "g"), bench::Fingerprint::ofThisMachine());  // and it takes version-6 rows and rounds
  store.setRounds("g", threeRounds());
  EXPECT_DOUBLE_EQ(store.rounds("g")[1].crossCoreNs, 500);
  EXPECT_DOUBLE_EQ(store.rounds("g")[1].memoryGBs, 21);
  store.setAttributions({{"ablate:loo", "m", "cpu", "loo", "q", 1, 0.5, 0, 0.1, 0.9, 0.2}});
  EXPECT_EQ(store.cells().size(), 2u);
  // A round as version 5 wrote it, without the memory bandwidth: read as not known.
  ASSERT_EQ(sqlite3_open(path("v2.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, R"(INSERT INTO rounds (group_key, round, order_json, start_s, calibration_serial_ms,
      calibration_parallel_ms, load_avg, slow, dropped, quiesce_ms, cross_core_ns, near_wait_ms, far_blocks)
      VALUES ('v5', 0, '[]', 0, 0.3, 0.3, 0, 0, 0, 0, 100, 0, 0))", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  bench::ResultsStore again(path("v2.db"));  // now version 6: opens without upgrading twice
  EXPECT_EQ(again.cells().size(), 2u);
  EXPECT_TRUE(std::isnan(again.rounds("v5")[0].memoryGBs));
}

TEST_F(StoreFiles, MergeTakesAGroupWholeAndRefusesOneFromAnotherMachine) {
  auto here = bench::Fingerprint::ofThisMachine(), there = here;
  there.cpuModel = "another CPU";
  {
    bench::ResultsStore a(path("a.db")), b(path("b.db")), c(path("c.db"));
    a.add(cell("k1", "g1"), here);
    b.add(cell("k1", "g1"), here);  // the same group measured again, with one more cell: not mixed in
    b.add(cell("k2", "g1"), here);
    b.add(cell("k3", "g2"), here);
    c.add(cell("k4", "g1"), there);
  }
  bench::ResultsStore a(path("a.db"));
  a.mergeFrom(path("b.db"));
  std::vector<std::string> keys;
  for (const auto& r : a.cells()) keys.push_back(r.cellKey);
  EXPECT_EQ(keys, (std::vector<std::string>{"k1", "k3"}));
  try {
    a.mergeFrom(path("c.db"));
    FAIL() << "a group measured on two machines was merged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("comparison group 'g1' was measured on another CPU"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(a.cells().size(), 2u);
}

}  // namespace
}  // namespace friction
