// The revision friction was built from: `git describe --always --dirty` at build time (cmake/Revision.cmake),
// "unknown" outside a git checkout. Recorded in result rows, AOT artifacts and the Python module.
#pragma once

namespace friction {
const char* revision();
}  // namespace friction
