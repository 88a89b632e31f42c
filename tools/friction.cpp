// friction: a graph compiler built to study graph compilation.
#include <CLI/CLI.hpp>
#include <iostream>

#include "codegen/Registration.h"
#include "codegen/cuda/Registration.h"
#include "codegen/halide/Registration.h"
#include "ir/Error.h"
#include "tools/cmd/Commands.h"
#include "vendor_bridge/Bridges.h"

int main(int argc, char** argv) {
  friction::vendor::registerVendorBridges();
  friction::codegen::registerCpuBackend();
  friction::codegen::registerCudaBackend();
  friction::codegen::halide::registerHalideBackend();
  CLI::App app{"friction: a graph compiler built to study graph compilation"};
  app.require_subcommand(1);
  friction::cli::addInspect(app);
  friction::cli::addRun(app);
  friction::cli::addCompile(app);
  friction::cli::addConformance(app);
  friction::cli::addZoo(app);
  friction::cli::addPasses(app);
  friction::cli::addBench(app);
  friction::cli::addAblate(app);
  friction::cli::addSweep(app);
  friction::cli::addReport(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); a usage error exits 1 like every other error.
    return app.exit(e) == 0 ? 0 : 1;
  } catch (const friction::Error& e) {
    std::cerr << "friction: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "friction: internal error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
