#include "codegen/halide/Registration.h"

#include <omp.h>

#include <cstdlib>
#include <map>
#include <string>

#include "codegen/CpuBackend.h"
#include "codegen/halide/HalideSource.h"
#include "ir/Error.h"
#include "ir/Spec.h"
#include "runtime/Backend.h"

namespace friction::codegen::halide {
namespace {

std::unique_ptr<Backend> makeHalideBackend(const std::map<std::string, std::string>& options) {
  CpuBackendOptions backend;
  backend.name = "halide";
  backend.codegen.target = Target::Halide;
  ScheduleOptions schedule;
  // VALUE is `first` or `second`: true for `first`.
  auto choice = [](const std::string& key, const std::string& value, const char* first, const char* second) {
    FRICTION_CHECK(value == first || value == second, "backend halide: " + key + " must be " + first + " or " + second +
                                                          ", got '" + value + "'");
    return value == first;
  };
  for (const auto& [key, value] : options) {
    if (key == "schedule") schedule.schedule = parseSchedule(value);
    else if (key == "fusion") schedule.inlineProducers = choice(key, value, "inline", "root");
    else if (key == "dump") schedule.dump = choice(key, value, "on", "off");
    else if (key == "profile") backend.profile = choice(key, value, "on", "off");
    else if (key == "beam") {
      auto beam = Spec::integer(value, 1, 1024);
      FRICTION_CHECK(beam, "backend halide: beam must be a width from 1 to 1024, got '" + value + "'");
      schedule.beam = int(*beam);
    } else if (key == "rows") {
      auto rows = Spec::integer(value, 1, 32);
      FRICTION_CHECK(rows, "backend halide: rows must be a count of accumulator rows from 1 to 32, got '" + value + "'");
      schedule.accumulatorRows = int(*rows);
    } else if (key == "lanes") {
      auto lanes = Spec::integer(value, 1, 64);
      FRICTION_CHECK(lanes, "backend halide: lanes must be a vector width from 1 to 64, got '" + value + "'");
      schedule.lanes = int(*lanes);
    } else if (key == "parallel-work") {
      auto work = Spec::integer(value, 0, int64_t(1) << 40);
      FRICTION_CHECK(work, "backend halide: parallel-work must be a count of elements from 0, got '" + value + "'");
      schedule.parallelWork = *work;
    } else
      throw Error("backend halide: unknown option '" + key + "' (options: schedule=" + scheduleSpellings() +
                  ", fusion=inline|root, beam=N (adams2019), rows=N, lanes=N (default), parallel-work=N (default), "
                  "profile=on|off, dump=on|off)");
  }
  FRICTION_CHECK(!options.count("beam") || schedule.schedule == Schedule::Adams2019,
                 "backend halide: beam is Adams2019's search width: it needs schedule=adams2019");
  FRICTION_CHECK(schedule.accumulatorRows == 1 || schedule.schedule != Schedule::Default,
                 "backend halide: rows is for the autoschedulers and none: friction's schedule tiles a contraction's "
                 "registers itself");
  FRICTION_CHECK(!options.count("parallel-work") || schedule.schedule == Schedule::Default,
                 "backend halide: parallel-work is friction's schedule's floor for a parallel loop: it needs "
                 "schedule=default (the autoschedulers choose their own)");
  FRICTION_CHECK(!options.count("lanes") || schedule.schedule == Schedule::Default,
                 "backend halide: lanes is the vector width of friction's schedule: it needs schedule=default "
                 "(the autoschedulers choose their own)");
  schedule.threads = omp_get_max_threads();
  // Halide's own thread pool runs the parallel loops: as many threads as
  // OpenMP has (bench --threads), unless the user set HL_NUM_THREADS. Read
  // when the pool starts, so the first halide model of a process decides.
  setenv("HL_NUM_THREADS", std::to_string(schedule.threads).c_str(), /*overwrite=*/0);
  return createCpuBackend(backend, createHalideSource(schedule));
}

}  // namespace

void registerHalideBackend() { registerBackend("halide", makeHalideBackend); }

}  // namespace friction::codegen::halide
