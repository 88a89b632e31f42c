#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "tools/conformance/Conformance.h"

namespace friction::cli {
namespace {

struct ConformanceArgs {
  std::string dir;
  ConformanceOptions options;
  bool json = false, verbose = false;
};

void conformance(ConformanceArgs& a) {
  if (a.verbose && !a.json)
    a.options.onCase = [](const ConformanceCase& c) {
      const char* tag = c.status == ConformanceCase::Status::Passed ? "PASS" : c.status == ConformanceCase::Status::Failed ? "FAIL" : "SKIP";
      std::cout << tag << " " << c.name << (c.reason.empty() ? "" : ": " + c.reason)
                << (c.interpNodes > 0 ? " (" + std::to_string(c.interpNodes) +
                                            (c.interpNodes == 1 ? " node" : " nodes") + " on the interpreter)"
                                      : "")
                << "\n";
    };
  ConformanceReport r = runConformance(a.dir, a.options);
  std::map<std::string, int> skippedOps;
  int ran = 0, withInterp = 0;  // cases that ran; of them, those a compiled backend left nodes of to the interpreter
  for (const auto& c : r.cases) {
    if (c.status == ConformanceCase::Status::Skipped) skippedOps[c.reason]++;
    if (c.interpNodes >= 0) ran++, withInterp += c.interpNodes > 0;
  }
  if (a.json) {
    nlohmann::json j{{"dir", a.dir},         {"backend", a.options.backend}, {"passed", r.passed},
                     {"failed", r.failed},   {"skipped", r.skipped},         {"cases_with_interp_nodes", withInterp}};
    for (const auto& c : r.cases) {
      const char* s = c.status == ConformanceCase::Status::Passed ? "passed" : c.status == ConformanceCase::Status::Failed ? "failed" : "skipped";
      j["cases"].push_back({{"name", c.name}, {"status", s}, {"reason", c.reason},
                            {"interp_nodes", c.interpNodes >= 0 ? nlohmann::json(c.interpNodes) : nlohmann::json()}});
    }
    std::cout << j.dump(2) << "\n";
  } else {
    if (r.failed) {
      std::cout << "failures:\n";
      for (const auto& c : r.cases)
        if (c.status == ConformanceCase::Status::Failed) std::cout << "  " << c.name << ": " << c.reason << "\n";
    }
    if (r.skipped) {
      std::cout << "skipped (" << r.skipped << " cases):\n";
      for (const auto& [why, n] : skippedOps) std::cout << "  " << why << " (" << n << ")\n";
    }
  }
  // The summary line ends the output; with --json it goes to stderr, so stdout stays one JSON document.
  std::ostream& summary = a.json ? std::cerr : std::cout;
  if (a.options.backend != "interp" && ran > 0)
    summary << withInterp << " of the " << ran << " cases that ran left nodes to the interpreter"
            << (a.verbose ? "" : " (-v names them)") << "\n";
  summary << r.passed << " passed, " << r.failed << " failed, " << r.skipped << " skipped\n";
  if (r.failed) throw Error(std::to_string(r.failed) + " conformance case(s) failed");
}

}  // namespace

void addConformance(CLI::App& app) {
  auto args = std::make_shared<ConformanceArgs>();
  auto* cmd = app.add_subcommand("conformance", "run ONNX backend-test cases under DIR");
  cmd->add_option("dir", args->dir, "folder of <case>/model.onnx + test_data_set_*")->required();
  cmd->add_option("--backend", args->options.backend, "backend to test");
  cmd->add_option("--filter", args->options.filter, "regex over case names");
  cmd->add_option("--rtol", args->options.rtol, "relative tolerance for float outputs (default 1e-3)");
  cmd->add_option("--atol", args->options.atol, "absolute tolerance for float outputs (default 1e-7)");
  cmd->add_flag("--scale-relative", args->options.scaleRelative, "rtol relative to each output's largest |value|");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->add_flag("-v,--verbose", args->verbose, "print every case as it runs");
  cmd->callback([args] { conformance(*args); });
}

}  // namespace friction::cli
