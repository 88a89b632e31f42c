// One exception type for every user-facing failure: bad models, bad input
// files, unsupported ops. The CLI prints what() and exits nonzero.
#pragma once
#include <stdexcept>
#include <string>

namespace friction {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Throws friction::Error when `cond` is false. The message is built only on failure.
#define FRICTION_CHECK(cond, msg)                      \
  do {                                                 \
    if (!(cond)) throw ::friction::Error(msg);         \
  } while (0)

}  // namespace friction
