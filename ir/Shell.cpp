#include "ir/Shell.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ir/Error.h"

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

std::string readFile(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void writeFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  FRICTION_CHECK(f.good(), "cannot write '" + path.string() + "'");
}

TempDir::TempDir(const std::string& prefix, const char* keepEnv) : keepEnv_(keepEnv) {
  std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  FRICTION_CHECK(mkdtemp(t.data()) != nullptr,
                 "cannot create a temporary folder in " + std::filesystem::temp_directory_path().string());
  path = t;
}

TempDir::~TempDir() {
  if (keepEnv_ && std::getenv(keepEnv_)) {
    std::fprintf(stderr, "note: temporary files kept in %s\n", path.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

}  // namespace friction
