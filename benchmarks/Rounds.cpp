#include "benchmarks/Rounds.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include "runtime/ProcessState.h"

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

// Ping-pong of one cache line between thread 0 and each other thread of a team in turn: mean round trip (ns) of
// the slowest pair. Bounded in time, not only in count: a partner that another process keeps off its core
// would make every round trip a scheduler time slice.
double crossCoreRoundTrip(int threads) {
  if (threads < 2) return 0;
  constexpr int kTrips = 1000, kWarmTrips = 16;
  constexpr double kBudgetMs = 2;
  alignas(64) std::atomic<int> ball{0};  // 1: served to the partner; 0: returned
  alignas(64) std::atomic<int> partner{0}, done{0};
  double slowest = 0;
#pragma omp parallel num_threads(threads)
  {
    const int me = omp_get_thread_num();
    for (int p = 1; p < omp_get_num_threads(); ++p) {
      if (me == 0) {
        done.store(0);  // before naming the partner, so it cannot see the last pair's `done`
        partner.store(p);
        // Untimed trips first: a partner that slept (the probe before a block follows a pause) must be woken,
        // and on this VM waking a halted vCPU took up to ~150 ms. Timed cold, 20% of the probes read that as
        // the far state (a mean round trip of 1-150 us instead of ~150 ns); warm, none did.
        for (int w = 0; w < kWarmTrips; ++w) {
          ball.store(1, std::memory_order_release);
          while (ball.load(std::memory_order_acquire) != 0) {
          }
        }
        int trips = 0;
        auto t0 = Clock::now();
        for (; trips < kTrips && (trips % 64 != 0 || msSince(t0) < kBudgetMs); ++trips) {
          ball.store(1, std::memory_order_release);
          while (ball.load(std::memory_order_acquire) != 0) {
          }
        }
        slowest = std::max(slowest, msSince(t0) * 1e6 / std::max(trips, 1));
        done.store(1);
      } else if (me == p) {
        while (partner.load() != p) {
        }
        while (!done.load(std::memory_order_acquire))
          if (ball.load(std::memory_order_acquire) == 1) ball.store(0, std::memory_order_release);
      }
#pragma omp barrier
    }
  }
  return slowest;
}

double memoryBandwidth(int threads) {
  // Allocated and first touched once per process (by the team, so its pages lie where the threads read them); it
  // stays resident, and the process's peak RSS includes it.
  constexpr size_t kFloats = size_t(32) << 20 >> 2, kLanes = 16;
  static float* buffer = [] {
    auto* b = new float[kFloats];
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < kFloats; ++i) b[i] = 1;
    return b;
  }();
  // The faster of two passes: a vCPU the host stalls for a few ms would otherwise read as slow memory.
  double bestMs = INFINITY;
  for (int pass = 0; pass < 2; ++pass) {
    float total = 0;
    auto t0 = Clock::now();
#pragma omp parallel num_threads(std::max(threads, 1)) reduction(+ : total)
    {
      const size_t team = size_t(omp_get_num_threads()), me = size_t(omp_get_thread_num());
      const size_t begin = kFloats / kLanes * me / team * kLanes, end = kFloats / kLanes * (me + 1) / team * kLanes;
      // Four independent vector sums in registers, a cache line a step: bound by the loads, not the adds (an
      // array of 16 sums compiled to a load-add-store chain through the stack).
      typedef float Quad __attribute__((vector_size(16)));
      auto quad = [](const float* p) {
        Quad v;
        std::memcpy(&v, p, sizeof v);
        return v;
      };
      Quad s0{}, s1{}, s2{}, s3{};
      for (size_t i = begin; i < end; i += kLanes)
        s0 += quad(buffer + i), s1 += quad(buffer + i + 4), s2 += quad(buffer + i + 8), s3 += quad(buffer + i + 12);
      const Quad sum = s0 + s1 + s2 + s3;
      total += sum[0] + sum[1] + sum[2] + sum[3];
    }
    bestMs = std::min(bestMs, msSince(t0));
    calibrationSink = total;
  }
  return double(kFloats * sizeof(float)) / (bestMs * 1e6);
}

void NearLevel::add(double ns) {
  if (!(ns > 0) || !std::isfinite(ns)) return;
  lowest_ = std::min(lowest_, ns);
  const int bin = std::clamp(int(std::log(std::max(ns, 1.0)) / std::log(kBinRatio)), 0, kBins - 1);
  ++bins_[size_t(bin)];
  ++count_;
}

double NearLevel::level() const {
  constexpr int64_t kLearning = 20;
  if (count_ < kLearning) return lowest_;
  const int64_t rank = std::max<int64_t>(1, count_ / 20);  // the 5% quantile
  int64_t seen = 0;
  for (int bin = 0; bin < kBins; ++bin)
    if ((seen += bins_[size_t(bin)]) >= rank) return std::max(lowest_, std::pow(kBinRatio, bin));
  return lowest_;
}

double waitForNearCores(const std::function<double()>& probe, NearLevel& near, double farFactor, double maxMs,
                        bool& far) {
  auto t0 = Clock::now();
  for (bool first = true;; first = false) {
    double ns = probe();
    if (first) near.add(ns);
    far = ns > farFactor * near.level();
    if (!far || msSince(t0) >= maxMs) return msSince(t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Calibration calibrate(int threads) {
  Calibration c = timeChain(threads, kCalibrationSteps);
  c.crossCoreNs = crossCoreRoundTrip(threads);  // the team is awake now: timeChain ran a region before
  c.memoryGBs = memoryBandwidth(threads);
  return c;
}

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
// This process and its children (the vendor bridges' Python workers): whose threads a block can leave spinning.
// The children by a scan of /proc (no /proc/PID/task/TID/children on every kernel).
std::vector<pid_t> ownProcesses() {
  const pid_t self = getpid();
  std::vector<pid_t> pids{self};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    long ppid = 0;
    if (std::sscanf(statAfterComm(entry.path() / "stat").c_str(), "%*c %ld", &ppid) == 1 && ppid == self)
      pids.push_back(pid_t(std::stol(name)));
  }
  return pids;
}

// Whether a thread of these processes other than the caller is runnable (state R): spinning, or waiting for a
// core to spin on. Not their CPU time: a spinner that other processes keep off the cores uses none for a while,
// yet takes its core back as soon as the next block starts.
bool anyRunnable(const std::vector<pid_t>& pids) {
  const pid_t self = gettid();
  for (pid_t pid : pids)
    for (char state : threadStates(pid, self))
      if (state == 'R') return true;
  return false;
}
}  // namespace

double quiesce(double maxMs) {
  // Wait until no thread of this process and its children is runnable. Their thread states, not a short timed
  // probe: a pool that spins and yields lets a probe through yet halves a core for a kernel that runs for
  // milliseconds (ONNX Runtime's, for ~50-90 ms after its last run). Not the whole machine's (/proc/stat,
  // before): on a shared node (a cluster's) other jobs need not ever go quiet, and every block would wait the
  // whole maximum for them; they are contention, which the calibration and the near-core wait record.
  constexpr double kPollMs = 2;
  if (maxMs <= 0) return 0;
  auto t0 = Clock::now();
  const std::vector<pid_t> pids = ownProcesses();
  while (anyRunnable(pids)) {
    if (msSince(t0) >= maxMs) return maxMs;
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kPollMs));
  }
  return msSince(t0);
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

// Threads that prepare contenders anew alongside each other and then wait, without exiting, until the rounds are
// over. A bridge's worker started from a thread gets SIGCONT when that thread exits (its parent-death signal,
// PythonWorker.cpp): a thread that ended during the rounds would wake a worker parked after its next block.
class ApartThreads {
 public:
  std::future<void> run(std::function<void()> task) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> f = done->get_future();
    threads_.emplace_back([this, task = std::move(task), done] {
      try {
        task();
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
      std::unique_lock<std::mutex> lock(mutex_);
      over_.wait(lock, [this] { return roundsOver_; });
    });
    return f;
  }
  ~ApartThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      roundsOver_ = true;
    }
    over_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable over_;
  bool roundsOver_ = false;
};

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

// Fisher-Yates, index = draw mod k: the same orders everywhere.
void fisherYates(std::vector<size_t>& v, std::mt19937_64& rng) {
  for (size_t k = v.size(); k > 1; --k) std::swap(v[k - 1], v[size_t(rng() % k)]);
}

// The contenders' indices by cluster, the clusters in the order they first appear; one cluster of all unless the
// order is Clustered.
std::vector<std::vector<size_t>> clustersOf(const std::vector<Contender>& contenders, RoundOrder order) {
  std::vector<std::vector<size_t>> clusters;
  std::vector<std::string> names;
  for (size_t c = 0; c < contenders.size(); ++c) {
    const std::string& name = order == RoundOrder::Clustered ? contenders[c].cluster : contenders[0].cluster;
    size_t k = size_t(std::find(names.begin(), names.end(), name) - names.begin());
    if (k == names.size()) names.push_back(name), clusters.emplace_back();
    clusters[k].push_back(c);
  }
  return clusters;
}

// One round's timing order: the clusters in a fresh random order, each cluster's contenders in a fresh random
// order after one another (one cluster: one Fisher-Yates over every contender); unshuffled, the given order.
std::vector<size_t> roundOrder(std::vector<std::vector<size_t>> clusters, bool shuffle, std::mt19937_64& rng) {
  std::vector<size_t> clusterOrder(clusters.size()), order;
  std::iota(clusterOrder.begin(), clusterOrder.end(), size_t(0));
  if (shuffle) fisherYates(clusterOrder, rng);
  for (size_t k : clusterOrder) {
    if (shuffle) fisherYates(clusters[k], rng);
    order.insert(order.end(), clusters[k].begin(), clusters[k].end());
  }
  return order;
}

}  // namespace

const std::map<std::string, RoundOrder>& roundOrderNames() {
  static const std::map<std::string, RoundOrder> names{{"clustered", RoundOrder::Clustered},
                                                       {"shuffled", RoundOrder::Shuffled},
                                                       {"fixed", RoundOrder::Fixed},
                                                       {"sequential", RoundOrder::Sequential}};
  return names;
}

RoundsResult runRounds(const std::vector<Contender>& contenders, const RoundsOptions& o) {
  if (contenders.empty()) throw std::invalid_argument("runRounds: no configuration to measure");
  if (o.rounds < 1 || o.minRounds < 1) throw std::invalid_argument("runRounds: rounds and minRounds must be positive");
  if (o.epochs < 1) throw std::invalid_argument("runRounds: epochs must be positive");
  const size_t n = contenders.size();
  RoundsResult res;
  for (const auto& c : contenders) res.labels.push_back(c.label);
  res.samples.assign(n, {});

  std::mt19937_64 rng(o.seed);
  ApartThreads apartThreads;  // new epochs' bridges are prepared on these (joined when the rounds are over)
  auto calibrateNow = [&] { return o.calibration ? o.calibration() : calibrate(o.threads); };
  double waited = 0, nearWaited = 0;  // quiescing and waiting for near cores in the current round
  int farBlocks = 0;  // in the current round
  bool busy = true;  // whether what ran last may have left threads spinning (unknown at the start)
  // The core-to-core probe: injected, or the real one when more than one thread shares the data (a synthetic
  // machine, `calibration` injected without it, has no cores to probe).
  std::function<double()> probe = o.crossCore;
  if (!probe && !o.calibration && o.threads > 1) probe = [t = o.threads] { return crossCoreRoundTrip(t); };
  static NearLevel nearInProcess;  // learned over every run of this process
  NearLevel injectedNear;
  NearLevel& near = o.crossCore ? injectedNear : nearInProcess;
  // After a contender ran (its probes, a block, a new incarnation's warm-up): whether it may still hold a core.
  auto leftBusy = [](const Contender& c) { return c.leavesCoresBusy && !(c.park && c.park()); };
  auto settle = [&] {
    if (o.settleMs > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.settleMs));
    if (busy) waited += o.quiesce ? o.quiesce(o.quiesceMs) : o.calibration ? 0 : quiesce(o.quiesceMs);
    busy = false;
  };
  // Right before a block's timed runs: the state it will be timed in.
  auto nearCores = [&] {
    if (!probe || o.nearWaitMs <= 0) return;
    bool far = false;
    double budget = std::max(0.0, std::min(o.nearWaitMs, o.roundWaitMs - nearWaited));
    nearWaited += waitForNearCores(probe, near, o.farFactor, budget, far);
    farBlocks += far;
  };

  // Block sizes: three probe runs of each configuration (extra warm-up) set its repetitions per round, from
  // the fastest (a first run after a pause can be far slower than the rest).
  for (const auto& c : contenders) {
    settle();
    std::vector<double> probe = c.time(3);
    busy = leftBusy(c);
    double ms = probe.empty() ? 1 : std::max(*std::min_element(probe.begin(), probe.end()), 1e-3);
    auto runsFor = [ms](double budgetMs) { return int(std::clamp(std::round(budgetMs / ms), 1.0, 10000.0)); };
    res.reps.push_back(o.repsPerRound > 0 ? o.repsPerRound : std::max(runsFor(o.blockMs), o.minBlockReps));
    res.warmupReps.push_back(o.blockWarmupMs > 0 ? runsFor(o.blockWarmupMs) : 0);
  }
  auto timeBlock = [&](size_t c, size_t round) {
    settle();
    nearCores();
    if (res.warmupReps[c] > 0) contenders[c].time(res.warmupReps[c]);
    std::vector<double> t = contenders[c].time(res.reps[c]);
    busy = leftBusy(contenders[c]);
    if (t.size() != size_t(res.reps[c]))
      throw std::runtime_error("configuration '" + contenders[c].label + "' timed " + std::to_string(t.size()) +
                               " runs, asked for " + std::to_string(res.reps[c]));
    res.samples[c][round] = std::move(t);
  };
  auto newRound = [&](std::vector<size_t> order, Clock::time_point start) {
    settle();
    waited = nearWaited = 0;
    farBlocks = 0;
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
        res.rounds[r].nearWaitMs += std::exchange(nearWaited, 0);
        res.rounds[r].farBlocks += std::exchange(farBlocks, 0);
      }
  } else {
    int maxRounds = o.rounds + (o.repeatSlowRounds ? o.rounds / 2 : 0);
    const int epochRounds = (o.rounds + o.epochs - 1) / o.epochs;
    const std::vector<std::vector<size_t>> clusters = clustersOf(contenders, o.order);
    for (int r = 0; r < maxRounds; ++r) {
      std::vector<size_t> order = roundOrder(clusters, o.order != RoundOrder::Fixed, rng);
      if (r > 0 && r % epochRounds == 0 && r / epochRounds < o.epochs) {  // a new epoch begins
        // The contenders that start new processes, each from its own thread (kept until the rounds are over);
        // friction's own in this process, in the round's order. All before the round's calibration.
        std::vector<std::future<void>> apart;
        for (size_t c : order)
          if (contenders[c].reincarnate && contenders[c].reincarnatesApart)
            apart.push_back(apartThreads.run(contenders[c].reincarnate));
        for (size_t c : order)
          if (contenders[c].reincarnate && !contenders[c].reincarnatesApart) contenders[c].reincarnate();
        for (auto& f : apart) f.get();  // rethrows a failed preparation
        for (size_t c : order)
          if (contenders[c].reincarnate) busy = leftBusy(contenders[c]) || busy;
      }
      size_t round = newRound(order, start);
      for (size_t c : order) timeBlock(c, round);
      res.rounds[round].quiesceMs = waited;
      res.rounds[round].nearWaitMs = nearWaited;
      res.rounds[round].farBlocks = farBlocks;
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
