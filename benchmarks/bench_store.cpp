// Results-store scale: fills a store with ROWS measurements (default 1e6;
// 20 models x 2 backends x 8 batches x 12 pass configurations, repeated over
// many experiments, 10 samples each) and times `friction report` on it.
// Target (issue 6): report generation under 30 s for 1e6 rows.
// Usage: bench_store FRICTION_BINARY [ROWS]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "benchmarks/ResultsStore.h"
#include "ir/Shell.h"
#include "passes/PassManager.h"

using namespace friction;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_store FRICTION_BINARY [ROWS]\n");
    return 2;
  }
  long rows = argc > 2 ? std::stol(argv[2]) : 1000000;
  auto dir = std::filesystem::temp_directory_path() / ("friction_bench_store_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string db = (dir / "store.db").string();
  std::vector<std::string> configs = {""};
  configs.push_back(bench::enabledPasses({}));
  for (const auto& p : allPasses()) {  // leave-one-out configurations
    std::string c;
    for (const auto& q : allPasses())
      if (q.name != p.name) c += (c.empty() ? "" : ",") + q.name;
    if (configs.size() < 12) configs.push_back(c);
  }
  auto t0 = std::chrono::steady_clock::now();
  {
    bench::ResultsStore store(db);
    auto fp = bench::Fingerprint::ofThisMachine();
    store.inTransaction([&] {
      for (long i = 0; i < rows; ++i) {
        bench::CellRecord r;
        long cell = i % 3840, experiment = i / 3840;
        int model = int(cell % 20), backend = int(cell / 20 % 2), batch = 1 << (cell / 40 % 8);
        r.experiment = "sweep:bench" + std::to_string(experiment);
        r.model = "zoo:resnet?depth=" + std::to_string(model + 1);
        r.modelHash = std::to_string(model), r.backend = backend ? "ort" : "interp", r.batch = batch;
        r.passes = configs[size_t(cell / 320 % 12)];
        r.cellKey = r.experiment + "|" + std::to_string(cell);
        r.configJson = "{}";
        for (int k = 0; k < 10; ++k) r.m.samplesMs.push_back(double(batch) * (1 + model) * (1 + 0.01 * k));
        // Summary fields filled directly: a bootstrap per row would dominate the fill.
        r.m.summary.n = r.m.samplesMs.size();
        r.m.summary.median = r.m.samplesMs[5], r.m.summary.p10 = r.m.samplesMs[1], r.m.summary.p90 = r.m.samplesMs[9];
        r.m.summary.medianCI = {r.m.samplesMs[3], r.m.samplesMs[7]};
        r.m.stopReason = "reps";
        store.add(r, fp);
      }
    });
  }
  double fill = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto t1 = std::chrono::steady_clock::now();
  int rc = runCommand({argv[1], "report", "--db", db, "-o", (dir / "report.html").string()}, "/dev/null");
  double report = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::printf("store of %ld rows: filled in %.1f s (%.1f MB); friction report %s in %.1f s\n", rows, fill,
              double(std::filesystem::file_size(db)) / 1e6, rc == 0 ? "succeeded" : "FAILED", report);
  if (!std::getenv("FRICTION_KEEP_STORE")) std::filesystem::remove_all(dir);
  else std::printf("kept %s\n", db.c_str());
  return rc == 0 ? 0 : 1;
}
