// What the cores' distance costs each executor, and which steps of a friction
// program pay it (docs/metrics.md, "Core-to-core distance"). A VM's host moves
// its vCPUs between cores that share a cache and cores that do not; programs
// whose threads pass data slow down in the far state, each by its own amount.
// This program runs the executors one run at a time, round robin, for
// --seconds, probing the round trip (bench::crossCoreRoundTrip) before and
// after each run; a run whose two readings agree counts as near (both within
// 2x the near level, bench::NearLevel) or far (both over 3x), any other is dropped. Per
// executor it prints the median run in each state and their ratio; a
// friction backend with `profile=on` prints its step profile for each state
// (two compiled copies, each run on the one of the state read before it).
// Usage: bench_core_distance MODEL [--batch N] [--threads N] [--seconds S]
//                            [--executor 'BACKEND|CONFIG']...
//   CONFIG as in sweep specs (default, all-off, -pass, ...); a bridge gets --threads;
//   default executors: 'cpu?profile=on|default' and 'ort?level=all|all-off'
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/Rounds.h"
#include "benchmarks/SweepSpec.h"
#include "benchmarks/metrics/Stats.h"
#include "codegen/Registration.h"
#include "ir/Error.h"
#include "runtime/Backend.h"
#include "runtime/Inputs.h"
#include "tools/cmd/Common.h"
#include "vendor_bridge/Bridges.h"

using namespace friction;

namespace {

enum State { Near, Far, Unknown };

struct Executor {
  std::string backend, config;
  std::unique_ptr<Graph> graph;
  std::vector<Tensor> inputs;
  std::unique_ptr<CompiledModel> model[2];  // the copy run in each state (one copy unless it profiles)
  std::vector<double> ms[2];
  int dropped = 0;
};

int run(int argc, char** argv) {
  if (argc < 2)
    throw Error("usage: bench_core_distance MODEL [--batch N] [--threads N] [--seconds S] "
                "[--executor 'BACKEND|CONFIG']...");
  std::string modelPath = argv[1];
  int64_t batch = 1;
  int threads = 2;
  double seconds = 60;
  std::vector<std::string> specs;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 == argc) throw Error(std::string(argv[i]) + " needs a value");
    if (!std::strcmp(argv[i], "--batch")) batch = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--executor")) specs.push_back(argv[i + 1]);
    else throw Error(std::string("unknown option ") + argv[i]);
  }
  if (threads < 2) throw Error("needs at least 2 threads (one thread has no core-to-core traffic)");
  if (specs.empty())
    specs = {"cpu?profile=on|default", "ort?level=all|all-off"};
  omp_set_num_threads(threads);

  std::vector<Executor> executors;
  for (const std::string& spec : specs) {
    Executor e;
    const size_t bar = spec.find('|');
    e.backend = vendor::withThreads(spec.substr(0, bar), threads);  // a bridge runs with the same threads
    e.config = bar == std::string::npos ? "default" : spec.substr(bar + 1);
    e.graph = cli::loadAndOptimize(modelPath, batch, bench::parseSweepConfig(e.config));
    e.inputs = seededInputs(*e.graph, 1);
    const bool profiles = e.backend.find("profile=on") != std::string::npos;
    for (int s = 0; s < (profiles ? 2 : 1); ++s) {
      e.model[s] = createBackend(e.backend)->compile(*e.graph);
      for (int w = 0; w < 3; ++w) e.model[s]->run(e.inputs);
    }
    executors.push_back(std::move(e));
  }

  bench::NearLevel near;  // the harness's near level (a low quantile of the readings)
  auto state = [&](double ns) {
    near.add(ns);
    return ns <= 2 * near.level() ? Near : ns > 3 * near.level() ? Far : Unknown;
  };
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  for (size_t turn = 0; Clock::now() < end; ++turn) {
    Executor& e = executors[turn % executors.size()];
    const State before = state(bench::crossCoreRoundTrip(threads));
    CompiledModel& m = *e.model[before == Far && e.model[1] ? 1 : 0];
    const auto t0 = Clock::now();
    m.run(e.inputs);
    const double wallMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double ms = m.lastRunMs() >= 0 ? m.lastRunMs() : wallMs;
    // A vendor's pool spins on after a run (ORT's ~50 ms here): wait it out before probing or timing anything.
    if (m.leavesCoresBusy()) bench::quiesce(500);
    const State after = state(bench::crossCoreRoundTrip(threads));
    if (before == after && before != Unknown)
      e.ms[before].push_back(ms);
    else
      ++e.dropped;
  }

  std::printf("%s batch %lld, %d threads, near round trip %.0f ns\n", modelPath.c_str(), (long long)batch, threads,
              near.level());
  std::printf("%-40s %8s %8s %6s %6s %7s %7s\n", "executor", "near ms", "far ms", "far/nr", "runs", "far", "dropped");
  for (const Executor& e : executors) {
    // "-" for a state the host never put the cores in during the run.
    auto cell = [](double v) {
      char text[32] = "-";
      if (v > 0) std::snprintf(text, sizeof text, "%.3f", v);
      return std::string(text);
    };
    auto median = [](const std::vector<double>& v) { return v.empty() ? 0 : metrics::median(v); };
    const double nearMs = median(e.ms[Near]), farMs = median(e.ms[Far]);
    std::printf("%-40s %8s %8s %6s %6zu %7zu %7d\n", (e.backend + "|" + e.config).c_str(), cell(nearMs).c_str(),
                cell(farMs).c_str(), cell(nearMs > 0 ? farMs / nearMs : 0).c_str(),
                e.ms[Near].size() + e.ms[Far].size(), e.ms[Far].size(), e.dropped);
  }
  for (const Executor& e : executors)
    if (e.model[1])
      for (int s : {Near, Far})
        std::printf("\n%s, cores %s (the copy run when the probe before read %s; dropped runs count here too):\n%s",
                    e.backend.c_str(), s == Near ? "near" : "far", s == Near ? "near or unclear" : "far",
                    e.model[s]->profile().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  vendor::registerVendorBridges();
  codegen::registerCpuBackend();
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_core_distance: error: %s\n", e.what());
    return 1;
  }
}
