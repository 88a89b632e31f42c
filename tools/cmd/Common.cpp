#include "tools/cmd/Common.h"

#include <omp.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "frontend/ModelSource.h"
#include "ir/Error.h"
#include "ir/Spec.h"
#include "ir/Specialize.h"

namespace friction::cli {
namespace {

// An ahead-of-time artifact: its embedded, optimized, batch-bound graph, and its own compiled code unless
// another backend was given.
ResolvedModel resolveArtifact(const std::string& path, const ModelRequest& request) {
  const PipelineOptions p = request.pipeline.value_or(PipelineOptions{});
  FRICTION_CHECK(p.disable.empty() && p.only.empty() && p.passes.empty(),
                 "'" + path + "' is a compiled artifact: its passes were fixed by `friction compile` "
                 "(--disable/--only/--passes do not apply)");
  ResolvedModel m;
  bool ownCode = !request.backendGiven || request.backend == "cpu";
  std::shared_ptr<codegen::Artifact> artifact;
  if (ownCode && request.loadCode) {
    auto t0 = std::chrono::steady_clock::now();
    m.code = codegen::loadArtifact(path);
    m.loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    artifact = m.code.artifact;
  } else {
    artifact = codegen::Artifact::open(path);
  }
  m.batch = artifact->info().batch;
  if (request.batch && request.batchGiven)
    FRICTION_CHECK(*request.batch == *m.batch,
                   "'" + path + "' was compiled for batch " + std::to_string(*m.batch) + ", not " +
                       std::to_string(*request.batch) + " (compile the model again with --batch " +
                       std::to_string(*request.batch) + ")");
  m.graph = m.code.graph ? std::move(m.code.graph) : artifact->graph();
  m.backend = request.backend;
  if (ownCode) {
    Spec aot("cpu");
    aot.set("aot", path);
    m.backend = aot.print();
  }
  if (request.reference) m.reference = artifact->graph();
  m.referenceName = "artifact's embedded graph";
  return m;
}

std::unique_ptr<Graph> loadBound(const std::string& model, std::optional<int64_t> batch) {
  auto g = loadModel(model);
  if (batch) bindInputDims(*g, batchBindings(*g, *batch));
  return g;
}

}  // namespace

ResolvedModel resolveModel(const std::string& model, const ModelRequest& request) {
  if (codegen::isArtifactPath(model)) return resolveArtifact(model, request);
  std::vector<const PassInfo*> pipeline;
  if (request.pipeline) {
    std::vector<std::string> notes;
    pipeline = buildPipeline(*request.pipeline, &notes);
    for (const auto& n : notes) std::cerr << "note: " << n << "\n";
  }
  ResolvedModel m;
  m.batch = request.batch;
  m.graph = loadBound(model, request.batch);
  if (request.pipeline) m.records = runPipeline(*m.graph, pipeline, request.run);
  m.backend = request.backend;
  if (request.reference) m.reference = loadBound(model, request.batch);
  m.referenceName = "unoptimized model";
  return m;
}

std::unique_ptr<Graph> loadForBatch(const std::string& model, std::optional<int64_t> batch) {
  return resolveModel(model, {.batch = batch}).graph;
}

std::unique_ptr<Graph> loadAndOptimize(const std::string& model, std::optional<int64_t> batch,
                                       const PipelineOptions& options, const RunOptions& run,
                                       std::vector<PassRecord>* records) {
  ResolvedModel m = resolveModel(model, {.batch = batch, .pipeline = options, .run = run});
  if (records) *records = std::move(m.records);
  return std::move(m.graph);
}

namespace {
CLI::Validator atLeast(double lowest, bool strict, const std::string& what) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v)) return "'" + text + "' is not a number";
        if (strict ? v > lowest : v >= lowest) return "";
        return "must be " + what + ", got " + text;
      },
      what == "positive" ? "POSITIVE" : "NONNEGATIVE");
}
}  // namespace

const CLI::Validator Positive = atLeast(0, true, "positive");
const CLI::Validator NonNegative = atLeast(0, false, "zero or more");

void addPipelineOptions(CLI::App* cmd, PipelineOptions& o) {
  auto* d = cmd->add_option("--disable", o.disable, "default pipeline without these passes")->delimiter(',');
  auto* on = cmd->add_option("--only", o.only, "only these passes (and their prerequisites)")->delimiter(',');
  auto* p = cmd->add_option("--passes", o.passes, "exactly these passes in this order; 'none' for no pass")->delimiter(',');
  d->excludes(on)->excludes(p);
  on->excludes(p);
}

void addRoundsOptions(CLI::App* cmd, bench::RoundsOptions& o, bool budget) {
  cmd->add_option("--rounds", o.rounds, "interleaved rounds at most")->check(Positive)->capture_default_str();
  cmd->add_option("--min-rounds", o.minRounds, "rounds before the CI target or the time budget may stop")
      ->check(Positive)
      ->capture_default_str();
  cmd->add_option("--block-ms", o.blockMs, "target time of one configuration's block in a round")
      ->check(Positive)
      ->capture_default_str();
  cmd->add_option("--block-warmup-ms", o.blockWarmupMs, "untimed runs before each block, as many as fill this "
                                                        "(at least one; 0: none)")
      ->check(NonNegative)
      ->capture_default_str();
  if (budget) {
    cmd->add_option("--reps", o.repsPerRound, "repetitions of each configuration per round (0: enough for --block-ms)")
        ->check(NonNegative);
    cmd->add_option("--target-ci", o.targetRelCI, "stop once every paired CI half-width / ratio is below this (0: off)");
    cmd->add_option("--max-seconds", o.maxSeconds, "time budget of the rounds (after --min-rounds)");
  }
  cmd->add_option("--order", o.order, "clustered (a fresh random order every round; a sweep's cells of one "
                                      "model back to back), shuffled (clusters ignored), fixed, or sequential (the old "
                                      "protocol, every round of one configuration before the next: for comparison)")
      ->transform(CLI::CheckedTransformer(bench::roundOrderNames()));
  cmd->add_flag("--repeat-slow-rounds", o.repeatSlowRounds, "replace rounds the calibration flags as slow");
  cmd->add_option("--near-wait-ms", o.nearWaitMs,
                  "before each block, wait up to this long for the cores to share a cache again (a VM's host moves "
                  "them apart for seconds at a time; 0: time blocks in whichever state; docs/metrics.md)")
      ->check(NonNegative);
  cmd->add_option("--round-wait-ms", o.roundWaitMs,
                  "a round's blocks wait at most this long in all for the cores to share a cache; once it is spent, "
                  "the round's other blocks are timed in whichever state")
      ->check(NonNegative);
  cmd->add_option("--epochs", o.epochs,
                  "split the rounds into this many epochs and prepare every configuration anew before each epoch "
                  "but the first (new worker processes, new arenas), so the interval covers where their memory "
                  "lands as well as drift (docs/metrics.md, \"Layout epochs\")")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

int threadsToMeasureWith(int requested) {
  if (requested > 0) return requested;
  const int all = omp_get_max_threads(), free = bench::freeCores(all);
  if (free < all)
    std::fprintf(stderr, "note: other processes hold cores: measuring with %d of %d threads (--threads %d to use all)\n",
                 free, all, all);
  return free;
}

nlohmann::json measurementJson(const bench::Measurement& m) {
  const auto& s = m.summary;
  nlohmann::json j{{"threads", m.threads},
                   {"compile_ms", m.compileMs},
                   {"samples_ms", m.samplesMs},
                   {"median_ms", s.median},
                   {"p10_ms", s.p10},
                   {"p90_ms", s.p90},
                   {"ci95_ms", {s.medianCI.low, s.medianCI.high}},
                   {"unstable", s.unstable},
                   {"stop", m.stopReason},
                   {"peak_rss_kb", m.peakRssKb},
                   {"executor", m.executor},
                   {"interp_nodes", m.interpNodes >= 0 ? nlohmann::json(m.interpNodes) : nlohmann::json()},
                   {"internal_timing", m.internalTiming},
                   {"overhead_ms_per_rep", m.overheadMsPerRep}};
  if (m.maxAbsError >= 0)
    j["max_abs_error"] = m.maxAbsError, j["max_rel_error"] = m.maxRelError, j["outputs_differ"] = m.outputsDiffer();
  if (!m.profile.empty()) j["profile"] = m.profile;
  return j;
}

bench::RoundsResult measureGroup(const std::vector<bench::PreparedCell*>& cells, bench::RoundsOptions options,
                                 const std::string& group, const std::string& progress) {
  // Before the rounds: whether this thread count can have the cores (the median of three calibrations).
  std::vector<double> contention;
  for (int k = 0; k < 3; ++k) contention.push_back(bench::calibrate(cells[0]->m.threads).contention());
  if (double c = metrics::median(contention); c > options.contentionLimit)
    std::fprintf(stderr, "warning: %s other processes hold the cores: %d threads at once run %.1fx slower than one; "
                         "measure on an idle machine or with fewer --threads\n", progress.c_str(), cells[0]->m.threads, c);
  auto t0 = std::chrono::steady_clock::now();
  options.onRound = [&](size_t r) {
    std::fprintf(stderr, "%s round %zu/%d of %zu programs, %.0f s\n", progress.c_str(), r + 1, options.rounds,
                 cells.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  bench::RoundsResult rounds = bench::measureInRounds(cells, options, group);
  size_t far = 0, blocks = 0;
  for (const auto& r : rounds.rounds) far += size_t(r.farBlocks), blocks += r.order.size();
  if (far * 10 > blocks)
    std::fprintf(stderr, "warning: %s %zu of %zu blocks were timed while the host kept the cores apart (longer than "
                         "--near-wait-ms): their comparisons mix two machine states (docs/metrics.md, \"Core-to-core "
                         "distance\")\n", progress.c_str(), far, blocks);
  if (rounds.contended)
    std::fprintf(stderr, "warning: %s the calibration read the cores as shared (median contention %.2f): every cell "
                         "of this group is marked unstable; check that nothing else ran\n", progress.c_str(),
                 rounds.medianContention);
  return rounds;
}

void storeGroup(bench::ResultsStore& store, const std::vector<bench::CellRecord>& rows,
                const bench::RoundsResult& rounds, const std::string& group) {
  auto fp = bench::Fingerprint::ofThisMachine();
  store.inTransaction([&] {
    for (const auto& r : rows) store.add(r, fp);
    store.setRounds(group, rounds);
  });
}

std::string humanCount(double v) {
  const char* units[] = {"", " K", " M", " G", " T"};
  int u = 0;
  while (v >= 1000 && u < 4) v /= 1000, u++;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f%s" : "%.0f%s", v, units[u]);
  return buf;
}

}  // namespace friction::cli
