// Import speed and memory: exports a model of about SIZE_MB (default 100) to
// a temporary .onnx file, then imports it in fresh child processes and reports
// the median wall time and the peak resident memory relative to the file size.
// Target (issue 2): under 1 s and under 2x the file size for 100 MB.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"

using namespace friction;

int main(int argc, char** argv) {
  int sizeMb = argc > 1 ? std::stoi(argv[1]) : 100;
  int reps = argc > 2 ? std::stoi(argv[2]) : 5;
  // A square Gemm of width w holds w*w floats; two of them make the model.
  int64_t width = int64_t(std::sqrt(double(sizeMb) * 1e6 / 8));
  std::string path = (std::filesystem::temp_directory_path() / ("friction_bench_import_" + std::to_string(::getpid()) + ".onnx")).string();
  {
    auto g = zoo::build(zoo::parseSpec("mlp?depth=2&width=" + std::to_string(width) + "&inputs=" + std::to_string(width)));
    onnxio::exportOnnxFile(*g, path);
  }
  double fileMb = double(std::filesystem::file_size(path)) / 1e6;
  std::vector<double> seconds, peakMb;
  for (int r = 0; r < reps; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
      auto t0 = std::chrono::steady_clock::now();
      auto g = onnxio::importOnnxFile(path);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (write(fds[1], &s, sizeof s) != sizeof s) _exit(2);
      _exit(g->initializers().empty() ? 3 : 0);
    }
    double s = 0;
    if (read(fds[0], &s, sizeof s) != sizeof s) return 1;
    close(fds[0]);
    close(fds[1]);
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    seconds.push_back(s);
    peakMb.push_back(double(ru.ru_maxrss) / 1e3);  // ru_maxrss is in KiB; close enough to MB here
  }
  std::filesystem::remove(path);
  std::sort(seconds.begin(), seconds.end());
  std::sort(peakMb.begin(), peakMb.end());
  double s = seconds[seconds.size() / 2], m = peakMb[peakMb.size() / 2];
  std::printf("import of a %.1f MB model: median %.3f s over %d runs (min %.3f, max %.3f); "
              "peak RSS %.1f MB = %.2fx the file size (includes the process baseline)\n",
              fileMb, s, reps, seconds.front(), seconds.back(), m, m / fileMb);
  return 0;
}
