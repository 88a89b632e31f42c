#include "ir/OpRegistry.h"
#include "ir/ops/ShapeHelpers.h"

namespace friction {

void registerTensorOps(OpRegistry& r) {}

}  // namespace friction
