// numpy arrays <-> friction tensors over the Python buffer protocol (PEP 3118), so the module depends on no
// numpy C API: inputs are read through memoryviews, outputs are returned as objects numpy wraps without a copy.
#pragma once
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "ir/Graph.h"
#include "ir/Tensor.h"

namespace friction::python {

namespace py = pybind11;

// The tensor for graph input `index` of `g` from a Python buffer: checked against the input's dtype and
// shape (an Error naming the input otherwise); zero-copy when the buffer is C-contiguous and aligned to its element
// (the tensor then keeps the buffer's owner alive), else copied into an aligned tensor.
Tensor tensorFromBuffer(const py::buffer& array, const Graph& g, size_t index);

// Owns a result tensor and exposes it through the buffer protocol (numpy.asarray wraps it without a copy).
struct OutputArray {
  Tensor tensor;
};
void bindOutputArray(py::module_& m);

// The dtype name numpy spells for `t` ("float32", "int64", "bool", ...).
std::string numpyName(DType t);

}  // namespace friction::python
