// A long-lived Python process that a bridge talks to with one JSON object per
// line on its stdin/stdout. Started once per compiled model, so interpreter
// start-up and imports stay outside every measurement.
#pragma once
#include <sys/types.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace friction::vendor {

class PythonWorker {
 public:
  // Runs `script` with the project venv's Python (FRICTION_PYTHON overrides it).
  explicit PythonWorker(const std::string& script);
  ~PythonWorker();
  PythonWorker(const PythonWorker&) = delete;
  PythonWorker& operator=(const PythonWorker&) = delete;

  // Sends one request and returns the reply; throws Error with the worker's
  // message when it answers {"ok": false, "error": ...} or dies.
  nlohmann::json request(const nlohmann::json& req);

  // Stops the worker process (SIGSTOP) until the next request: the thread pools its last runs left spinning
  // (ONNX Runtime's, for ~50-90 ms) then take no core, where waiting for them to go quiet costs the harness that
  // long after every block. True once every thread of it has stopped. A worker whose friction dies is continued
  // by the kernel (its parent-death signal is SIGCONT), sees the end of its input and exits.
  bool park();

  // The Python that workers run with, or "" when the venv is missing.
  static std::string python();

 private:
  void resume();  // continues a parked worker

  pid_t pid_ = -1;
  bool parked_ = false;
  FILE* in_ = nullptr;   // to the worker
  FILE* out_ = nullptr;  // from the worker
  std::string script_;
};

}  // namespace friction::vendor
