#include "benchmarks/Rounds.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>

namespace friction::bench {
namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// A dependent chain of multiply-adds: its time is latency-bound, so neither the compiler nor the core can
// shorten it, and about the same on every x86 core of the last decade (~0.3 ms for the calibration's 200k).
double chainWork(int steps) {
  volatile double seed = 1.0000001;
  double a = seed, x = 1;
  for (int i = 0; i < steps; ++i) x = x * a + 1e-9;
  return x;
}
constexpr int kCalibrationSteps = 200000;

volatile double calibrationSink;  // keeps the work observable

double loadAverage() {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

}  // namespace

namespace {
Calibration timeChain(int threads, int steps) {
  Calibration c;
  auto t0 = Clock::now();
  calibrationSink = chainWork(steps);
  c.serialMs = msSince(t0);
  // The first parallel region after an idle wait pays for waking the team: on this VM the idle vCPUs are
  // halted, and waking them took 0.1-5 ms (1.1-17x the chain) in a standalone test, the second region none.
  // That wake-up is not contention, so one short untimed region comes first.
  double total = 0;
#pragma omp parallel num_threads(std::max(threads, 1)) reduction(+ : total)
  total += chainWork(steps / 10);
  t0 = Clock::now();
  total = 0;
#pragma omp parallel num_threads(std::max(threads, 1)) reduction(+ : total)
  total += chainWork(steps);
  calibrationSink = total;
  c.parallelMs = msSince(t0);
  return c;
}
}  // namespace

Calibration calibrate(int threads) { return timeChain(threads, kCalibrationSteps); }

int freeCores(int maxThreads, double limit) {
  // ~20 ms chains, longer than a scheduler time slice: a 0.3 ms chain runs unpreempted next to a process
  // that spins on the same core (the scheduler favours the newly woken thread), and reads no contention.
  constexpr int kSteps = kCalibrationSteps * 60;
  for (int t = maxThreads; t > 1; t = t > 4 ? t * 3 / 4 : t - 1) {  // a few tries even on many cores
    std::vector<double> contention;
    for (int k = 0; k < 3; ++k) contention.push_back(timeChain(t, kSteps).contention());
    if (metrics::median(contention) <= limit) return t;
  }
  return 1;
}

namespace {
// CPU time every process has used (user, nice, system, irq, softirq; not idle, iowait or steal), in the
// kernel's USER_HZ ticks (10 ms), from /proc/stat; -1 when unavailable.
int64_t busyTicks() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  int64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq) || cpu != "cpu") return -1;
  return user + nice + system + irq + softirq;
}
}  // namespace

double quiesce(double maxMs) {
  // Wait until a whole window passes in which no process used the CPU (this one sleeps meanwhile). A short
  // timed probe is not enough: a pool that spins and yields lets a probe through yet halves a core for a
  // kernel that runs for milliseconds (ONNX Runtime's, for ~50 ms after its last run).
  constexpr double kWindowMs = 10;  // one USER_HZ tick
  if (maxMs <= 0) return 0;
  auto t0 = Clock::now();
  int64_t before = busyTicks();
  if (before < 0) return 0;
  while (msSince(t0) < maxMs) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kWindowMs));
    int64_t after = busyTicks();
    if (after == before) return msSince(t0);
    before = after;
  }
  return maxMs;
}

std::vector<double> RoundsResult::roundValues(size_t c) const {
  std::vector<double> v;
  for (size_t r = 0; r < rounds.size(); ++r)
    if (!rounds[r].dropped) v.push_back(metrics::median(samples[c][r]));
  return v;
}

std::vector<double> RoundsResult::keptSamples(size_t c) const {
  std::vector<double> v;
  for (size_t r = 0; r < rounds.size(); ++r)
    if (!rounds[r].dropped) v.insert(v.end(), samples[c][r].begin(), samples[c][r].end());
  return v;
}

std::vector<size_t> RoundsResult::keptBlockSizes(size_t c) const {
  std::vector<size_t> v;
  for (size_t r = 0; r < rounds.size(); ++r)
    if (!rounds[r].dropped) v.push_back(samples[c][r].size());
  return v;
}

size_t RoundsResult::keptRounds() const {
  return size_t(std::count_if(rounds.begin(), rounds.end(), [](const RoundRecord& r) { return !r.dropped; }));
}

metrics::PairedRatio RoundsResult::ratio(size_t a, size_t b, uint64_t seed, int resamples) const {
  return metrics::pairedRatio(roundValues(a), roundValues(b), seed, resamples);
}

namespace {

// Marks slow rounds against the median serial calibration of all rounds so far.
void flagSlowRounds(RoundsResult& res, double factor) {
  std::vector<double> serial;
  for (const auto& r : res.rounds) serial.push_back(r.calibration.serialMs);
  double typical = metrics::median(serial);
  for (auto& r : res.rounds) r.slow = r.calibration.serialMs > factor * typical;
}

// True when every configuration's comparison with the first (or, alone, its own round values) is precise enough.
bool targetReached(const RoundsResult& res, double target, uint64_t seed) {
  size_t n = res.labels.size();
  if (n == 1) {
    auto e = metrics::medianOverRounds(res.roundValues(0), seed, 500);
    return metrics::relativeHalfWidth(e.ci, e.value) < target;
  }
  for (size_t c = 1; c < n; ++c)
    if (!(res.ratio(c, 0, seed, 500).relHalfWidth() < target)) return false;
  return true;
}

}  // namespace

RoundsResult runRounds(const std::vector<Contender>& contenders, const RoundsOptions& o) {
  if (contenders.empty()) throw std::invalid_argument("runRounds: no configuration to measure");
  if (o.rounds < 1 || o.minRounds < 1) throw std::invalid_argument("runRounds: rounds and minRounds must be positive");
  const size_t n = contenders.size();
  RoundsResult res;
  for (const auto& c : contenders) res.labels.push_back(c.label);
  res.samples.assign(n, {});

  std::mt19937_64 rng(o.seed);
  auto calibrateNow = [&] { return o.calibration ? o.calibration() : calibrate(o.threads); };
  double waited = 0;  // quiescing in the current round
  bool busy = true;   // whether what ran last may have left threads spinning (unknown at the start)
  auto settle = [&] {
    if (o.settleMs > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.settleMs));
    if (busy) waited += o.quiesce ? o.quiesce(o.quiesceMs) : o.calibration ? 0 : quiesce(o.quiesceMs);
    busy = false;
  };

  // Block sizes: three probe runs of each configuration (extra warm-up) set its repetitions per round, from
  // the fastest (a first run after a pause can be far slower than the rest).
  for (const auto& c : contenders) {
    settle();
    std::vector<double> probe = c.time(3);
    busy = c.leavesCoresBusy;
    double ms = probe.empty() ? 1 : std::max(*std::min_element(probe.begin(), probe.end()), 1e-3);
    auto runsFor = [ms](double budgetMs) { return int(std::clamp(std::round(budgetMs / ms), 1.0, 10000.0)); };
    res.reps.push_back(o.repsPerRound > 0 ? o.repsPerRound : std::max(runsFor(o.blockMs), o.minBlockReps));
    res.warmupReps.push_back(o.blockWarmupMs > 0 ? runsFor(o.blockWarmupMs) : 0);
  }
  auto timeBlock = [&](size_t c, size_t round) {
    settle();
    if (res.warmupReps[c] > 0) contenders[c].time(res.warmupReps[c]);
    std::vector<double> t = contenders[c].time(res.reps[c]);
    busy = contenders[c].leavesCoresBusy;
    if (t.size() != size_t(res.reps[c]))
      throw std::runtime_error("configuration '" + contenders[c].label + "' timed " + std::to_string(t.size()) +
                               " runs, asked for " + std::to_string(res.reps[c]));
    res.samples[c][round] = std::move(t);
  };
  auto newRound = [&](std::vector<size_t> order, Clock::time_point start) {
    settle();
    waited = 0;
    RoundRecord r;
    r.order = std::move(order);
    r.loadAverage = loadAverage();
    r.startSeconds = msSince(start) / 1e3;
    r.calibration = calibrateNow();
    res.rounds.push_back(r);
    for (auto& s : res.samples) s.emplace_back();
    return res.rounds.size() - 1;
  };

  auto start = Clock::now();
  res.stopReason = "rounds";
  if (o.order == RoundOrder::Sequential) {
    // The old protocol, kept to show what interleaving fixes: each configuration's rounds back to back.
    for (int r = 0; r < o.rounds; ++r) newRound({}, start);
    for (size_t c = 0; c < n; ++c)
      for (size_t r = 0; r < res.rounds.size(); ++r) {
        res.rounds[r].order.push_back(c);
        timeBlock(c, r);
      }
  } else {
    int maxRounds = o.rounds + (o.repeatSlowRounds ? o.rounds / 2 : 0);
    for (int r = 0; r < maxRounds; ++r) {
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t(0));
      if (o.order == RoundOrder::Shuffled)  // Fisher-Yates, index = draw mod k: the same orders everywhere
        for (size_t k = n; k > 1; --k) std::swap(order[k - 1], order[size_t(rng() % k)]);
      size_t round = newRound(order, start);
      for (size_t c : order) timeBlock(c, round);
      res.rounds[round].quiesceMs = waited;
      if (o.onRound) o.onRound(round);
      if (o.repeatSlowRounds && res.rounds.size() >= 3) {
        flagSlowRounds(res, o.slowRoundFactor);
        for (auto& rr : res.rounds) rr.dropped = rr.slow;
      }
      int kept = int(res.keptRounds());
      if (kept >= o.rounds) break;
      if (kept < o.minRounds) continue;
      if (o.targetRelCI > 0 && targetReached(res, o.targetRelCI, o.seed)) {
        res.stopReason = "ci";
        break;
      }
      if (msSince(start) > o.maxSeconds * 1e3) {
        res.stopReason = "time";
        break;
      }
    }
  }
  flagSlowRounds(res, o.slowRoundFactor);
  if (!o.repeatSlowRounds)
    for (auto& r : res.rounds) r.dropped = false;
  std::vector<double> contention;
  for (const auto& r : res.rounds) contention.push_back(r.calibration.contention());
  res.medianContention = metrics::median(contention);
  res.contended = res.medianContention > o.contentionLimit;
  return res;
}

}  // namespace friction::bench
