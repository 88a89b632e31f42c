// Commands run through the shell with every argument quoted, so that paths
// holding spaces or quotes reach the program as they are.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace friction {

// `s` in single quotes, each ' inside written '\'': one shell word, taken literally.
std::string shellQuote(const std::string& s);
// argv quoted and joined by spaces (also what error messages show).
std::string shellCommand(const std::vector<std::string>& argv);
// Runs argv[0] with the other arguments and waits for it. With `outputPath`,
// its stdout (and, with `withStderr`, its stderr) goes to that file instead of
// this process's. Returns the exit status: 128 + the signal when a signal
// ended it, -1 when no shell could be started.
int runCommand(const std::vector<std::string>& argv, const std::string& outputPath = "", bool withStderr = false);

// A whole file's bytes ("" when it cannot be read), and a file written whole
// (throws Error naming the path when it cannot be).
std::string readFile(const std::filesystem::path& path);
void writeFile(const std::filesystem::path& path, const std::string& bytes);

// A fresh folder under the system's temporary directory, named
// <prefix>-XXXXXX, removed with everything in it on scope exit, or kept (and
// said so on stderr) when the environment variable `keepEnv` is set.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix, const char* keepEnv = nullptr);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

 private:
  const char* keepEnv_;
};

}  // namespace friction
