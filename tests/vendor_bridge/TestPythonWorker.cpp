// The Python worker that every vendor bridge runs in: parked between the harness's blocks (SIGSTOP), a worker
// whose thread pool was spinning uses no CPU, answers its next request as before, quits when destroyed parked,
// and is not left stopped when friction dies. A stand-in worker script spins a thread the way ONNX Runtime's
// pool does after a run. Skips without the project venv (scripts/setup.sh makes it).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/ProcessState.h"
#include "vendor_bridge/PythonWorker.h"

namespace friction::vendor {
namespace {

namespace fs = std::filesystem;

// Answers every request with its pid; "spin" also starts a thread that spins for 5 s.
constexpr const char* kSpinningWorker = R"(import json, os, sys, threading, time
def spin():
    end = time.time() + 5
    while time.time() < end:
        pass
for line in sys.stdin:
    req = json.loads(line)
    if req["cmd"] == "quit":
        break
    if req["cmd"] == "spin":
        threading.Thread(target=spin, daemon=True).start()
    print(json.dumps({"ok": True, "pid": os.getpid()}), flush=True)
)";

class PythonWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (PythonWorker::python().empty()) GTEST_SKIP() << "the project venv is missing (scripts/setup.sh makes it)";
    script_ = fs::temp_directory_path() / ("friction-spinning-worker-" + std::to_string(getpid()) + ".py");
    std::ofstream(script_) << kSpinningWorker;
  }
  void TearDown() override { fs::remove(script_); }
  fs::path script_;
};

// user + system CPU time of a process, in clock ticks (fields 14 and 15 of /proc/PID/stat).
long cpuTicks(pid_t pid) {
  long utime = 0, stime = 0;
  std::sscanf(statAfterComm("/proc/" + std::to_string(pid) + "/stat").c_str(),
              "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime);
  return utime + stime;
}

bool allStopped(pid_t pid) {
  auto s = threadStates(pid);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == 'T' || c == 't'; });
}

TEST_F(PythonWorkerTest, AParkedWorkerUsesNoCpuAndAnswersItsNextRequest) {
  auto worker = std::make_unique<PythonWorker>(script_.string());
  const pid_t pid = worker->request({{"cmd", "spin"}}).at("pid").get<pid_t>();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(worker->park());
  EXPECT_TRUE(allStopped(pid));
  const long before = cpuTicks(pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // 30 ticks of a spinning thread
  EXPECT_EQ(cpuTicks(pid), before) << "a parked worker's spinning thread ran";

  EXPECT_EQ(worker->request({{"cmd", "ping"}}).at("pid").get<pid_t>(), pid) << "resumed by its next request";
  EXPECT_FALSE(allStopped(pid));
  ASSERT_TRUE(worker->park());
  worker.reset();  // destroyed parked: continued, told to quit, reaped (a hang here is the failure)
  EXPECT_TRUE(threadStates(pid).empty()) << "the worker process is gone";
}

// A parked worker whose friction dies is continued by the kernel (parent-death signal), reads the end of its input
// and exits, instead of staying stopped for ever.
TEST_F(PythonWorkerTest, AParkedWorkerEndsWhenFrictionDies) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t friction = fork();
  ASSERT_GE(friction, 0);
  if (friction == 0) {  // stands for friction: starts a worker, parks it, dies without cleaning up
    close(fds[0]);
    PythonWorker* worker = new PythonWorker(script_.string());
    pid_t pid = worker->request({{"cmd", "ping"}}).at("pid").get<pid_t>();
    bool parked = worker->park();
    if (write(fds[1], &pid, sizeof pid) != sizeof pid || !parked) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  pid_t pid = 0;
  ASSERT_EQ(read(fds[0], &pid, sizeof pid), ssize_t(sizeof pid));
  close(fds[0]);
  int status = 0;
  waitpid(friction, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the worker was started and parked";
  auto gone = [pid] {
    auto s = threadStates(pid);
    return s.empty() || std::all_of(s.begin(), s.end(), [](char c) { return c == 'Z' || c == 'X'; });
  };
  for (int i = 0; i < 500 && !gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(gone()) << "the worker of a friction that died is still there (stopped: "
                      << (allStopped(pid) ? "yes" : "no") << ")";
  if (!gone()) kill(pid, SIGKILL);
}

}  // namespace
}  // namespace friction::vendor
