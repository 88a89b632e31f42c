#include "ir/Shell.h"

#include <sys/wait.h>

#include <cstdlib>

namespace friction {

std::string shellQuote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string shellCommand(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + shellQuote(a);
  return cmd;
}

int runCommand(const std::vector<std::string>& argv, const std::string& outputPath, bool withStderr) {
  std::string cmd = shellCommand(argv);
  if (!outputPath.empty()) cmd += " > " + shellQuote(outputPath) + (withStderr ? " 2>&1" : "");
  int status = std::system(cmd.c_str());
  if (status == -1) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace friction
