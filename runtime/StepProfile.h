// Where a compiled model's run time goes: wall time per executed step,
// accumulated over runs, reported per kind of step (the label a backend gives
// it) and for the slowest individual steps. Backends time steps only when
// asked (e.g. `cpu?profile=on`), so the protocol's plain samples stay untouched.
#pragma once
#include <string>
#include <vector>

namespace friction {

struct StepTime {
  std::string label;  // the kind of step, e.g. "conv nhwc 1x1 (sgemm)"; steps of one label are summed
  std::string where;  // this step: node name and output shape
  double ms = 0;      // total over all runs
  long calls = 0;
};

// Steps a profile names, slowest first, unless asked for more (cpu?profile=all).
constexpr int kSlowestStepsNamed = 12;

// The table: per label (calls per run, ms per run, share of the total) and
// the `top` slowest steps. Empty when `runs` is 0. `runsNote` follows the run
// count in the heading (which runs were left out).
std::string profileReport(const std::vector<StepTime>& steps, long runs, int top = kSlowestStepsNamed,
                          const std::string& runsNote = "");

}  // namespace friction
