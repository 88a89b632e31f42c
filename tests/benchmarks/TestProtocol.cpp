// The measurement protocol's repetition loop (benchmarks/Protocol.cpp): it asks
// the executor for batches of back-to-back runs (CompiledModel::timeRuns) and
// must end up with exactly the samples, stop reason and timing source the
// options call for, whether the executor times runs itself (bridges) or not.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include "benchmarks/Protocol.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Error.h"
#include "ir/Specialize.h"
#include "runtime/Backend.h"

namespace friction {
namespace {

// What the fake executors saw: every timeRuns batch size and every run() call.
struct Calls {
  std::vector<int> batches;
  int runs = 0;
};
Calls calls;
double runMs = 1.0;  // each fake run's duration (slept, and reported by the self-timing executor)

// Times runs itself, like a bridge: one batch per request, each run reported as runMs.
class SelfTimedModel : public CompiledModel {
 public:
  std::vector<Tensor> run(const std::vector<Tensor>&) override {
    ++calls.runs;
    return {};
  }
  TimedRuns timeRuns(const std::vector<Tensor>&, int n) override {
    calls.batches.push_back(n);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(runMs * n));
    return {std::vector<double>(size_t(n), runMs), true};
  }
};

// Only run(): the default timeRuns loops it and takes the wall clock.
class WallTimedModel : public CompiledModel {
 public:
  std::vector<Tensor> run(const std::vector<Tensor>&) override {
    ++calls.runs;
    return {};
  }
};

template <class Model>
class FakeBackend : public Backend {
 public:
  std::string name() const override { return "fake"; }
  std::unique_ptr<CompiledModel> compile(const Graph&) override { return std::make_unique<Model>(); }
};

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registerBackend("test-self-timed", [](const auto&) { return std::make_unique<FakeBackend<SelfTimedModel>>(); });
    registerBackend("test-wall-timed", [](const auto&) { return std::make_unique<FakeBackend<WallTimedModel>>(); });
    graph = zoo::build(zoo::parseSpec("mlp"));
    bindInputDims(*graph, batchBindings(*graph, 1));
    calls = {};
    runMs = 1.0;
    options.checkOutputs = false;
    options.warmup = 2;
  }
  bench::Measurement measure(const std::string& backend) {
    options.backend = backend;
    return bench::measure(*graph, nullptr, options);
  }
  std::unique_ptr<Graph> graph;
  bench::MeasureOptions options;
};

TEST_F(ProtocolTest, SelfTimedExecutorRunsTheRepetitionsInBatches) {
  options.reps = 20;
  options.minReps = 5;
  auto m = measure("test-self-timed");
  EXPECT_EQ(m.samplesMs.size(), 20u);
  EXPECT_TRUE(m.internalTiming);
  EXPECT_EQ(m.stopReason, "reps");
  EXPECT_EQ(std::accumulate(calls.batches.begin(), calls.batches.end(), 0), 20);
  ASSERT_EQ(calls.batches.size(), 2u);  // the minimum, then the rest in one go
  EXPECT_EQ(calls.batches[0], 5);
  EXPECT_EQ(calls.runs, 2);  // warm-up only: timed runs go through timeRuns
}

TEST_F(ProtocolTest, WallTimedExecutorRunsEachRepetitionThroughRun) {
  options.reps = 12;
  auto m = measure("test-wall-timed");
  EXPECT_EQ(m.samplesMs.size(), 12u);
  EXPECT_FALSE(m.internalTiming);
  EXPECT_EQ(calls.runs, 2 + 12);
}

TEST_F(ProtocolTest, AdaptiveStopTestsBetweenBatches) {
  options.reps = 1000;
  options.minReps = 5;
  options.targetRelCI = 0.05;  // identical samples: the CI has zero width at the first test
  auto m = measure("test-self-timed");
  EXPECT_EQ(m.stopReason, "ci");
  EXPECT_EQ(m.samplesMs.size(), 5u);
  EXPECT_EQ(calls.batches, std::vector<int>{5});
}

TEST_F(ProtocolTest, BatchesStayWithinTheTimeBudget) {
  options.reps = 100000;
  options.minReps = 5;
  options.maxSeconds = 0.2;
  runMs = 10;  // the budget fits ~20 runs; one batch of the 100000 asked for would take 17 minutes
  auto m = measure("test-self-timed");
  EXPECT_EQ(m.stopReason, "time");
  EXPECT_GE(m.samplesMs.size(), 5u);
  EXPECT_LT(m.samplesMs.size(), 100u);
}

// Interleaved rounds: the interpreter's reference run, every compile and every output check happen before the
// first timed block, so nothing but the configurations' own runs lies inside a measurement.
TEST_F(ProtocolTest, CheckAndCompileComeBeforeAnyTiming) {
  std::vector<std::string> events;
  bench::setProtocolTrace([&](const std::string& e) { events.push_back(e); });
  options.checkOutputs = true;
  std::vector<Tensor> expected = bench::referenceOutputs(*graph, *graph, options.seed);
  options.backend = "interp";
  auto a = bench::prepare(*graph, &expected, options, "a");
  auto b = bench::prepare(*graph, &expected, options, "b");
  bench::RoundsOptions ro;
  ro.rounds = 3;
  ro.repsPerRound = 2;
  ro.blockWarmupMs = 0;
  ro.settleMs = 0;
  bench::RoundsResult r = bench::measureInRounds({a.get(), b.get()}, ro, "group");
  bench::setProtocolTrace(nullptr);

  auto first = std::find(events.begin(), events.end(), "rounds begin");
  ASSERT_NE(first, events.end());
  for (auto it = events.begin(); it != first; ++it)
    EXPECT_TRUE(it->rfind("compile", 0) == 0 || it->rfind("check", 0) == 0) << *it;
  // Inside the rounds only blocks, and between them the new layouts of the default epochs (more than the 3 rounds:
  // one a round here), prepared outside any block and never checked again.
  for (auto it = first + 1; it != events.end() - 1; ++it)
    EXPECT_TRUE(it->rfind("block ", 0) == 0 || it->rfind("reincarnate ", 0) == 0) << *it;
  EXPECT_EQ(events.back(), "rounds end");
  EXPECT_EQ(std::count(events.begin(), events.end(), "check a"), 1);
  ASSERT_GE(ro.epochs, 3);
  EXPECT_EQ(std::count(events.begin(), events.end(), "reincarnate a"), 2);
  EXPECT_EQ(std::count(events.begin(), events.end(), "block b"), 1 + 3);  // the block-size probe, then 3 rounds
  // The cells' measurements come from the rounds: 3 blocks of 2, outputs checked, the group recorded.
  EXPECT_EQ(a->m.samplesMs.size(), 6u);
  EXPECT_EQ(a->m.roundSizes, (std::vector<size_t>{2, 2, 2}));
  EXPECT_EQ(a->m.group, "group");
  EXPECT_EQ(a->m.maxAbsError, 0.0);
  EXPECT_EQ(r.rounds.size(), 3u);
}

// The check before timing flags outputs that differ from the reference beyond kOutputsDifferRelError
// (relative to the reference's largest |value|), a NaN where the reference has none included; outputs
// within it, as f32 kernels that reassociate sums give, are not flagged.
TEST_F(ProtocolTest, OutputsThatDifferFromTheReferenceAreFlagged) {
  options.checkOutputs = true;
  options.backend = "interp";
  const std::vector<Tensor> exact = bench::referenceOutputs(*graph, *graph, options.seed);
  auto nudged = [&](double by) {
    std::vector<Tensor> want = {exact[0].clone()};
    float* v = want[0].data<float>();
    float scale = 0;
    for (int64_t k = 0; k < want[0].numel(); ++k) scale = std::max(scale, std::fabs(v[k]));
    v[0] += float(by) * scale;
    return want;
  };
  for (double by : {0.0, 1e-5, 2e-3, double(NAN)}) {
    std::vector<Tensor> want = nudged(by);
    auto c = bench::prepare(*graph, &want, options, "nudged");
    const bool differs = !(by < bench::kOutputsDifferRelError);  // NaN: differs
    EXPECT_EQ(c->m.outputsDiffer(), differs) << "nudged by " << by << ": max rel error " << c->m.maxRelError;
  }
}

// "Consistently slow": a calibration that reads the cores as shared (two threads at once 2x one) marks
// every cell of the group unstable, however narrow its CI; the same cells on a calibration of 1 are not.
TEST_F(ProtocolTest, ContendedMachineMarksEveryCellUnstable) {
  options.backend = "interp";
  for (double contention : {1.0, 2.0}) {
    auto a = bench::prepare(*graph, nullptr, options, "a");
    auto b = bench::prepare(*graph, nullptr, options, "b");
    bench::RoundsOptions ro;
    ro.rounds = 3, ro.repsPerRound = 2, ro.blockWarmupMs = 0, ro.settleMs = 0;
    ro.calibration = [contention] { return bench::Calibration{1.0, contention}; };
    bench::RoundsResult r = bench::measureInRounds({a.get(), b.get()}, ro, "group");
    EXPECT_EQ(r.contended, contention > 1.5);
    EXPECT_EQ(a->m.contention, contention);
    if (contention > 1.5) {
      EXPECT_TRUE(a->m.summary.unstable && b->m.summary.unstable);
    }
  }
}

// Rounds calibrate with the cells' threads unless told otherwise: `bench --compare` and `ablate` calibrated
// one thread until 2026-12-01, so they never read contention, never probed the cores' distance and never
// waited for near cores.
TEST_F(ProtocolTest, RoundsCalibrateWithTheCellsThreadCount) {
  options.backend = "interp";
  options.threads = 2;
  auto a = bench::prepare(*graph, nullptr, options, "a");
  auto b = bench::prepare(*graph, nullptr, options, "b");
  bench::RoundsOptions ro;
  ro.rounds = ro.minRounds = 2;
  ro.repsPerRound = 2;
  ro.nearWaitMs = 0;
  bench::RoundsResult r = bench::measureInRounds({a.get(), b.get()}, ro, "group");
  for (const auto& round : r.rounds) {
    EXPECT_GT(round.calibration.crossCoreNs, 0) << "two threads: the cores' round trip is probed";
    EXPECT_GT(round.calibration.memoryGBs, 0);
  }
}

TEST_F(ProtocolTest, CellsMeasuredTogetherMustShareAThreadCount) {
  options.backend = "test-self-timed";
  auto a = bench::prepare(*graph, nullptr, options, "a");
  auto b = bench::prepare(*graph, nullptr, options, "b");
  b->m.threads = a->m.threads + 1;
  EXPECT_THROW(bench::measureInRounds({a.get(), b.get()}, bench::RoundsOptions{}, "g"), Error);
}

}  // namespace
}  // namespace friction
