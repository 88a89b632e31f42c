// Interleaved rounds (benchmarks/Rounds.h) on a synthetic machine whose speed drifts with (virtual) time, with
// a known 3% effect and an A/A pair: the interleaved protocol must find the effect and nothing on the A/A pair;
// the old sequential order must demonstrably fail on the same machine. No real timing: the configurations
// report synthetic durations and advance a virtual clock, so the test is deterministic.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "benchmarks/Rounds.h"
#include "benchmarks/metrics/Paired.h"

namespace friction::bench {
namespace {

// A machine whose speed drifts: a slow trend (+15% over the run) and a slower wave (+-5%), plus 1% noise
// per run. Every run and calibration advances the clock by its own duration.
struct DriftingMachine {
  double clockMs = 0;
  double trendPerMs = 0.15 / 1200, wavePeriodMs = 2000, waveAmplitude = 0.05;
  std::mt19937_64 rng;
  std::lognormal_distribution<double> noise{0, 0.01};
  explicit DriftingMachine(uint64_t seed) : rng(seed) {}

  double slowdown() const {
    return 1 + trendPerMs * clockMs + waveAmplitude * std::sin(2 * M_PI * clockMs / wavePeriodMs);
  }
  double run(double baseMs) {
    double ms = baseMs * slowdown() * noise(rng);
    clockMs += ms;
    return ms;
  }
  Contender contender(const std::string& label, double baseMs) {
    return {label, [this, baseMs](int n) {
              std::vector<double> t;
              for (int i = 0; i < n; ++i) t.push_back(run(baseMs));
              return t;
            }};
  }
  RoundsOptions options(RoundOrder order) {
    RoundsOptions o;
    o.rounds = 20;
    o.repsPerRound = 20;
    o.settleMs = 0;
    o.blockWarmupMs = 0;  // nothing on this machine ramps up
    o.order = order;
    o.calibration = [this] {
      double serial = run(0.3);
      return Calibration{serial, serial};
    };
    return o;
  }
};

// A (1 ms), A' (the same program again) and B (3% slower), measured on a drifting machine.
RoundsResult measureAAB(uint64_t seed, RoundOrder order) {
  DriftingMachine m(seed);
  RoundsOptions o = m.options(order);
  o.seed = seed;
  return runRounds({m.contender("A", 1.0), m.contender("A'", 1.0), m.contender("B", 1.03)}, o);
}

TEST(Rounds, InterleavedFindsTheEffectAndNothingOnTheAAPair) {
  for (uint64_t seed = 0; seed < 10; ++seed) {
    RoundsResult r = measureAAB(seed, RoundOrder::Shuffled);
    metrics::PairedRatio aa = r.ratio(1, 0, seed), effect = r.ratio(2, 0, seed);
    EXPECT_EQ(aa.direction, 0) << "seed " << seed << ": A/A ratio " << aa.ratio << " CI " << aa.ci.low << "-" << aa.ci.high;
    EXPECT_EQ(effect.direction, 1) << "seed " << seed << ": effect " << effect.ratio << " CI " << effect.ci.low << "-"
                                   << effect.ci.high;
    EXPECT_NEAR(effect.ratio, 1.03, 0.005) << "seed " << seed;
    EXPECT_LT(std::abs(aa.ratio - 1), 0.01) << "seed " << seed;
  }
}

TEST(Rounds, SequentialOrderReportsADifferenceThatIsNotThere) {
  // The same machine measured the old way (every repetition of A, then of A', then of B): drift lands between
  // the configurations and the A/A pair looks different, whichever statistic compares them.
  int falseDifferences = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    RoundsResult r = measureAAB(seed, RoundOrder::Sequential);
    metrics::PairedRatio aa = r.ratio(1, 0, seed);
    falseDifferences += aa.direction != 0;
    EXPECT_GT(aa.ratio, 1.03) << "seed " << seed << ": the trend makes A' look slower than A";
  }
  EXPECT_EQ(falseDifferences, 10);
}

TEST(Rounds, EveryRoundTimesEveryConfigurationOnceInAFreshOrder) {
  RoundsResult r = measureAAB(7, RoundOrder::Shuffled);
  ASSERT_EQ(r.rounds.size(), 20u);
  std::set<std::vector<size_t>> orders;
  for (const auto& round : r.rounds) {
    EXPECT_EQ(std::set<size_t>(round.order.begin(), round.order.end()), (std::set<size_t>{0, 1, 2}));
    EXPECT_EQ(round.order.size(), 3u);
    orders.insert(round.order);
  }
  EXPECT_GT(orders.size(), 1u) << "the order must change between rounds";
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_EQ(r.roundValues(c).size(), 20u);
    EXPECT_EQ(r.keptSamples(c).size(), 400u);
  }
  EXPECT_EQ(r.stopReason, "rounds");
}

// A host whose speed is a new random state every 30 ms (virtual; lognormal, a tenth apart): states that outlast
// a 25 ms block and not a round, as measured on this kind of VM (docs/metrics.md, "Short blocks, many rounds").
// A round's ratio of two spellings of one program then reads the ratio of two states, unless both blocks fall in
// one state.
struct HostStates {
  DriftingMachine m;
  std::mt19937_64 states;
  std::lognormal_distribution<double> state{0, 0.1};
  long spell = -1;
  double speed = 1;
  explicit HostStates(uint64_t seed) : m(seed), states(seed) { m.trendPerMs = m.waveAmplitude = 0; }
  // A 1 ms program.
  Contender contender(const std::string& label, const std::string& cluster = "") {
    Contender c{label, [this](int n) {
                  std::vector<double> t;
                  for (int i = 0; i < n; ++i) {
                    if (long(m.clockMs / 30) != spell) spell = long(m.clockMs / 30), speed = state(states);
                    t.push_back(m.run(speed));
                  }
                  return t;
                }};
    c.cluster = cluster;
    return c;
  }
  RoundsOptions options(RoundOrder order, int rounds, double blockMs, uint64_t seed) {
    RoundsOptions o = m.options(order);
    o.rounds = o.minRounds = rounds;
    o.repsPerRound = 0;
    o.blockMs = blockMs;
    o.seed = seed;
    return o;
  }
};

// The default protocol (many rounds of short blocks) must bring the A/A ratio closer to 1 than 10 rounds of 25 ms
// do, for the same time.
TEST(Rounds, ManyRoundsOfShortBlocksAverageOverTheHostsStates) {
  auto aaError = [](int rounds, double blockMs, uint64_t seed) {
    HostStates h(seed);
    RoundsResult r = runRounds({h.contender("a"), h.contender("a'")}, h.options(RoundOrder::Shuffled, rounds, blockMs, seed));
    return std::abs(std::log(r.ratio(1, 0, seed, 200).ratio));
  };
  const RoundsOptions defaults;
  ASSERT_NEAR(defaults.rounds * defaults.blockMs, 10 * 25, 10) << "the comparison below assumes equal timed runs";
  double fewLong = 0, manyShort = 0;
  for (uint64_t seed = 0; seed < 12; ++seed)
    fewLong += aaError(10, 25, seed), manyShort += aaError(defaults.rounds, defaults.blockMs, seed);
  EXPECT_LT(manyShort, 0.5 * fewLong) << "|ln A/A ratio| summed over 12 seeds: 10 rounds x 25 ms " << fewLong
                                      << ", " << defaults.rounds << " x " << defaults.blockMs << " ms " << manyShort;
}

// Five models of four configurations each (the first model's first two: an A/A pair), as in a sweep's group.
std::vector<Contender> fiveModels(HostStates& h) {
  std::vector<Contender> cs;
  for (int model = 0; model < 5; ++model)
    for (int k = 0; k < 4; ++k)
      cs.push_back(h.contender("m" + std::to_string(model) + "c" + std::to_string(k), "m" + std::to_string(model)));
  return cs;
}

TEST(Rounds, ClusteredOrderKeepsEachClusterTogetherInAFreshOrder) {
  HostStates h(3);
  std::vector<Contender> cs = fiveModels(h);
  RoundsResult r = runRounds(cs, h.options(RoundOrder::Clustered, 20, 2, 3));
  std::set<std::vector<size_t>> orders;
  std::set<size_t> firstClusters;
  for (const auto& round : r.rounds) {
    ASSERT_EQ(std::set<size_t>(round.order.begin(), round.order.end()).size(), cs.size());
    for (size_t pos = 0; pos < round.order.size(); pos += 4)  // four blocks of one model, then the next model's
      for (size_t k = 1; k < 4; ++k)
        EXPECT_EQ(cs[round.order[pos + k]].cluster, cs[round.order[pos]].cluster) << "round order breaks a cluster";
    orders.insert(round.order);
    firstClusters.insert(round.order[0] / 4);
  }
  EXPECT_GT(orders.size(), 10u) << "orders must change between rounds";
  EXPECT_GT(firstClusters.size(), 2u) << "the clusters' order must change between rounds";

  // Without clusters, the clustered order is the shuffled one, round for round.
  HostStates a(4), b(4);
  RoundsResult clustered = runRounds({a.contender("x"), a.contender("y"), a.contender("z")},
                                     a.options(RoundOrder::Clustered, 5, 2, 4));
  RoundsResult shuffled = runRounds({b.contender("x"), b.contender("y"), b.contender("z")},
                                    b.options(RoundOrder::Shuffled, 5, 2, 4));
  for (size_t k = 0; k < 5; ++k) EXPECT_EQ(clustered.rounds[k].order, shuffled.rounds[k].order);
}

// On a host whose states outlast a block and not a round, a model's blocks kept back to back meet nearer
// states: its A/A ratio comes closer to 1 than in rounds shuffled whole, for the same runs.
TEST(Rounds, ClusteredOrderBringsAModelsAAPairCloser) {
  auto aaError = [](RoundOrder order, uint64_t seed) {
    HostStates h(seed);
    RoundsResult r = runRounds(fiveModels(h), h.options(order, 30, 8, seed));
    return std::abs(std::log(r.ratio(1, 0, seed, 200).ratio));
  };
  double clustered = 0, shuffled = 0;
  for (uint64_t seed = 0; seed < 12; ++seed)
    clustered += aaError(RoundOrder::Clustered, seed), shuffled += aaError(RoundOrder::Shuffled, seed);
  EXPECT_LT(clustered, 0.5 * shuffled) << "|ln A/A ratio| summed over 12 seeds: clustered " << clustered
                                       << ", shuffled " << shuffled;
}

TEST(Rounds, FixedOrderKeepsTheGivenOrder) {
  DriftingMachine m(1);
  RoundsOptions o = m.options(RoundOrder::Fixed);
  o.rounds = o.minRounds = 3;
  RoundsResult r = runRounds({m.contender("x", 1), m.contender("y", 2)}, o);
  for (const auto& round : r.rounds) EXPECT_EQ(round.order, (std::vector<size_t>{0, 1}));
}

// Four rounds in a fixed order on a synthetic machine, noting which contender ran last each time the harness
// waited for quiet ("start": none yet).
struct QuietWaits {
  DriftingMachine machine{1};
  RoundsOptions options = machine.options(RoundOrder::Fixed);
  std::vector<std::string> before;
  std::string last = "start";
  QuietWaits() {
    options.rounds = options.minRounds = 4;
    options.quiesce = [this](double) {
      before.push_back(last);
      return 10.0;
    };
  }
  RoundsResult run(std::vector<Contender> cs) {
    for (Contender& c : cs)
      c.time = [this, time = c.time, label = c.label](int n) {
        last = label;
        return time(n);
      };
    return runRounds(cs, options);
  }
};

// The wait for quiet follows a block whose executor may leave its threads spinning (a vendor bridge), and
// never a block of friction's own backends: in a fixed order x (friction) then v (bridge), each round waits
// once, before its calibration (v ran last), and the probes add one wait at the very start.
TEST(Rounds, WaitsForQuietOnlyAfterExecutorsThatLeaveCoresBusy) {
  QuietWaits waits;
  Contender x = waits.machine.contender("x", 1), v = waits.machine.contender("v", 1);
  x.leavesCoresBusy = false;
  RoundsResult r = waits.run({x, v});
  EXPECT_EQ(waits.before, (std::vector<std::string>{"start", "v", "v", "v", "v"}));
  for (const auto& round : r.rounds) EXPECT_EQ(round.quiesceMs, 0) << "the wait before the calibration is not the round's";
}

// An executor that can park what its runs left spinning (a bridge stops its worker) needs no wait for quiet: in a
// fixed order x (friction), p (a bridge that parks), w (one that cannot), only w's blocks are waited after, and p
// is parked after its probes and each of its blocks.
TEST(Rounds, ParkedExecutorsNeedNoWaitForQuiet) {
  QuietWaits waits;
  int parks = 0;
  Contender x = waits.machine.contender("x", 1), p = waits.machine.contender("p", 1), w = waits.machine.contender("w", 1);
  x.leavesCoresBusy = false;
  p.park = [&parks] { return ++parks > 0; };
  w.park = [] { return false; };
  waits.run({x, p, w});
  EXPECT_EQ(waits.before, (std::vector<std::string>{"start", "w", "w", "w", "w"}));
  EXPECT_EQ(parks, 1 + 4);
}

TEST(Rounds, BlockSizeFollowsTheTargetBlockTime) {
  DriftingMachine m(2);
  RoundsOptions o = m.options(RoundOrder::Shuffled);
  o.repsPerRound = 0;
  o.blockMs = 40;
  o.rounds = o.minRounds = 2;
  m.trendPerMs = m.waveAmplitude = 0;
  RoundsResult r = runRounds({m.contender("fast", 0.5), m.contender("slow", 20)}, o);
  EXPECT_NEAR(r.reps[0], 80, 2);
  EXPECT_EQ(r.reps[1], 3);  // 40 ms holds two 20 ms runs, but a block has at least minBlockReps
  EXPECT_EQ(r.warmupReps[0], 0);
  o.blockWarmupMs = 10;  // untimed runs before every block: as many as fill 10 ms, at least one
  r = runRounds({m.contender("fast", 0.5), m.contender("slow", 20)}, o);
  EXPECT_NEAR(r.warmupReps[0], 20, 1);
  EXPECT_EQ(r.warmupReps[1], 1);
  EXPECT_EQ(r.samples[0][1].size(), size_t(r.reps[0]));
}

TEST(Rounds, StopsOnceThePairedCIsMeetTheTarget) {
  DriftingMachine m(3);
  RoundsOptions o = m.options(RoundOrder::Shuffled);
  o.rounds = 200;
  o.minRounds = 5;
  o.targetRelCI = 0.02;
  RoundsResult r = runRounds({m.contender("a", 1), m.contender("b", 1.1)}, o);
  EXPECT_EQ(r.stopReason, "ci");
  EXPECT_LT(r.rounds.size(), 200u);
  EXPECT_LT(r.ratio(1, 0).relHalfWidth(), 0.02);
}

TEST(Rounds, SlowRoundsAreFlaggedAndOptionallyReplaced) {
  // Every fourth calibration runs 30% slow (something else ran): those rounds are flagged; with
  // repeatSlowRounds they are dropped and replaced until `rounds` rounds are kept.
  for (bool repeat : {false, true}) {
    DriftingMachine m(4);
    m.trendPerMs = m.waveAmplitude = 0;
    RoundsOptions o = m.options(RoundOrder::Shuffled);
    o.rounds = 8;
    o.repeatSlowRounds = repeat;
    int calls = 0;
    o.calibration = [&] {
      double ms = (++calls % 4 == 0 ? 1.3 : 1.0) * m.run(0.3);
      return Calibration{ms, ms};
    };
    RoundsResult r = runRounds({m.contender("a", 1)}, o);
    size_t slow = 0, dropped = 0;
    for (const auto& round : r.rounds) slow += round.slow, dropped += round.dropped;
    EXPECT_GE(slow, 2u);
    EXPECT_EQ(r.keptRounds(), 8u);
    EXPECT_EQ(dropped, repeat ? slow : 0u);
    EXPECT_EQ(r.rounds.size(), repeat ? 8u + slow : 8u);
  }
}

TEST(Rounds, ContentionIsTheParallelToSerialCalibrationRatio) {
  DriftingMachine m(5);
  RoundsOptions o = m.options(RoundOrder::Shuffled);
  o.rounds = 4;
  o.calibration = [&] { return Calibration{0.3, 0.6}; };  // another process holds one of two cores
  RoundsResult busy = runRounds({m.contender("a", 1)}, o);
  EXPECT_TRUE(busy.contended);
  EXPECT_DOUBLE_EQ(busy.medianContention, 2.0);
  o.calibration = [&] { return Calibration{0.3, 0.31}; };
  EXPECT_FALSE(runRounds({m.contender("a", 1)}, o).contended);
}

// A host that moves the two cores apart 60% of the time, in 150 ms spells (virtual): in the far state the
// core-to-core probe reads 500 ns instead of 100 and `shared` (a program whose threads pass data) runs 1.4x slow,
// while `local` does not. Their ratio in the near state is 1. Waiting for near cores before each block measures
// that ratio whatever the mixture of states; timing blocks in whichever state the host is in measures the mixture.
struct MovingCoresMachine : DriftingMachine {
  using DriftingMachine::DriftingMachine;
  bool far() const { return std::fmod(clockMs, 250) >= 100; }
  Contender contender(const std::string& label, double nearMs, double farMs) {
    return {label, [this, nearMs, farMs](int n) {
              std::vector<double> t;
              for (int i = 0; i < n; ++i) t.push_back(run(far() ? farMs : nearMs));
              return t;
            }};
  }
  RoundsOptions options(double nearWaitMs) {
    RoundsOptions o = DriftingMachine::options(RoundOrder::Shuffled);
    o.repsPerRound = 10;
    o.nearWaitMs = nearWaitMs;
    o.crossCore = [this] {
      clockMs += 5;  // the 5 ms the wait sleeps between probes
      return far() ? 500.0 : 100.0;
    };
    return o;
  }
};

TEST(Rounds, WaitingForNearCoresMeasuresTheNearStateWhateverTheMixture) {
  for (uint64_t seed = 0; seed < 3; ++seed) {
    MovingCoresMachine m(seed);
    m.trendPerMs = 0;
    RoundsResult waited = runRounds({m.contender("local", 1, 1), m.contender("shared", 1, 1.4)}, m.options(2000));
    // Judged as the protocol judges: a block that the host moves apart mid-way leaves a bias under its 2% margin.
    metrics::PairedRatio near = metrics::pairedRatio(waited.roundValues(1), waited.roundValues(0), seed, 2000, 0.95,
                                                     metrics::kDefaultMinEffect);
    EXPECT_NEAR(near.ratio, 1.0, 0.02) << "seed " << seed;
    EXPECT_EQ(near.direction, 0) << "seed " << seed << ": ratio " << near.ratio << " CI " << near.ci.low << "-"
                                 << near.ci.high;
    double waitedMs = 0;
    for (const auto& round : waited.rounds) {
      waitedMs += round.nearWaitMs;
      EXPECT_EQ(round.farBlocks, 0);
    }
    EXPECT_GT(waitedMs, 0) << "the host was far 60% of the time: some block must have waited";

    RoundsResult mixed = runRounds({m.contender("local", 1, 1), m.contender("shared", 1, 1.4)}, m.options(0));
    EXPECT_GT(mixed.ratio(1, 0, seed).ratio, 1.1) << "seed " << seed << ": without the wait the far state shows";
  }
}

// The near level is a low quantile of the readings, not their lowest: two readings of a rarer, nearer state
// (hyperthreads of one core, ~40 ns) among 125 ns ones left every later block of a sweep waiting for them.
TEST(Rounds, ARareNearerReadingDoesNotSetTheNearLevel) {
  NearLevel near;
  EXPECT_TRUE(std::isinf(near.level()));
  near.add(130), near.add(40);
  EXPECT_EQ(near.level(), 40) << "until there are enough readings, the lowest";
  for (int k = 0; k < 100; ++k) near.add(k % 3 == 0 ? 600 : 125);  // far a third of the time
  near.add(38);
  EXPECT_NEAR(near.level(), 125, 125 * 0.03) << "the state most blocks met, to a bin's width";
  bool far = true;
  const double waited = waitForNearCores([] { return 126.0; }, near, 3, 100, far);
  EXPECT_FALSE(far);
  EXPECT_LT(waited, 5) << "a reading at the usual level does not wait";
  waitForNearCores([] { return 600.0; }, near, 3, 20, far);
  EXPECT_TRUE(far) << "a far reading still waits";
  near.add(-1), near.add(NAN);  // no reading: ignored
  EXPECT_EQ(near.readings(), 105);
}

TEST(Rounds, AHostStuckFarCostsOneWaitBudgetARound) {
  MovingCoresMachine m(1);
  RoundsOptions o = m.options(20);  // a block waits 20 ms at most ...
  o.roundWaitMs = 30;               // ... and a round 30 ms in all
  o.rounds = 4;
  o.crossCore = [] { return 500.0; };  // the only reading there is: never far
  RoundsResult r = runRounds({m.contender("a", 1, 1), m.contender("b", 1, 1)}, o);
  for (const auto& round : r.rounds) EXPECT_EQ(round.farBlocks, 0);
  int readings = 0;
  o.crossCore = [&] { return ++readings == 1 ? 100.0 : 500.0; };  // near once, then far for good
  r = runRounds({m.contender("a", 1, 1), m.contender("b", 1, 1), m.contender("c", 1, 1)}, o);
  for (size_t k = 1; k < r.rounds.size(); ++k) {
    EXPECT_EQ(r.rounds[k].farBlocks, 3) << "round " << k;
    // A wait ends at its first probe past its limit: each may overrun by a 5 ms sleep (longer on a loaded machine).
    EXPECT_GE(r.rounds[k].nearWaitMs, 30) << "round " << k << ": the first two blocks spend the budget";
    EXPECT_LT(r.rounds[k].nearWaitMs, 30 + 20) << "round " << k << ": the third block does not wait";
  }
}

// Two preparations of one program whose speed depends on where each lands in memory: a bias drawn anew with
// each incarnation (a log-normal of spread 0.08, as ONNX Runtime's worker processes showed in the A/A grid). One
// layout per run: the A/A pair differs consistently and the interval over rounds, blind to it, calls most
// pairs different. A new layout every round: the bias is part of the spread the interval sees.
TEST(Rounds, EpochsDrawLayoutsAnewSoTheIntervalSeesThem) {
  auto falseDifferences = [](int epochs, int& reincarnations) {
    int found = 0;
    reincarnations = 0;
    for (uint64_t seed = 0; seed < 10; ++seed) {
      DriftingMachine m(seed);
      m.trendPerMs = 0, m.waveAmplitude = 0;
      std::mt19937_64 layouts(seed + 100);
      std::lognormal_distribution<double> layoutBias(0, 0.08);
      auto incarnated = [&](const std::string& label) {
        auto bias = std::make_shared<double>(layoutBias(layouts));
        Contender c = m.contender(label, 1.0);
        c.time = [&m, bias](int n) {
          std::vector<double> t;
          for (int i = 0; i < n; ++i) t.push_back(m.run(*bias));
          return t;
        };
        c.reincarnate = [&, bias] { *bias = layoutBias(layouts), ++reincarnations; };
        return c;
      };
      RoundsOptions o = m.options(RoundOrder::Shuffled);
      o.seed = seed, o.epochs = epochs;
      RoundsResult r = runRounds({incarnated("A"), incarnated("A'")}, o);
      found += r.ratio(1, 0, seed).direction != 0;
    }
    return found;
  };
  int reincarnations = 0;
  EXPECT_GE(falseDifferences(1, reincarnations), 6) << "one layout a run: its bias looks like an effect";
  EXPECT_EQ(reincarnations, 0);
  EXPECT_LE(falseDifferences(20, reincarnations), 1) << "a layout a round: the interval covers layouts";
  EXPECT_EQ(reincarnations, 10 * 2 * 19) << "every contender, before every epoch but the first";
  falseDifferences(3, reincarnations);
  EXPECT_EQ(reincarnations, 10 * 2 * 2) << "20 rounds in 3 epochs: two new layouts each";
}

// Contenders whose new incarnation is another process (a bridge's worker) are prepared anew at once, each from its
// own thread: each of the two waits (up to 10 s) until the other has begun too. friction's own, in this process,
// one at a time on the calling thread. Every one before the epoch's first round. The threads live on while the
// later blocks are timed: a worker's parent-death signal (SIGCONT) comes when the thread that started it ends,
// and would wake a worker parked after its block.
TEST(Rounds, ProcessesOfANewEpochStartTogether) {
  DriftingMachine m(1);
  RoundsOptions o = m.options(RoundOrder::Shuffled);
  o.rounds = o.minRounds = 4, o.epochs = 2;
  std::mutex mu;
  std::condition_variable cv;
  int begun = 0, mostAtOnce = 0, ownOffThread = 0, reincarnated = 0, endedBeforeABlock = 0;
  std::vector<pid_t> preparers;  // the threads that prepared p and q anew
  const auto caller = std::this_thread::get_id();
  auto apart = [&](const std::string& label) {
    Contender c = m.contender(label, 1);
    c.reincarnatesApart = true;
    c.reincarnate = [&] {
      std::unique_lock<std::mutex> lock(mu);
      mostAtOnce = std::max(mostAtOnce, ++begun);
      cv.notify_all();
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return begun >= 2; });
      ++reincarnated;
      preparers.push_back(gettid());
    };
    return c;
  };
  Contender own = m.contender("own", 1);
  own.time = [&, time = own.time](int n) {
    std::lock_guard<std::mutex> lock(mu);
    for (pid_t tid : preparers) endedBeforeABlock += !std::filesystem::exists("/proc/self/task/" + std::to_string(tid));
    return time(n);
  };
  own.reincarnate = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ownOffThread += std::this_thread::get_id() != caller;
    ++reincarnated;
  };
  RoundsResult r = runRounds({apart("p"), own, apart("q")}, o);
  EXPECT_EQ(mostAtOnce, 2) << "the two workers were started one after the other";
  EXPECT_EQ(ownOffThread, 0);
  EXPECT_EQ(reincarnated, 3);
  EXPECT_EQ(preparers.size(), 2u);
  EXPECT_EQ(endedBeforeABlock, 0) << "a thread that started a worker ended while blocks were timed";
  EXPECT_EQ(r.rounds.size(), 4u);
}

TEST(Rounds, RealCalibrationRunsAndIsPositive) {
  Calibration c = calibrate(2);
  EXPECT_GT(c.serialMs, 0);
  EXPECT_GT(c.parallelMs, 0);
  EXPECT_GT(c.crossCoreNs, 0) << "two threads pass a cache line between them";
  EXPECT_EQ(calibrate(1).crossCoreNs, 0);
  EXPECT_GT(c.memoryGBs, 0);
  EXPECT_GT(calibrate(1).memoryGBs, 0);
  bool far = true;
  NearLevel near;
  waitForNearCores([] { return crossCoreRoundTrip(2); }, near, 3, 1000, far);
  EXPECT_GT(near.level(), 0);
  EXPECT_EQ(near.readings(), 1) << "the first reading only";
}

// Spins until `ms` have passed since `t0`.
void spinUntil(std::chrono::steady_clock::time_point t0, double ms) {
  volatile double sink = 0;
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < ms) sink = sink + 1;
}

// quiesce waits for this process's threads and its children (a bridge's worker) to stop spinning, and not for
// another process's: on a shared host other tenants never stop, and every block would wait the whole maximum.
// Run under load (three other spinners on two cores), a wait by CPU time ended after 6-48 ms: the spinner had
// lost its core for a window; by thread state it holds.
TEST(Rounds, QuiesceWaitsForItsOwnThreadsAndChildrenOnly) {
  constexpr double kSpinMs = 120, kMaxMs = 2000;
  auto t0 = std::chrono::steady_clock::now();
  std::thread pool([t0] { spinUntil(t0, kSpinMs); });
  double waited = quiesce(kMaxMs);
  pool.join();
  EXPECT_GE(waited, kSpinMs / 2) << "a thread of this process was spinning";
  EXPECT_LT(waited, kMaxMs) << "it stopped";

  t0 = std::chrono::steady_clock::now();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    spinUntil(t0, kSpinMs);
    _exit(0);
  }
  waited = quiesce(kMaxMs);
  waitpid(child, nullptr, 0);
  EXPECT_GE(waited, kSpinMs / 2) << "a child (a bridge's worker) was spinning";

  // A process that is not a child: forked by a child that exits at once, so it is reparented.
  t0 = std::chrono::steady_clock::now();
  child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (fork() == 0) {
      spinUntil(t0, 1000);
      _exit(0);
    }
    _exit(0);
  }
  waitpid(child, nullptr, 0);
  EXPECT_LT(quiesce(kMaxMs), 500) << "another process spinning is contention, not something to wait out";
}

TEST(Rounds, RejectsNothingToMeasureAndShortBlocks) {
  EXPECT_THROW(runRounds({}, RoundsOptions{}), std::invalid_argument);
  RoundsOptions o;
  o.repsPerRound = 3;
  o.settleMs = 0;
  o.calibration = [] { return Calibration{1, 1}; };
  Contender shortChanged{"short", [](int) { return std::vector<double>{1.0}; }};
  EXPECT_THROW(runRounds({shortChanged}, o), std::runtime_error);
}

TEST(PairedRatio, KnownRatioAndDirection) {
  std::vector<double> a = {2, 2.2, 1.8, 2.1, 1.9}, b = {1, 1.1, 0.9, 1.05, 0.95};
  auto p = metrics::pairedRatio(a, b);
  EXPECT_NEAR(p.ratio, 2.0, 1e-12);
  EXPECT_EQ(p.direction, 1);
  EXPECT_EQ(metrics::pairedRatio(b, a).direction, -1);
  EXPECT_EQ(metrics::pairedRatio(a, a).direction, 0);
  EXPECT_THROW(metrics::pairedRatio(a, {1, 2}), std::invalid_argument);
  EXPECT_THROW(metrics::pairedRatio({1, 0}, {1, 1}), std::invalid_argument);
}

}  // namespace
}  // namespace friction::bench
