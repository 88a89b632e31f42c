// The subcommands of the `friction` CLI (contract: ../shared/design.md).
// Each `add*` registers its options on the app and the action to run.
#pragma once
#include <CLI/CLI.hpp>

namespace friction::cli {

void addInspect(CLI::App& app);
void addRun(CLI::App& app);
void addCompile(CLI::App& app);  // ahead-of-time artifacts (codegen/aot/Artifact.h)
void addConformance(CLI::App& app);
void addZoo(CLI::App& app);
void addPasses(CLI::App& app);  // `passes` and `opt`
void addBench(CLI::App& app);
void addAblate(CLI::App& app);
void addReport(CLI::App& app);
void addSweep(CLI::App& app);  // `sweep` and `merge`

}  // namespace friction::cli
