// `friction bench`: one model, one backend, one pass configuration, measured
// under the protocol of benchmarks/Protocol.h: alone in one burst, or, with
// `--compare EXECUTOR`, together with the other executors in interleaved
// rounds, each compared with it round by round.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "benchmarks/Protocol.h"
#include "benchmarks/SweepSpec.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/cmd/Common.h"
#include "vendor_bridge/Bridges.h"

namespace friction::cli {
namespace {

struct BenchArgs {
  std::string model;
  int64_t batch = 1;
  bool json = false;
  bool batchGiven = false, backendGiven = false, maxSecondsGiven = false;
  PipelineOptions pipeline;
  bench::MeasureOptions measure;
  std::vector<std::string> compare;  // BACKEND|CONFIG executors measured beside it in rounds
  bench::RoundsOptions rounds;
};

// `--compare`: the model under each executor beside the one asked for, in interleaved rounds.
void benchCompared(const BenchArgs& a, const ResolvedModel& model) {
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<std::string> names = {a.measure.backend + " (this)"};
  std::vector<std::unique_ptr<bench::PreparedCell>> cells;
  std::vector<Tensor> expected;
  if (a.measure.checkOutputs && model.reference) expected = bench::referenceOutputs(*model.reference, *model.graph, a.measure.seed);
  const std::vector<Tensor>* check = expected.empty() ? nullptr : &expected;
  cells.push_back(bench::prepare(*model.graph, check, a.measure, names[0]));
  for (const auto& e : a.compare) {
    size_t bar = e.rfind('|');
    FRICTION_CHECK(bar != std::string::npos, "--compare takes BACKEND|CONFIG (e.g. 'ort?level=all|all-off'), not '" + e + "'");
    bench::MeasureOptions mo = a.measure;
    mo.backend = vendor::withThreads(e.substr(0, bar), a.measure.threads);
    graphs.push_back(loadAndOptimize(a.model, a.batch, bench::parseSweepConfig(e.substr(bar + 1))));
    names.push_back(mo.backend + "|" + e.substr(bar + 1));
    cells.push_back(bench::prepare(*graphs.back(), check, mo, names.back()));
  }
  std::vector<bench::PreparedCell*> timed;
  for (auto& c : cells) timed.push_back(c.get());
  bench::RoundsOptions ro = a.rounds;
  ro.seed = a.measure.seed;
  ro.targetRelCI = a.measure.targetRelCI;
  if (a.maxSecondsGiven) ro.maxSeconds = a.measure.maxSeconds;
  bench::RoundsResult r = measureGroup(timed, ro, "bench", "bench:");
  nlohmann::json rows = nlohmann::json::array();
  if (!a.json) std::printf("%s  batch %ld  threads %d  %zu interleaved rounds\n", a.model.c_str(), long(a.batch),
                           cells[0]->m.threads, r.keptRounds());
  for (size_t k = 0; k < cells.size(); ++k) {
    const auto& m = cells[k]->m;
    metrics::PairedRatio p = metrics::pairedRatio(r.roundValues(k), r.roundValues(0), a.measure.seed, 2000, 0.95,
                                                  metrics::kDefaultMinEffect);
    rows.push_back({{"executor", names[k]}, {"median_ms", m.summary.median},
                    {"ci95_ms", {m.summary.medianCI.low, m.summary.medianCI.high}}, {"unstable", m.summary.unstable},
                    {"round_ms", r.roundValues(k)},  // the kept rounds' block medians, in round order
                    {"ratio_to_first", p.ratio}, {"ratio_ci", {p.ci.low, p.ci.high}}, {"differs", p.direction != 0},
                    {"max_rel_error", m.maxRelError >= 0 ? nlohmann::json(m.maxRelError) : nlohmann::json()},
                    {"outputs_differ", m.maxRelError >= 0 ? nlohmann::json(m.outputsDiffer()) : nlohmann::json()},
                    {"executor_description", m.executor}});
    if (!a.json)
      std::printf("  %-44s median %9.3f ms (95%% CI %.3f-%.3f)%s  ratio to first %.3f (CI %.3f-%.3f)%s%s\n",
                  names[k].c_str(), m.summary.median, m.summary.medianCI.low, m.summary.medianCI.high,
                  m.summary.unstable ? " UNSTABLE" : "", p.ratio, p.ci.low, p.ci.high,
                  k == 0 ? "" : p.direction ? "" : "  not shown to differ by more than 2%",
                  m.outputsDiffer() ? "  OUTPUTS DIFFER" : "");
  }
  // The machine as each round's calibration found it (docs/metrics.md): runs an hour apart can be set against it.
  nlohmann::json machine = nlohmann::json::array();
  std::vector<double> memory;
  for (const auto& round : r.rounds) {
    machine.push_back({{"serial_ms", round.calibration.serialMs}, {"contention", round.calibration.contention()},
                       {"cross_core_ns", round.calibration.crossCoreNs}, {"memory_gbps", round.calibration.memoryGBs},
                       {"far_blocks", round.farBlocks}});
    memory.push_back(round.calibration.memoryGBs);
  }
  if (a.json)
    std::cout << nlohmann::json{{"model", a.model}, {"batch", a.batch}, {"rounds", r.keptRounds()}, {"executors", rows},
                                {"machine", machine}}.dump(2) << "\n";
  else
    std::printf("  memory bandwidth at the rounds' calibrations: median %.1f GB/s (%.1f-%.1f)\n", metrics::median(memory),
                *std::min_element(memory.begin(), memory.end()), *std::max_element(memory.begin(), memory.end()));
}

void benchModel(BenchArgs a) {
  // An ahead-of-time artifact runs its compiled code (backend cpu?aot=FILE; "compile" is the load), checked
  // against its embedded graph on the interpreter (the unoptimized model is not in the artifact).
  ResolvedModel model = resolveModel(a.model, {.batch = a.batch, .batchGiven = a.batchGiven, .pipeline = a.pipeline,
                                               .backend = a.measure.backend, .backendGiven = a.backendGiven,
                                               .reference = a.measure.checkOutputs});
  a.batch = *model.batch;
  a.measure.backend = vendor::withThreads(model.backend, a.measure.threads);  // a bridge's own thread pool too
  if (!a.compare.empty()) return benchCompared(a, model);
  bench::Measurement m = bench::measure(*model.graph, model.reference.get(), a.measure);
  const auto& s = m.summary;
  if (a.json) {
    nlohmann::json j{{"model", a.model}, {"backend", a.measure.backend}, {"batch", a.batch}};
    j.update(measurementJson(m));
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s  backend %s  batch %ld  threads %d%s%s\n", a.model.c_str(), a.measure.backend.c_str(), long(a.batch),
              m.threads, m.executor.empty() ? "" : "  ", m.executor.c_str());
  if (m.internalTiming) std::printf("  timed inside the executor: runs back to back in the bridge's worker, transport excluded\n");
  std::printf("  median %.3f ms  (p10 %.3f, p90 %.3f, 95%% CI %.3f-%.3f)  over %zu runs, stopped by %s%s\n", s.median,
              s.p10, s.p90, s.medianCI.low, s.medianCI.high, s.n, m.stopReason.c_str(),
              s.unstable ? "  UNSTABLE: CI wider than 5% of the median" : "");
  std::printf("  throughput %.1f samples/s  compile %.1f ms  peak RSS %.1f MB  harness overhead %.3f ms/run\n",
              1000.0 * double(a.batch) / s.median, m.compileMs, double(m.peakRssKb) / 1024, m.overheadMsPerRep);
  if (m.maxAbsError >= 0)
    std::printf("  vs interp on the %s: max abs error %.3g, max rel error %.3g%s\n", model.referenceName.c_str(),
                m.maxAbsError, m.maxRelError, m.outputsDiffer() ? "  OUTPUTS DIFFER" : "");
  std::printf("%s", m.profile.c_str());
}

}  // namespace

void addBench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "measure latency under the protocol (warm-up, repetitions, CI)");
  cmd->add_option("model", args->model, "path to .onnx/.fir, zoo:ARCH?knobs, or an OUT.so from `friction compile`")->required();
  auto* backend = cmd->add_option("--backend", args->measure.backend, "interp, cpu, cuda, halide, or a vendor bridge (OUT.so: its compiled code)");
  auto* batch = cmd->add_option("--batch", args->batch, "binds the symbolic batch dim")->check(Positive);
  cmd->add_option("--warmup", args->measure.warmup, "warm-up runs (not measured)")->check(NonNegative);
  cmd->add_option("--reps", args->measure.reps, "maximum measured runs")->check(Positive);
  cmd->add_option("--min-reps", args->measure.minReps, "runs before the adaptive stop may end")->check(Positive);
  cmd->add_option("--target-ci", args->measure.targetRelCI, "stop once the 95% CI half-width / median is below this (0: off)");
  auto* maxSeconds = cmd->add_option("--max-seconds", args->measure.maxSeconds, "time budget for the measured runs");
  cmd->add_option("--threads", args->measure.threads, "threads: OpenMP, and a vendor bridge's threads= option (default: the cores no other process holds)");
  cmd->add_option("--seed", args->measure.seed, "seed of inputs and bootstrap");
  cmd->add_flag("!--no-check", args->measure.checkOutputs, "skip the comparison with the interpreter");
  cmd->add_flag("--json", args->json, "machine-readable output with raw samples");
  cmd->add_option("--compare", args->compare,
                  "also measure the model under this executor (BACKEND|CONFIG, CONFIG as in sweep specs: default, "
                  "all-off, -pass,...), all in interleaved rounds with ratios to the first (repeatable)");
  addRoundsOptions(cmd, args->rounds, /*budget=*/false);  // with --compare; --target-ci/--max-seconds apply to the rounds
  addPipelineOptions(cmd, args->pipeline);
  cmd->callback([args, batch, backend, maxSeconds] {
    args->batchGiven = batch->count() > 0;
    args->maxSecondsGiven = maxSeconds->count() > 0;
    args->backendGiven = backend->count() > 0;
    args->measure.threads = threadsToMeasureWith(args->measure.threads);
    benchModel(*args);
  });
}

}  // namespace friction::cli
