// The report's data across executors (benchmarks/report/ReportData.h): a store with synthetic latencies whose
// phi, depth slopes and model rankings follow from the formula that built it; the data must recover them, and
// the renderer (render_report.py) must show them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/report/ReportData.h"
#include "ir/Error.h"
#include "ir/Shell.h"

namespace fs = std::filesystem;
using namespace friction;
using nlohmann::json;

namespace {

// Latency of an executor: L(model, depth, batch) = (a + s * depth) * batch^phi, per model its a and s.
struct Executor {
  std::string backend, passes;
  double phi;
  std::map<std::string, std::pair<double, double>> lineOf;  // archetype -> (a ms, s ms per block)
};

double latency(const Executor& e, const std::string& arch, int depth, int batch) {
  auto [a, s] = e.lineOf.at(arch);
  return (a + s * depth) * std::pow(batch, e.phi);
}

class ReportExecutors : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(FRICTION_SOURCE_DIR) + "/.venv/bin/python"))
      GTEST_SKIP() << "the report renderer needs the project venv (scripts/setup.sh)";
    dir_ = fs::temp_directory_path() / ("friction_report_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::string def = bench::enabledPasses({});
    // cpu all-off ranks mlp before vit; ORT (all its optimizations) the other way round; cpu default keeps
    // cpu all-off's order. Gaps of 2x or more against 0.1% noise: every ordering is significant.
    execs_ = {{"cpu", "", 0.5, {{"mlp", {1, 0.5}}, {"vit", {2, 1}}}},
              {"ort?level=all", "", 0.8, {{"mlp", {3, 1}}, {"vit", {1, 0.5}}}},
              {"cpu", def, 0.3, {{"mlp", {0.5, 0.25}}, {"vit", {1, 0.75}}}}};
    bench::ResultsStore store((dir_ / "store.db").string());
    auto fp = bench::Fingerprint::ofThisMachine();
    for (const auto& e : execs_)
      for (const std::string arch : {"mlp", "vit"})
        for (int depth : depths_)
          for (int batch : batches_) {
            bench::CellRecord r;
            r.experiment = "sweep:test";
            r.model = "zoo:" + arch + "?depth=" + std::to_string(depth);
            r.backend = e.backend, r.passes = e.passes, r.batch = batch, r.configJson = "{}";
            r.cellKey = r.model + "|" + r.backend + "|" + r.passes + "|" + std::to_string(batch);
            double l = latency(e, arch, depth, batch);
            for (int k = -5; k <= 5; ++k) r.m.samplesMs.push_back(l * (1 + 0.001 * k));  // median exactly l
            r.m.summary = metrics::summarize(r.m.samplesMs);
            store.add(r, fp);
          }
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // The report's data of the store, as `friction report` computes it.
  json report(const std::string& reference = "") {
    bench::ResultsStore store((dir_ / "store.db").string());
    json data = bench::reportData(store.cells("", /*withSamples=*/false), store, reference);
    data["db"] = (dir_ / "store.db").string();
    return data;
  }
  // The HTML render_report.py makes of `data`.
  std::string html(const json& data) const {
    fs::path jsonPath = dir_ / "report.json", htmlPath = dir_ / "report.html";
    std::ofstream(jsonPath) << data.dump(1);
    std::string root = FRICTION_SOURCE_DIR;
    EXPECT_EQ(runCommand({root + "/.venv/bin/python", root + "/benchmarks/report/render_report.py", jsonPath.string(),
                          htmlPath.string()}),
              0);
    std::ifstream in(htmlPath);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
  std::vector<Executor> execs_;
  std::vector<int> depths_ = {2, 4}, batches_ = {1, 4};
};

const json& executorEntry(const json& data, const std::string& name) {
  for (const auto& e : data["executors"])
    if (e["executor"] == name) return e;
  throw std::runtime_error("no executor " + name);
}

TEST_F(ReportExecutors, PhiAndDepthSlopePerExecutor) {
  json data = report();
  ASSERT_EQ(data["executors"].size(), 3u);
  for (const auto& ex : execs_) {
    std::string label = ex.passes.empty() ? "all-off" : "default";
    const json& e = executorEntry(data, ex.backend + "|" + label);
    for (const std::string arch : {"mlp", "vit"}) {
      for (int depth : depths_)
        EXPECT_NEAR(e["phi"]["zoo:" + arch + "?depth=" + std::to_string(depth)].get<double>(), ex.phi, 1e-9);
      for (int batch : batches_) {
        bool found = false;
        for (const auto& d : e["depth_slopes"])
          if (d["family"] == "zoo:" + arch + "?depth=*" && d["batch"] == batch) {
            found = true;
            EXPECT_NEAR(d["slope_ms"].get<double>(), ex.lineOf.at(arch).second * std::pow(batch, ex.phi), 1e-9);
          }
        EXPECT_TRUE(found) << e["executor"] << " " << arch << " batch " << batch;
      }
    }
  }
}

TEST_F(ReportExecutors, InversionAgainstTheReferenceExecutor) {
  json data = report();
  EXPECT_EQ(data["reference"], "cpu|all-off");  // the default reference when cpu all-off is measured
  // One comparison per (executor, batch, depth): models are ranked only against models of the same depth.
  ASSERT_EQ(data["executor_rankings"].size(), 2 * batches_.size() * depths_.size());
  for (const auto& r : data["executor_rankings"]) {
    EXPECT_EQ(r["reference"], "cpu|all-off");
    std::string depth = std::to_string(r["depth"].get<int>());
    ASSERT_EQ(r["items"].size(), 2u);
    for (const auto& item : r["items"])
      EXPECT_NE(item["name"].get<std::string>().find("depth=" + depth), std::string::npos);
    if (r["executor"] == "ort?level=all|all-off") {
      ASSERT_EQ(r["inversions"].size(), 1u);
      EXPECT_EQ(r["inversions"][0]["a"], "zoo:mlp?depth=" + depth);
      EXPECT_EQ(r["inversions"][0]["b"], "zoo:vit?depth=" + depth);
      EXPECT_LT(r["inversions"][0]["ratio_a"].get<double>(), 1);  // mlp faster under the reference
      EXPECT_GT(r["inversions"][0]["ratio_b"].get<double>(), 1);  // and slower under ORT
      EXPECT_EQ(r["kendall_tau"], -1.0);
    } else {
      EXPECT_EQ(r["executor"], "cpu|default");
      EXPECT_TRUE(r["inversions"].empty());
      EXPECT_EQ(r["kendall_tau"], 1.0);
    }
  }
  EXPECT_EQ(executorEntry(data, "ort?level=all|all-off")["vs_reference"]["inversions"], 4);
  EXPECT_EQ(executorEntry(data, "cpu|default")["vs_reference"]["inversions"], 0);
  EXPECT_FALSE(executorEntry(data, "cpu|all-off").contains("vs_reference"));
  // The HTML lists the inverted pair in the cross-executor table.
  EXPECT_NE(html(data).find("zoo:mlp?depth=2 / zoo:vit?depth=2"), std::string::npos);
}

// Compiler friction mitigation against the reference: S(b) = L_ref / L_exec, R(b) = S(b) / S(1), delta-phi.
TEST_F(ReportExecutors, MitigationAgainstTheReference) {
  json data = report();
  const Executor &ref = execs_[0], &ort = execs_[1];
  int checked = 0;
  for (const auto& m : data["mitigation"]) {
    if (m["executor"] != "ort?level=all|all-off") continue;
    std::string model = m["model"];
    std::string arch = model.substr(4, 3);
    int depth = model.back() - '0';
    EXPECT_NEAR(m["delta_phi"].get<double>(), ort.phi - ref.phi, 1e-9) << model;
    auto speedup = [&](int b) { return latency(ref, arch, depth, b) / latency(ort, arch, depth, b); };
    for (const auto& p : m["points"]) {
      int b = p["batch"];
      EXPECT_NEAR(p["speedup"].get<double>(), speedup(b), 1e-9 * speedup(b)) << model << " batch " << b;
      EXPECT_NEAR(p["mitigation"].get<double>(), speedup(b) / speedup(1), 1e-9) << model << " batch " << b;
      EXPECT_LE(p["mitigation_ci"][0].get<double>(), p["mitigation"].get<double>() + 1e-12);
      EXPECT_GE(p["mitigation_ci"][1].get<double>(), p["mitigation"].get<double>() - 1e-12);
    }
    checked++;
  }
  EXPECT_EQ(checked, 4);  // two archetypes at two depths
  std::string page = html(data);
  EXPECT_NE(page.find("<h2>Compiler friction mitigation</h2>"), std::string::npos);
  EXPECT_NE(page.find("<b>Friction</b>: cpu|default mitigates batch friction most"), std::string::npos);  // phi 0.3
  EXPECT_NE(page.find("<td>+0.30</td>"), std::string::npos);  // ORT's delta-phi in the table
}

TEST_F(ReportExecutors, ChosenReference) {
  json data = report("ort?level=all|all-off");
  EXPECT_EQ(data["reference"], "ort?level=all|all-off");
  EXPECT_EQ(executorEntry(data, "cpu|all-off")["vs_reference"]["inversions"], 4);
  EXPECT_EQ(executorEntry(data, "cpu|default")["vs_reference"]["inversions"], 4);
  EXPECT_THROW(report("tvm|all-off"), Error);
}

// Cells measured in interleaved rounds (each batch a group of its own, every round slowed or sped alike by a
// drift of +-15%): phi, F(b), R(b) and delta-phi get bootstrap intervals over the rounds. ORT's latency grows
// as b^0.6 against the reference's b^0.8 (delta-phi -0.2, found); the reference's A/A twin differs by nothing
// (delta-phi's interval holds 0). The drift, shared within a round, cancels in the paired ratios.
TEST(ReportData, IntervalsOverRounds) {
  fs::path dir = fs::temp_directory_path() / ("friction_report_rounds_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, double>> execs = {{"cpu", 0.8}, {"cpu?profile=off", 0.8}, {"ort", 0.6}};
  const std::vector<int> batches = {1, 4, 16};
  const size_t rounds = 12, perRound = 5;
  {
    bench::ResultsStore store((dir / "store.db").string());
    auto fp = bench::Fingerprint::ofThisMachine();
    for (int batch : batches) {
      uint64_t state = uint64_t(batch) * 7919;
      auto uniform = [&] { return double((state = state * 6364136223846793005ull + 1442695040888963407ull) >> 11) * 0x1.0p-53; };
      std::vector<double> drift;
      for (size_t k = 0; k < rounds; ++k) drift.push_back(0.85 + 0.3 * uniform());
      for (const auto& [backend, phi] : execs) {
        bench::CellRecord r;
        r.experiment = "sweep:rounds";
        r.model = "zoo:mlp";
        r.backend = backend, r.batch = batch, r.configJson = "{}";
        r.cellKey = r.model + "|" + r.backend + "||" + std::to_string(batch);
        for (size_t k = 0; k < rounds; ++k)
          for (size_t j = 0; j < perRound; ++j)
            r.m.samplesMs.push_back(std::pow(batch, phi) * drift[k] * (1 + 0.004 * (uniform() - 0.5)));
        r.m.roundSizes.assign(rounds, perRound);
        r.m.group = "batch " + std::to_string(batch);
        r.m.summary = metrics::summarize(r.m.samplesMs);
        // Output checks: ort unchecked; cpu?profile=off at batch 4 computed a NaN where the interpreter did not.
        if (backend != "ort") r.m.maxAbsError = r.m.maxRelError = backend == "cpu" || batch != 4 ? 2e-7 : INFINITY;
        store.add(r, fp);
      }
    }
    bench::RoundsResult machine;  // three rounds: one far block, 5 ms waited each, 10-30 GB/s
    machine.labels = {"cpu", "ort"};
    for (int k = 0; k < 3; ++k) {
      bench::RoundRecord round;
      round.order = {0, 1};
      round.calibration = {0.3, 0.33, k == 1 ? 500.0 : 100.0, 10.0 * (k + 1)};
      round.nearWaitMs = 5, round.farBlocks = k == 1;
      machine.rounds.push_back(round);
    }
    store.setRounds("batch 1", machine);
  }
  bench::ResultsStore store((dir / "store.db").string());
  json data = bench::reportData(store.cells("", false), store, "cpu|all-off");
  fs::remove_all(dir);
  const json& checks = data["output_checks"];
  EXPECT_EQ(checks["checked"], 6);
  EXPECT_EQ(checks["largest_rel_error"], "inf");
  ASSERT_EQ(checks["differ"].size(), 1u);
  EXPECT_EQ(checks["differ"][0]["backend"], "cpu?profile=off");
  EXPECT_EQ(checks["differ"][0]["batch"], 4);
  const json& state = data["machine"]["rounds"];
  EXPECT_EQ(state["rounds"], 3);
  EXPECT_EQ(state["blocks"], 6);
  EXPECT_EQ(state["far_blocks"], 1);
  EXPECT_NEAR(state["near_wait_s"].get<double>(), 0.015, 1e-12);
  EXPECT_NEAR(state["median_contention"].get<double>(), 1.1, 1e-12);
  EXPECT_EQ(state["median_cross_core_ns"], 100.0);
  EXPECT_NEAR(state["memory_gbps"]["median"].get<double>(), 20, 1e-12);
  EXPECT_NEAR(state["memory_gbps"]["p10"].get<double>(), 12, 1e-12);  // linear between 10 and 20
  for (const auto& s : data["series"]) {
    ASSERT_TRUE(s.contains("phi_ci")) << s["backend"];
    EXPECT_LE(s["phi_ci"][0].get<double>(), s["phi"].get<double>());
    EXPECT_GE(s["phi_ci"][1].get<double>(), s["phi"].get<double>());
    for (const auto& m : s["metrics"]) {  // F = 0 (phi < 1: batching amortizes), inside its interval
      EXPECT_LE(m["friction_ci"][0].get<double>(), m["friction"].get<double>());
      EXPECT_GE(m["friction_ci"][1].get<double>(), m["friction"].get<double>());
    }
  }
  int checked = 0;
  for (const auto& m : data["mitigation"]) {
    ASSERT_TRUE(m["paired"].get<bool>());
    double low = m["delta_phi_ci"][0], high = m["delta_phi_ci"][1], last = m["points"].back()["mitigation_ci"][0];
    if (m["executor"] == "ort|all-off") {
      EXPECT_NEAR(m["delta_phi"].get<double>(), -0.2, 0.005);
      EXPECT_LT(high, 0);
      EXPECT_GT(last, 1);  // R(16) = 16^0.2 = 1.74, significantly above 1
    } else {
      EXPECT_EQ(m["executor"], "cpu?profile=off|all-off");
      EXPECT_LE(low, 0);
      EXPECT_GE(high, 0);
      EXPECT_LT(high - low, 0.01);  // the drift cancels: a narrow interval around no difference
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// Models that differ only in depth=N form one family; the family keeps the knobs in their order.
TEST(ReportData, DepthVariants) {
  using bench::depthVariant;
  EXPECT_EQ(depthVariant("zoo:mlp?depth=2"), std::make_pair(std::string("zoo:mlp?depth=*"), int64_t(2)));
  EXPECT_EQ(depthVariant("zoo:resnet?width=8&depth=12&resolution=32"),
            std::make_pair(std::string("zoo:resnet?width=8&depth=*&resolution=32"), int64_t(12)));
  for (const char* none : {"zoo:mlp", "zoo:mlp?width=8", "zoo:mlp?depth=x", "zoo:mlp?depth=-1", "zoo:mlp?depth",
                           "m.onnx", "depth=2.onnx"})
    EXPECT_EQ(depthVariant(none), std::nullopt) << none;
}

TEST(ReportData, ConfigLabels) {
  std::string def = bench::enabledPasses({});
  EXPECT_EQ(bench::configLabel("", def), "all-off");
  EXPECT_EQ(bench::configLabel(def, def), "default");
  EXPECT_EQ(bench::configLabel(bench::enabledPasses({.disable = {"fuse-epilogues"}}), def), "-fuse-epilogues");
}

}  // namespace
