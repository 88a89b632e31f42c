// Shell commands built from argv: every argument reaches the program as it is, whatever quotes or spaces it
// holds, and the exit status comes back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ir/Shell.h"

namespace fs = std::filesystem;

namespace friction {
namespace {

TEST(Shell, QuoteIsOneLiteralWord) {
  EXPECT_EQ(shellQuote("plain"), "'plain'");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellCommand({"echo", "a b", "c'd"}), "'echo' 'a b' 'c'\\''d'");
}

TEST(Shell, ArgumentsArriveUnchangedAndOutputGoesToTheFile) {
  fs::path dir = fs::temp_directory_path() / ("friction shell 'test' " + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path out = dir / "it's out.txt";
  std::vector<std::string> args = {"printf", "%s|", "a b", "c'd", "$HOME", "`x`", "\"q\"", "e\\f"};
  ASSERT_EQ(runCommand(args, out.string()), 0);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "a b|c'd|$HOME|`x`|\"q\"|e\\f|");
  EXPECT_EQ(runCommand({"sh", "-c", "echo oops >&2; exit 3"}, out.string(), /*withStderr=*/true), 3);
  std::ifstream err(out);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(err)), {}), "oops\n");
  EXPECT_EQ(runCommand({"sh", "-c", "kill -9 $$"}), 128 + 9);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace friction
