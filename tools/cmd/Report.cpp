// `friction report --db FILE -o report.html`: computes the metrics of
// docs/metrics.md from the results store (benchmarks/report/ReportData.h),
// writes them as JSON and CSV beside the report, and renders the figures with
// matplotlib (benchmarks/report/render_report.py).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "benchmarks/ResultsStore.h"
#include "benchmarks/report/ReportData.h"
#include "ir/DotFormat.h"
#include "ir/Error.h"
#include "ir/Shell.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace fs = std::filesystem;

namespace friction::cli {
namespace {

struct ReportArgs {
  std::string db, output = "report.html";
  std::string reference;  // executor the others' rankings are compared with; empty: cpu|all-off, else the first
  double minEffect = metrics::kDefaultMinEffect;
};

// The graph of each ablated model (at most three) after the default pipeline, as SVG: what the passes being
// attributed did to it. A model that cannot be loaded here (a file moved since) or drawn (no Graphviz) is
// left out with a note.
nlohmann::json ablatedGraphs(const bench::ResultsStore& store) {
  std::set<std::string> models;
  for (const auto& a : store.attributions())
    if (models.size() < 3) models.insert(a.model);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& model : models) {
    try {
      auto g = loadAndOptimize(model, 1, {});
      out.push_back({{"model", model}, {"svg", renderSvg(printDot(*g, {.title = model + " after the default pipeline (batch 1)"}))}});
    } catch (const Error& e) {
      out.push_back({{"model", model}, {"note", e.what()}});
    }
  }
  return out;
}

void report(const ReportArgs& a) {
  FRICTION_CHECK(fs::exists(a.db), "results store '" + a.db + "' does not exist");
  bench::ResultsStore store(a.db);
  // Without samples: the rankings fetch the few they need.
  std::vector<bench::CellRecord> cells = store.cells("", /*withSamples=*/false);
  FRICTION_CHECK(!cells.empty(), "results store '" + a.db + "' has no measurements");
  nlohmann::json data = bench::reportData(cells, store, a.reference, a.minEffect);
  data["db"] = a.db;
  data["graphs"] = ablatedGraphs(store);
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
