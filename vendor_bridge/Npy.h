// NumPy .npy files (format 1.0, little-endian, C order): how tensors travel
// between friction and the Python workers of the vendor bridges.
#pragma once
#include <string>

#include "ir/Tensor.h"

namespace friction::vendor {

void writeNpy(const std::string& path, const Tensor& t);
Tensor readNpy(const std::string& path);

}  // namespace friction::vendor
