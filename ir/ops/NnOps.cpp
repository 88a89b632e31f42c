#include "ir/OpRegistry.h"
#include "ir/ops/ShapeHelpers.h"

namespace friction {

void registerNnOps(OpRegistry& r) {}

}  // namespace friction
