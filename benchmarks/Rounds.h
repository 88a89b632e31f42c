// Interleaved, randomized rounds: the measurement protocol for configurations that will be compared
// (docs/metrics.md, "Interleaved rounds"). The configurations are prepared once (compiled, checked, warmed
// up) and kept resident; then each round times a block of repetitions of every configuration in a fresh random
// order, after a small fixed calibration workload. Drift over seconds to minutes then lands on every
// configuration of a round alike, and comparisons pair configurations round by round (metrics/Paired.h)
// instead of comparing bursts measured minutes apart. Nothing but the configurations' own runs happens between
// the first and the last timed block: checks and compiles belong before runRounds.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "benchmarks/metrics/Paired.h"

namespace friction::bench {

// One configuration to time: `time(n)` runs it n times back to back and returns the n times (ms).
struct Contender {
  std::string label;
  std::function<std::vector<double>(int n)> time;
  bool leavesCoresBusy = true;  // its runs leave threads spinning: quiesce before the next block (Backend.h)
  // Replaces the configuration's layout in memory with a new one (the program prepared anew: a bridge's worker
  // process restarted, friction's arena allocated again), outside timing; null: one layout for the whole run.
  // Where a process's buffers land makes it consistently faster or slower by up to a fifth here, a bias drawn
  // anew with each process that no interval over one layout's runs can see (docs/metrics.md, "Layout epochs").
  std::function<void()> reincarnate;
  // Stops what its runs left spinning until its next block (a bridge stops its worker process) and returns true,
  // so nothing is left to wait for; null, or false: quiesce. A stopped pool takes no core, where a quiet wait
  // lets it spin out (ONNX Runtime's: ~50-90 ms after every block, a sixth of a sweep's wall time).
  std::function<bool()> park;
  // Its new incarnation is another process (a bridge's worker) and may be prepared alongside the others': their
  // start-ups (an interpreter and the vendor's imports, 0.15-1.3 s each, on one core) then share the cores.
  bool reincarnatesApart = false;
  // Contenders of one cluster (in a sweep: one model's executors and pass configurations) are the ones compared
  // most often; RoundOrder::Clustered times them back to back. Empty: one cluster with every other empty one.
  std::string cluster;
};

// The calibration workload: a fixed amount of dependent floating-point work timed on one thread (`serialMs`:
// tracks the machine's speed from round to round) and then on `threads` threads at once, each doing the same
// work (`parallelMs`). Their ratio is the share of the cores the harness really gets: about 1 on an idle
// machine, about 2 when another process holds one of two cores.
//
// `crossCoreNs` is the round trip of one cache line between the calling thread and the team's other threads (ns,
// the slowest pair; 0 with one thread): what data shared between a kernel's threads costs. On a VM it is a state
// of the host, not of the guest: here the two vCPUs moved between sharing a last-level cache (~100 ns) and not
// (~500 ns) every few seconds, and programs whose threads pass data ran up to 1.4x slower in the far state
// while the compute-bound chains above did not move (docs/metrics.md, "Core-to-core distance").
//
// `memoryGBs` is the rate at which the team streams a buffer that outgrows every core's private caches (GB/s; 0:
// not measured): what a kernel that reads its weights from memory or a shared last-level cache gets. On a VM it
// moves with the host's other tenants, which the chains above and the cross-core probe do not see.
struct Calibration {
  double serialMs = 0, parallelMs = 0;
  double crossCoreNs = 0;
  double memoryGBs = 0;
  double contention() const { return serialMs > 0 ? parallelMs / serialMs : 1; }
};
Calibration calibrate(int threads);
// The most threads, up to `maxThreads`, that run a ~20 ms calibration chain at once without contention (median
// of three at most `limit`; above 4 threads the counts tried step down by a quarter): all of them on an idle
// machine, fewer when other processes hold cores.
int freeCores(int maxThreads, double limit = 1.25);

// Waits, up to `maxMs`, until no thread of this process and its children (the bridges' workers) is runnable
// (/proc's thread states, polled every 2 ms). Executors leave thread pools spinning after a run (ONNX Runtime's
// keep a core busy for ~50-90 ms here, and the block timed next ran up to 2x slow); the wait is for them, not for
// other processes. Returns the milliseconds waited (0 when nothing spins); maxMs when the pools kept spinning.
double quiesce(double maxMs);

// The core-to-core round trip (Calibration::crossCoreNs) of `threads` threads now; 0 for one thread.
double crossCoreRoundTrip(int threads);

// The memory bandwidth (Calibration::memoryGBs) `threads` threads get now, reading a 32 MB buffer together.
double memoryBandwidth(int threads);

// The near level of the core-to-core round trip: a low quantile (5%) of the readings taken before blocks, the
// lowest until there are 20 of them. Not the lowest of all: a reading or two of a rarer, nearer state (this
// VM's vCPUs on one core's two hyperthreads, ~40 ns against ~125 ns) set the bar there, and every later block
// of a sweep waited its budget for a state that did not come (2026-12-04: 16 minutes instead of 4.5).
class NearLevel {
 public:
  void add(double ns);
  double level() const;  // INFINITY before the first reading
  int64_t readings() const { return count_; }

 private:
  // Readings in bins 2% wide (log scale) from 1 ns; a 5% quantile read to a bin's lower edge.
  static constexpr double kBinRatio = 1.02;
  static constexpr int kBins = 1024;  // up to ~6e8 ns
  std::vector<int64_t> bins_ = std::vector<int64_t>(kBins, 0);
  int64_t count_ = 0;
  double lowest_ = INFINITY;
};

// Waits, up to `maxMs`, until the cores are near: `probe()` reads at most `farFactor` times `near.level()`.
// The first reading is added to `near` (one per process in the protocol, so a run that starts in the far state
// learns the near level from its first near readings); the later ones, taken while waiting, are not: they
// would weigh a far spell by its length. Probes every 5 ms. Returns the milliseconds waited and, through
// `far`, whether the last reading was still far (the block that follows is timed in the far state).
double waitForNearCores(const std::function<double()>& probe, NearLevel& near, double farFactor, double maxMs,
                        bool& far);

enum class RoundOrder {
  // Every round in a fresh random order in which each cluster's contenders are adjacent: the clusters in a
  // random order, each cluster's contenders in a random order (the protocol). The gap between two blocks decides
  // how far apart the host's states they meet are: on the small study's groups (45 blocks a round), two
  // spellings of one program 1-2 blocks apart read a median |ln ratio| of 0.023-0.029 a round, 15 or more apart
  // 0.11; on the A/A grid, clustered rounds halved it (docs/metrics.md, "Clustered rounds"). With one cluster it
  // is Shuffled, round for round.
  Clustered,
  Shuffled,    // every round in a fresh random order, clusters ignored
  Fixed,       // every round in the given order
  Sequential,  // all rounds of the first configuration, then all of the second, ... (the old protocol; for tests)
};
// The orders by the names `--order` and a sweep spec's `order` take: clustered, shuffled, fixed, sequential.
const std::map<std::string, RoundOrder>& roundOrderNames();

// Many rounds of short blocks by default: the host's states here outlast a 25 ms block and not a round, so a
// round's paired ratio reads the difference between two states, and only more rounds average it away (30 rounds
// of 8 ms blocks against 10 of 25 ms: A/A ratios within 3% in 91-100% / 76-91% of cells (friction / ONNX
// Runtime, five sweeps) against 82-89% / 64-78% (three); docs/metrics.md, "Short blocks, many rounds").
struct RoundsOptions {
  int rounds = 30;           // rounds at most
  int minRounds = 15;        // the CI target and the time budget never stop a run before this many
  int repsPerRound = 0;      // repetitions of each configuration per round; 0: enough for `blockMs`
  double blockMs = 8;        // target duration of one configuration's block when repsPerRound = 0 ...
  int minBlockReps = 3;      // ... but at least this many runs: a round's value is its block's median
  // Untimed runs before each block, as many as fill this (at least one): an executor whose thread pool went idle
  // during the other blocks runs up to 2x slow for several ms (ONNX Runtime here) before its steady state.
  double blockWarmupMs = 10;
  double targetRelCI = 0;    // > 0: stop once every comparison's paired CI half-width / ratio is below this
  double maxSeconds = 120;   // time budget of the rounds
  double settleMs = 1;       // pause before each block, then quiesce(quiesceMs) after a contender that
                             // leavesCoresBusy (and before a round's calibration), unless `calibration` is set
  double quiesceMs = 150;    // 0: no quiescing
  // Before each block, wait up to this long for the cores to be near (waitForNearCores; 0: never wait, the
  // blocks land in whichever state the host is in). A round waits at most `roundWaitMs` in all: once that is
  // spent, its later blocks probe once and take the state as it is (a host stuck far costs one budget a round).
  // A reading over `farFactor` times the lowest is far.
  double nearWaitMs = 2000;
  double roundWaitMs = 4000;
  double farFactor = 3;
  int threads = 0;           // threads of the parallel calibration and the core probe (0: measureInRounds
                             // takes the cells' count, runRounds alone one)
  RoundOrder order = RoundOrder::Clustered;
  // The rounds fall into this many epochs of equal length (the last may be shorter); before each epoch but the
  // first, every contender that can is reincarnated, in the round's order. 1: one layout per run. The
  // sequential order (for comparison only) keeps one layout. 5 by default: on the A/A grid ONNX Runtime's two
  // spellings read 0% false differences with 5 epochs, 2-11% with 3 and 16-36% with 1 (docs/metrics.md,
  // "Layout epochs").
  int epochs = 5;
  double slowRoundFactor = 1.10;  // a round whose serial calibration is this much above the median is slow
  bool repeatSlowRounds = false;  // drop slow rounds and measure replacements (at most `rounds` / 2 more)
  double contentionLimit = 1.25;  // median contention above this: the machine was not ours ("contended")
  uint64_t seed = 0;              // round orders and bootstrap
  // Replace the calibration workload and the wait for quiet (tests inject a synthetic machine); default:
  // calibrate(threads), and quiesce(maxMs) unless `calibration` is set (a synthetic machine has no threads).
  std::function<Calibration()> calibration;
  std::function<double(double maxMs)> quiesce;
  // Replace the core-to-core probe (tests); default: crossCoreRoundTrip(threads), none for one thread.
  std::function<double()> crossCore;
  // Called after each round (progress output).
  std::function<void(size_t round)> onRound;
};

struct RoundRecord {
  std::vector<size_t> order;  // configuration indices in timing order
  Calibration calibration;
  double loadAverage = -1;    // 1-minute load average at the round's start (-1: unavailable)
  double startSeconds = 0;    // since the first round began
  double quiesceMs = 0;       // waited in this round for the cores to go quiet (quiesce)
  double nearWaitMs = 0;      // waited in this round for the cores to be near (waitForNearCores)
  int farBlocks = 0;          // blocks timed in the far state all the same (the wait ran out)
  bool slow = false;          // flagged by the calibration
  bool dropped = false;       // slow and replaced (repeatSlowRounds): not in the round values
};

struct RoundsResult {
  std::vector<std::string> labels;
  std::vector<int> reps;                                // repetitions per round, per configuration
  std::vector<int> warmupReps;                          // untimed runs before each block, per configuration
  std::vector<std::vector<std::vector<double>>> samples;  // [configuration][round] -> that block's times (ms)
  std::vector<RoundRecord> rounds;
  std::string stopReason;                               // "rounds", "ci", "time"
  bool contended = false;                               // median contention above the limit
  double medianContention = 1;

  // One value per kept round: the median of the configuration's block.
  std::vector<double> roundValues(size_t configuration) const;
  // Every sample of the kept rounds, round by round.
  std::vector<double> keptSamples(size_t configuration) const;
  // Sample counts of the kept rounds (to cut keptSamples back into blocks).
  std::vector<size_t> keptBlockSizes(size_t configuration) const;
  size_t keptRounds() const;
  // Paired ratio of configuration a to b over the kept rounds.
  metrics::PairedRatio ratio(size_t a, size_t b, uint64_t seed = 0, int resamples = 2000) const;
};

// Measures the configurations in rounds as `options` says. Needs at least one configuration.
RoundsResult runRounds(const std::vector<Contender>& contenders, const RoundsOptions& options);

}  // namespace friction::bench
