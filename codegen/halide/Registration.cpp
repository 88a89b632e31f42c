#include "codegen/halide/Registration.h"

#include <omp.h>

#include <cstdlib>
#include <map>
#include <string>

#include "codegen/CpuBackend.h"
#include "codegen/halide/HalideSource.h"
#include "ir/Error.h"
#include "runtime/Backend.h"

namespace friction::codegen::halide {
namespace {

std::unique_ptr<Backend> makeHalideBackend(const std::map<std::string, std::string>& options) {
  CpuBackendOptions backend;
  backend.name = "halide";
  backend.codegen.target = Target::Halide;
  ScheduleOptions schedule;
  for (const auto& [key, value] : options) {
    if (key == "schedule") {
      schedule.schedule = parseSchedule(value);
    } else if (key == "fusion") {
      FRICTION_CHECK(value == "inline" || value == "root", "backend halide: fusion must be inline or root, got '" + value + "'");
      schedule.inlineProducers = value == "inline";
    } else if (key == "dump") {
      FRICTION_CHECK(value == "on" || value == "off", "backend halide: dump must be on or off, got '" + value + "'");
      schedule.dump = value == "on";
    } else if (key == "profile") {
      FRICTION_CHECK(value == "on" || value == "off", "backend halide: profile must be on or off, got '" + value + "'");
      backend.profile = value == "on";
    } else {
      throw Error("backend halide: unknown option '" + key + "' (options: schedule=" +
                  [] {
                    std::string s;
                    for (const ScheduleInfo& i : schedules()) s += (s.empty() ? "" : "|") + std::string(i.spelling);
                    return s;
                  }() +
                  ", fusion=inline|root, profile=on|off, dump=on|off)");
    }
  }
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
