#include "vendor_bridge/PythonWorker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "ir/Error.h"
#include "runtime/ProcessState.h"

namespace friction::vendor {

std::string PythonWorker::python() {
  if (const char* p = std::getenv("FRICTION_PYTHON")) return p;
  std::string venv = std::string(FRICTION_SOURCE_DIR) + "/.venv/bin/python";
  return std::filesystem::exists(venv) ? venv : "";
}

PythonWorker::PythonWorker(const std::string& script) : script_(script) {
  std::string py = python();
  FRICTION_CHECK(!py.empty(), "the project venv is missing: run scripts/setup.sh");
  // A worker that died (a vendor crash, a Python that does not start) must be an error
  // for this request, not a SIGPIPE that ends friction without a message.
  signal(SIGPIPE, SIG_IGN);
  // Close-on-exec: a worker started later must not inherit this worker's pipe ends, or this worker would not see
  // end of input when friction closes its side (dup2 clears the flag on the child's stdin and stdout).
  int toChild[2], fromChild[2];
  FRICTION_CHECK(pipe2(toChild, O_CLOEXEC) == 0 && pipe2(fromChild, O_CLOEXEC) == 0,
                 "cannot create pipes for the Python worker");
  const pid_t parent = getpid();
  pid_ = fork();
  FRICTION_CHECK(pid_ >= 0, "cannot start the Python worker");
  if (pid_ == 0) {
    // A parked (stopped) worker would never see friction's end; SIGCONT when the parent goes lets it run on to
    // the end of its input. Harmless otherwise, also where the thread that started it ends first.
    prctl(PR_SET_PDEATHSIG, SIGCONT);
    if (getppid() != parent) _exit(127);
    dup2(toChild[0], 0);
    dup2(fromChild[1], 1);
    close(toChild[1]);
    close(fromChild[0]);
    execl(py.c_str(), py.c_str(), "-u", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(toChild[0]);
  close(fromChild[1]);
  in_ = fdopen(toChild[1], "w");
  out_ = fdopen(fromChild[0], "r");
}

PythonWorker::~PythonWorker() {
  resume();
  if (in_) {
    std::fputs("{\"cmd\": \"quit\"}\n", in_);
    std::fclose(in_);
  }
  if (out_) std::fclose(out_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

bool PythonWorker::park() {
  if (pid_ <= 0 || kill(pid_, SIGSTOP) != 0) return false;
  parked_ = true;
  // The stop reaches every thread within microseconds; give up (the harness then waits for quiet) after 50 ms.
  for (auto t0 = std::chrono::steady_clock::now(); std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50);) {
    std::vector<char> states = threadStates(pid_);
    if (states.empty() || std::count(states.begin(), states.end(), 'Z')) return false;  // exited
    if (std::all_of(states.begin(), states.end(), [](char s) { return s == 'T' || s == 't'; })) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return false;
}

void PythonWorker::resume() {
  if (parked_ && pid_ > 0) kill(pid_, SIGCONT);
  parked_ = false;
}

nlohmann::json PythonWorker::request(const nlohmann::json& req) {
  resume();
  std::string line = req.dump() + "\n";
  FRICTION_CHECK(std::fputs(line.c_str(), in_) >= 0 && std::fflush(in_) == 0,
                 "the Python worker (" + script_ + ") is not running");
  std::string answer;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, out_)) {
    answer += buf;
    if (!answer.empty() && answer.back() == '\n') break;
  }
  FRICTION_CHECK(!answer.empty(), "the Python worker (" + script_ + ") exited without answering");
  nlohmann::json j = nlohmann::json::parse(answer);
  FRICTION_CHECK(j.value("ok", false), "bridge: " + j.value("error", std::string("unknown error")));
  return j;
}

}  // namespace friction::vendor
