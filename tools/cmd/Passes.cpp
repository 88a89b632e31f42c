// `friction passes` (the registry) and `friction opt` (run a pipeline, show
// what it did, write the result as ONNX or text IR).
#include <fstream>
#include <iostream>

#include "frontend/ModelSource.h"
#include "ir/Error.h"
#include "ir/DotFormat.h"
#include "ir/TextFormat.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"

namespace friction::cli {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& s : v) r += (r.empty() ? "" : ",") + s;
  return r.empty() ? "-" : r;
}

void listPasses() {
  std::printf("%-34s %-28s %s\n", "pass", "prerequisites", "summary");
  for (const auto& p : allPasses())
    std::printf("%-34s %-28s %s\n", p.name.c_str(), joined(p.prerequisites).c_str(), p.summary.c_str());
}

struct OptArgs {
  std::string model, output, dumpDir, dot, svg;
  int64_t batch = 1;
  bool symbolic = false, printAfterAll = false, verifyEach = false, before = false;
  PipelineOptions pipeline;
};

void printRecord(const PassRecord& r) {
  std::fprintf(stderr, "%-34s %8.2f ms  nodes %ld -> %ld  kernels %ld -> %ld  fused %ld  intermediates %sB -> %sB",
               r.name.c_str(), r.millis, long(r.before.nodes), long(r.after.nodes), long(r.before.kernels),
               long(r.after.kernels), long(r.after.fusedRegions), humanCount(double(r.before.intermediateBytes)).c_str(),
               humanCount(double(r.after.intermediateBytes)).c_str());
  for (const auto& [k, v] : r.stats) std::fprintf(stderr, "  %s %ld", k.c_str(), long(v));
  std::fprintf(stderr, "\n");
}

// --dot/--svg: the graph after the passes, or with --before the model as loaded. True when one was asked for.
bool drawPictures(const OptArgs& a, const Graph& g) {
  if (a.dot.empty() && a.svg.empty()) return false;
  std::string passes = a.pipeline.passes.empty() ? "" : joined(a.pipeline.passes);
  if (passes.empty() && !a.pipeline.only.empty()) passes = "only " + joined(a.pipeline.only);
  if (passes.empty() && !a.pipeline.disable.empty()) passes = "default without " + joined(a.pipeline.disable);
  if (passes.empty()) passes = "default pipeline";
  DotOptions o{.title = a.model + (a.before ? " (before the passes)" : " after passes: " + passes)};
  std::string dot = printDot(g, o);
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream f(path);
    FRICTION_CHECK(f.good(), "cannot write '" + path + "'");
    f << text;
    std::cerr << "wrote " << path << "\n";
  };
  if (!a.dot.empty()) write(a.dot, dot);
  if (!a.svg.empty()) write(a.svg, renderSvg(dot));
  return true;
}

void optimize(const OptArgs& a) {
  RunOptions run;
  run.verifyEach = a.verifyEach;
  run.dumpDir = a.dumpDir;
  run.afterPass = [&](const PassRecord& r, const Graph& g) {
    printRecord(r);
    if (a.printAfterAll) std::cout << "// after " << r.name << "\n" << printGraph(g, PrintOptions{.maxConstantBytes = 64});
  };
  // Symbolic: keep the batch symbolic (the exported model then takes any batch).
  std::optional<int64_t> batch = a.symbolic ? std::nullopt : std::optional<int64_t>(a.batch);
  auto g = loadAndOptimize(a.model, batch, a.pipeline, run);
  bool drawn = drawPictures(a, a.before ? *loadForBatch(a.model, batch) : *g);
  if (a.output.empty()) {
    if (!a.printAfterAll && !drawn) std::cout << printGraph(*g, PrintOptions{.maxConstantBytes = 64});
    return;
  }
  saveModel(*g, a.output);
  std::cerr << "wrote " << a.output << "\n";
}

}  // namespace

void addPasses(CLI::App& app) {
  app.add_subcommand("passes", "pass registry: name, prerequisites, summary")->callback(listPasses);
  auto args = std::make_shared<OptArgs>();
  auto* cmd = app.add_subcommand("opt", "run the pass pipeline on a model and write the result");
  cmd->add_option("model", args->model, "path to .onnx/.fir or zoo:ARCH?knobs")->required();
  addPipelineOptions(cmd, args->pipeline);
  cmd->add_option("-o,--output", args->output, "OUT.onnx or OUT.fir (default: print text IR)");
  auto* batch = cmd->add_option("--batch", args->batch, "bind the symbolic batch dim (default: keep it symbolic)")
                    ->check(Positive);
  cmd->callback([args, batch] {
    args->symbolic = batch->count() == 0;
    optimize(*args);
  });
  cmd->add_flag("--print-ir-after-all", args->printAfterAll, "print the IR after every pass");
  cmd->add_option("--dot", args->dot, "draw the graph after the passes as Graphviz DOT (fused regions as clusters)");
  cmd->add_option("--svg", args->svg, "draw the graph after the passes as SVG (needs Graphviz's dot)");
  cmd->add_flag("--before", args->before, "with --dot/--svg: draw the model before the passes");
  cmd->add_option("--dump-dir", args->dumpDir, "write <k>-<pass>.fir after every pass into this folder");
  cmd->add_flag("--verify-each", args->verifyEach, "run the IR verifier after every pass");
}

}  // namespace friction::cli
