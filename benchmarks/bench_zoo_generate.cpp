// Zoo generation speed and memory: builds models of about 1 GB of float
// parameters, each in a fresh child process, and reports the wall time and
// the peak resident memory (getrusage ru_maxrss) relative to the parameter
// bytes. Target (issue 3): under 2 s and under 1.5x the model size for 1 GB.
// Usage: bench_zoo_generate [SPEC...]   (zoo specs without the "zoo:" prefix)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "frontend/zoo/Zoo.h"

using namespace friction;

namespace {

double peakRssBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) * 1024.0;  // Linux reports KiB
}

int measure(const std::string& spec) {
  auto t0 = std::chrono::steady_clock::now();
  auto g = zoo::build(zoo::parseSpec(spec));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double bytes = double(g->parameterBytes()), rss = peakRssBytes();
  std::printf("%-44s params %7.1f MB  nodes %6zu  time %6.3f s  peak RSS %7.1f MB  (%.2fx params)\n", spec.c_str(),
              bytes / 1e6, g->nodes().size(), secs, rss / 1e6, rss / bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // ~1 GB each: ViT-B/16 grown to 35 blocks (~7.1M parameters a block), and a wide MLP.
  std::vector<std::string> specs = {"vit?preset=vit_b&depth=35", "mlp?preset=mlp_1g"};
  if (argc > 1) specs.assign(argv + 1, argv + argc);
  int failures = 0;
  for (const auto& spec : specs) {
    std::fflush(stdout);
    pid_t pid = fork();  // a fresh process per model, so ru_maxrss is this model's peak
    if (pid == 0) {
      try {
        int rc = measure(spec);
        std::fflush(stdout);  // _exit skips stdio flushing
        _exit(rc);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", spec.c_str(), e.what());
        _exit(1);
      }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures ? 1 : 0;
}
