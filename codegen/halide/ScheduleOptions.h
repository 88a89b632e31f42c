// The halide backend's schedule choices, as options (no Halide types: the
// registration, the CLI and tests read them): the schedule is an ablation
// axis of its own (`halide?schedule=...`), and so is loop-level fusion
// (`halide?fusion=inline|root`), apart from friction's graph-level fusion
// passes. HalideSchedule.h applies them.
#pragma once
#include <string>
#include <vector>

namespace friction::codegen::halide {

// One list of the schedules: option spelling, Halide's autoscheduler name
// ("" for friction's own), summary.
#define FRICTION_HALIDE_SCHEDULES(X)                                                                              \
  X(None, "none", "", "no schedule: Halide's defaults (every pure Func inlined, serial loops)")                      \
  X(Default, "default", "",                                                                                        \
    "friction's hand schedule: outputs tiled a vector x 4, vectorized and parallel over the outermost dim; "       \
    "reductions in register tiles of a vector x 8 with the reduction inside")                                      \
  X(Adams2019, "adams2019", "Adams2019", "Halide's learned autoscheduler (cost model shipped with Halide 14)")     \
  X(Mullapudi2016, "mullapudi2016", "Mullapudi2016", "Halide's heuristic autoscheduler (grouping and tiling)")     \
  X(Li2018, "li2018", "Li2018", "Halide's gradient autoscheduler (simple parallel and vector loops)")

enum class Schedule {
#define FRICTION_HALIDE_SCHEDULE_ENUM(e, spelling, autoscheduler, summary) e,
  FRICTION_HALIDE_SCHEDULES(FRICTION_HALIDE_SCHEDULE_ENUM)
#undef FRICTION_HALIDE_SCHEDULE_ENUM
};

struct ScheduleInfo {
  Schedule schedule;
  const char* spelling;
  const char* autoscheduler;  // "" for none and default
  const char* summary;
};
const std::vector<ScheduleInfo>& schedules();
const ScheduleInfo& scheduleInfo(Schedule s);
// "none|default|...": every spelling, for messages.
std::string scheduleSpellings();
// The schedule spelled `name`; throws Error listing the spellings otherwise.
Schedule parseSchedule(const std::string& name);

// A fork-join costs microseconds: the small Mixer's 53 parallel loops a run took it from 0.06 ms on one
// thread to 0.19 ms on two (docs/codegen.md).
constexpr int64_t kParallelWork = 16384;

struct ScheduleOptions {
  Schedule schedule = Schedule::Default;
  // Loop-level fusion of the pure producers inside a kernel (per-node values
  // of a fused region, Gemm's alpha and C, a mean's scaling): inlined into
  // their consumers, or materialized whole before them (compute_root). The
  // autoschedulers decide for themselves; this applies to none and default.
  bool inlineProducers = true;
  int threads = 1;  // parallelism the autoschedulers plan for
  // Adams2019's beam width (HL_BEAM_SIZE): 1 is its greedy search, one pass;
  // Halide's own default, 32 with five passes, did not finish the full-size
  // MobileNetV2 in 9 minutes. Applies to adams2019 only.
  int beam = 1;
  // Rows of a contraction's output (a convolution's or matmul's accumulator)
  // accumulated together as the elements of one Tuple, so each step of the
  // reduction updates that many independent accumulators: the register tile's
  // rows, written into the algorithm. Adams2019 unrolls pure loops inside a
  // reduction only when they hold at most 12 lanes, so with a vector of 8 or
  // 16 it keeps one accumulator, one dependent chain of FMAs, through a whole
  // reduction. 1 (the default): the plain accumulator. Not the autoschedulers'
  // default: at batch 8 Halide's lowering of a grouped ResNet-50 kernel ran
  // for over 15 minutes (docs/codegen.md).
  int accumulatorRows = 1;
  // The f32 lanes of friction's schedule's vectors (outputs, register tiles,
  // panels); 0 (the default): the target's natural vector width, 8 with AVX2
  // and 16 with AVX-512. Applies to default only.
  int lanes = 0;
  // The least work (elements, times a reduction's steps) a stage of friction's schedule holds to run in
  // parallel; 0: every stage of 2 or more iterations. Applies to default only.
  int64_t parallelWork = kParallelWork;
  bool dump = false;  // print each kernel's loop nest (its schedule) to stderr
};

}  // namespace friction::codegen::halide
