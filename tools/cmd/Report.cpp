// `friction report --db FILE -o report.html`: computes the metrics of
// docs/metrics.md from the results store (benchmarks/report/ReportData.h),
// writes them as JSON and CSV beside the report, and renders the figures with
// matplotlib (benchmarks/report/render_report.py).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/report/ReportData.h"
#include "ir/Error.h"
#include "ir/Shell.h"
#include "tools/cmd/Commands.h"

namespace fs = std::filesystem;

namespace friction::cli {
namespace {

struct ReportArgs {
  std::string db, output = "report.html";
  std::string reference;  // executor the others' rankings are compared with; empty: cpu|all-off, else the first
  double minEffect = metrics::kDefaultMinEffect;
};

void report(const ReportArgs& a) {
  FRICTION_CHECK(fs::exists(a.db), "results store '" + a.db + "' does not exist");
  bench::ResultsStore store(a.db);
  // Without samples: the rankings fetch the few they need.
  std::vector<bench::CellRecord> cells = store.cells("", /*withSamples=*/false);
  FRICTION_CHECK(!cells.empty(), "results store '" + a.db + "' has no measurements");
  nlohmann::json data = bench::reportData(cells, store, a.reference, a.minEffect);
  data["db"] = a.db;
  fs::path out(a.output);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::path jsonPath = fs::path(out).replace_extension(".json"), csvPath = fs::path(out).replace_extension(".csv");
  std::ofstream(jsonPath) << data.dump(1);
  bench::writeCellsCsv(cells, csvPath.string());
  std::string python = std::string(FRICTION_SOURCE_DIR) + "/.venv/bin/python";
  FRICTION_CHECK(fs::exists(python), "report needs matplotlib in the project venv: run scripts/setup.sh");
  std::vector<std::string> render = {python, std::string(FRICTION_SOURCE_DIR) + "/benchmarks/report/render_report.py",
                                      jsonPath.string(), out.string()};
  FRICTION_CHECK(runCommand(render) == 0, "rendering the report failed (" + shellCommand(render) + ")");
  std::cout << "wrote " << out.string() << " (data: " << jsonPath.string() << ", " << csvPath.string() << ")\n";
}

}  // namespace

void addReport(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand("report", "render the results store as one self-contained HTML file (+ JSON, CSV)");
  cmd->add_option("--db", args->db, "results store (SQLite)")->required();
  cmd->add_option("-o,--output", args->output, "output HTML path");
  cmd->add_option("--reference", args->reference,
                  "executor (BACKEND|CONFIG, e.g. 'cpu|all-off') the others' model rankings are compared with; "
                  "default: cpu|all-off when measured, else the first executor");
  cmd->add_option("--min-effect", args->minEffect,
                  "smallest relative difference reported as one: a ratio's CI must clear 1 by this margin (default "
                  "0.02; two compiled copies of one program differ by up to ~1.5%)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->callback([args] { report(*args); });
}

}  // namespace friction::cli
