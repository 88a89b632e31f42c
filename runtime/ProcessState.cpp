#include "runtime/ProcessState.h"

#include <fstream>
#include <iterator>

namespace friction {

std::string statAfterComm(const std::filesystem::path& stat) {
  std::ifstream f(stat);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() ? text.substr(close + 2) : std::string();
}

std::vector<char> threadStates(pid_t pid, pid_t except) {
  std::vector<char> states;
  std::error_code ec;
  const std::string skip = std::to_string(except);
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    if (except != 0 && task.path().filename() == skip) continue;
    const std::string fields = statAfterComm(task.path() / "stat");
    if (!fields.empty()) states.push_back(fields[0]);
  }
  return states;
}

}  // namespace friction
