// friction-cuda-run: runs a plan that `friction compile MODEL --backend cuda
// -o DIR` wrote, on device 0, with nothing of the compiler linked in (MLIR,
// LLVM, protobuf): the binary to carry to a GPU machine. Checks the outputs
// against DIR/expected_<o>.bin when --reference wrote them, times the runs
// with CUDA events and, with --profile, each kernel call.
//
//   friction-cuda-run DIR [--reps N] [--warmup N] [--rtol T] [--profile K] [--fill-weights] [--json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/DType.h"
#include "ir/Error.h"
#include "ir/Shell.h"
#include "runtime/cuda/GpuExecutor.h"

namespace fs = std::filesystem;
using namespace friction;

namespace {

struct Args {
  std::string dir;
  int reps = 20, warmup = 3, profileTop = 0;
  double rtol = 1e-4;
  bool fillWeights = false, json = false;
};

Args parse(int argc, char** argv) {
  Args a;
  auto number = [&](int& i) {
    FRICTION_CHECK(i + 1 < argc, std::string(argv[i]) + " needs a value");
    return std::string(argv[++i]);
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--reps") a.reps = std::stoi(number(i));
    else if (arg == "--warmup") a.warmup = std::stoi(number(i));
    else if (arg == "--rtol") a.rtol = std::stod(number(i));
    else if (arg == "--profile") a.profileTop = std::stoi(number(i));
    else if (arg == "--fill-weights") a.fillWeights = true;
    else if (arg == "--json") a.json = true;
    else if (arg.rfind("--", 0) == 0) throw Error("unknown option " + arg);
    else a.dir = arg;
  }
  FRICTION_CHECK(!a.dir.empty(), "usage: friction-cuda-run DIR [--reps N] [--warmup N] [--rtol T] [--profile K] "
                                 "[--fill-weights] [--json]");
  FRICTION_CHECK(a.reps >= 1 && a.warmup >= 0, "--reps must be at least 1 and --warmup at least 0");
  return a;
}

// Seeded values for what the folder does not hold: floats uniform in [-1, 1) (weights: scaled down so
// deep stacks stay finite), integers zero (safe as indices).
std::string seeded(const std::string& dtype, int64_t bytes, uint32_t seed, float scale) {
  std::string out(size_t(bytes), '\0');
  if (dtype != "f32") return out;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < bytes / 4; ++i) {
    float v = u(gen);
    std::memcpy(&out[size_t(i) * 4], &v, 4);
  }
  return out;
}

// What a check of one output found: the worst error as a fraction of what the tolerance allows
// (|got - want| <= rtol * |want| + atol, atol = rtol * 1e-2 * max(max |want|, 1e-3), the tests' rule).
struct Check {
  double worst = 0, maxAbs = 0;
  bool finite = true;
};
Check compare(const float* got, const float* want, int64_t n, double rtol) {
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(double(want[i])));
  double atol = rtol * std::max(scale, 1e-3) * 1e-2;
  Check c;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (!std::isfinite(got[i])) c.finite = false;
    double err = std::abs(double(got[i]) - double(want[i]));
    c.maxAbs = std::max(c.maxAbs, err);
    c.worst = std::max(c.worst, err / (rtol * std::abs(double(want[i])) + atol));
  }
  if (!c.finite) c.worst = INFINITY;
  return c;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1) + 0.5)];
}

int runMain(const Args& a) {
  gpu::GpuPlan plan = gpu::readPlan(a.dir);
  // --fill-weights: seeded weights in place of weights.bin (too large to carry): timings only, no check.
  const bool weightsFilled = a.fillWeights;
  if (weightsFilled) {
    int64_t total = 0;
    for (const gpu::GpuConstant& c : plan.constants) total = std::max(total, c.from + c.bytes);
    plan.weights = seeded("f32", total / 4 * 4, 7, 0.05f);
    plan.weights.resize(size_t(total), '\0');
  }
  gpu::GpuExecutor exec(plan);
  const gpu::GpuPlan& p = exec.plan();
  bool reference = true;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    fs::path file = fs::path(a.dir) / ("input_" + std::to_string(i) + ".bin");
    std::string bytes = fs::exists(file) ? readFile(file) : seeded(p.inputs[i].dtype, p.inputs[i].bytes, uint32_t(i), 1.0f);
    reference = reference && fs::exists(file);
    FRICTION_CHECK(int64_t(bytes.size()) == p.inputs[i].bytes, file.string() + " is not input " + std::to_string(i) + "'s size");
    exec.upload(i, bytes.data(), bytes.size());
  }
  exec.launch();
  // The check: every f32 output against expected_<o>.bin.
  std::string checkText = "not checked (no expected_<o>.bin)";
  bool pass = true, checked = false;
  double worst = 0, maxAbs = 0;
  for (size_t o = 0; o < p.outputs.size() && reference && !weightsFilled; ++o) {
    fs::path file = fs::path(a.dir) / ("expected_" + std::to_string(o) + ".bin");
    if (!fs::exists(file) || p.outputs[o].dtype != "f32") continue;
    std::string want = readFile(file), got(size_t(p.outputs[o].bytes), '\0');
    FRICTION_CHECK(want.size() == got.size(), file.string() + " is not output " + std::to_string(o) + "'s size");
    exec.download(o, got.data(), got.size());
    Check c = compare(reinterpret_cast<const float*>(got.data()), reinterpret_cast<const float*>(want.data()),
                      p.outputs[o].bytes / 4, a.rtol);
    worst = std::max(worst, c.worst);
    maxAbs = std::max(maxAbs, c.maxAbs);
    pass = pass && c.worst <= 1.0;
    checked = true;
  }
  if (checked) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s at rtol %g (max abs error %.3g, worst %.3g of the tolerance)",
                  pass ? "pass" : "FAIL", a.rtol, maxAbs, worst);
    checkText = buf;
  }
  for (int i = 0; i < a.warmup; ++i) exec.launch();
  std::vector<double> ms;
  for (int i = 0; i < a.reps; ++i) ms.push_back(exec.launch(a.profileTop > 0));
  double median = quantile(ms, 0.5), lo = quantile(ms, 0.1), hi = quantile(ms, 0.9);
  if (a.json) {
    std::printf("{\"plan\": \"%s\", \"device\": \"%s\", \"chip\": \"%s\", \"kernels\": %zu, \"calls\": %zu, \"launches\": %ld, "
                "\"arena_bytes\": %ld, \"bytes_between_kernels\": %ld, \"checked\": %s, \"pass\": %s, \"worst\": %.6g, "
                "\"max_abs_error\": %.6g, \"weights_filled\": %s, \"median_ms\": %.6f, \"p10_ms\": %.6f, \"p90_ms\": %.6f, "
                "\"reps\": %d}\n",
                a.dir.c_str(), exec.device().c_str(), p.chip.c_str(), p.kernels.size(), p.calls.size(), long(p.launches()),
                long(p.arenaBytes), long(p.bytesBetweenKernels()), checked ? "true" : "false", pass ? "true" : "false",
                worst, maxAbs, weightsFilled ? "true" : "false", median, lo, hi, a.reps);
  } else {
    std::printf("%s on %s (PTX for %s): %zu kernels, %zu calls = %ld launches a run, arena %.1f MB\n", a.dir.c_str(),
                exec.device().c_str(), p.chip.c_str(), p.kernels.size(), p.calls.size(), long(p.launches()),
                double(p.arenaBytes) / 1e6);
    std::printf("  outputs: %s%s\n", checkText.c_str(), weightsFilled ? " (weights filled with seeded values)" : "");
    std::printf("  %d runs: median %.3f ms (p10 %.3f, p90 %.3f), CUDA events around the launches\n", a.reps, median, lo, hi);
  }
  if (a.profileTop > 0) {
    std::map<std::string, std::pair<double, long>> byKernel;  // label -> ms, calls
    for (size_t c = 0; c < p.calls.size(); ++c) {
      auto& [t, n] = byKernel[p.kernelLabels[size_t(p.calls[c].kernel)]];
      t += exec.callMs()[c] / double(exec.profiledRuns());
      n++;
    }
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [label, tn] : byKernel) rows.push_back({tn.first, label + " x" + std::to_string(tn.second)});
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(a.json ? stderr : stdout, "  slowest kernels (ms a run, events between calls):\n");
    for (size_t i = 0; i < rows.size() && int(i) < a.profileTop; ++i)
      std::fprintf(a.json ? stderr : stdout, "    %8.3f  %s\n", rows[i].first, rows[i].second.c_str());
  }
  return checked && !pass ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return runMain(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "friction-cuda-run: %s\n", e.what());
    return 1;
  }
}
