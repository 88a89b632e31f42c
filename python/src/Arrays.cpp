#include "python/src/Arrays.h"

#include <cstdint>
#include <cstring>
#include <optional>

#include "ir/Error.h"

namespace friction::python {
namespace {

// A buffer's struct-module format ('f', '<i8', '=q', ...) as a dtype; nullopt for what friction has no dtype
// for. Only native byte order: a big-endian array is refused by the caller.
std::optional<DType> dtypeOfFormat(std::string format, size_t itemsize) {
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || format[0] == '<')) format.erase(0, 1);
  if (format.size() != 1) return std::nullopt;
  switch (format[0]) {
    case 'f': return DType::F32;
    case 'd': return DType::F64;
    case 'e': return DType::F16;
    case '?': return DType::Bool;
    case 'b': return DType::I8;
    case 'B': return DType::U8;
    case 'h': return DType::I16;
    case 'H': return DType::U16;
    case 'i': case 'l': case 'q':
      return itemsize == 4 ? DType::I32 : itemsize == 8 ? std::optional(DType::I64) : std::nullopt;
    case 'I': case 'L': case 'Q':
      return itemsize == 4 ? DType::U32 : itemsize == 8 ? std::optional(DType::U64) : std::nullopt;
  }
  return std::nullopt;
}

// The buffer-protocol format of a dtype (BF16 has none: returned as float32).
const char* formatOf(DType t) {
  switch (t) {
    case DType::F32: case DType::BF16: return "f";
    case DType::F64: return "d";
    case DType::F16: return "e";
    case DType::Bool: return "?";
    case DType::I8: return "b";
    case DType::U8: return "B";
    case DType::I16: return "h";
    case DType::U16: return "H";
    case DType::I32: return "i";
    case DType::U32: return "I";
    case DType::I64: return "q";
    case DType::U64: return "Q";
  }
  return "B";
}

std::string shapeText(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string numpyName(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16 (given and returned as float32)";
    case DType::Bool: return "bool";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::I16: return "int16";
    case DType::U16: return "uint16";
    case DType::I32: return "int32";
    case DType::U32: return "uint32";
    case DType::I64: return "int64";
    case DType::U64: return "uint64";
  }
  return "?";
}

Tensor tensorFromBuffer(const py::buffer& array, const Graph& g, size_t index) {
  const Value* in = g.inputs()[index];
  std::string what = "input " + std::to_string(index) + " ('" + in->name() + "')";
  py::buffer_info info = array.request();
  std::vector<int64_t> shape(info.shape.begin(), info.shape.end());
  std::optional<DType> dtype = dtypeOfFormat(info.format, size_t(info.itemsize));
  DType want = in->dtype();
  FRICTION_CHECK(dtype.has_value(), what + ": arrays of format '" + info.format + "' are not supported (expects " +
                                        numpyName(want) + ")");
  bool castFromF32 = want == DType::BF16 && *dtype == DType::F32;
  FRICTION_CHECK(*dtype == want || castFromF32,
                 what + " expects " + numpyName(want) + ", got an array of " + numpyName(*dtype));
  const Shape& expected = in->shape();
  bool shapeOk = expected.hasRank() && expected.rank() == shape.size();
  for (size_t d = 0; shapeOk && d < shape.size(); ++d) shapeOk = !expected[d].isStatic() || expected[d].value == shape[d];
  FRICTION_CHECK(shapeOk, what + " expects shape " + expected.str() + ", got an array of shape " + shapeText(shape));
  // C-contiguous: strides are the row-major ones (any stride is fine on a dim of 1, and on an empty array).
  int64_t stride = info.itemsize;
  for (size_t d = shape.size(); d-- > 0 && info.size > 0;) {
    FRICTION_CHECK(shape[d] == 1 || info.strides[d] == stride,
                   what + ": the array is not C-contiguous (numpy.ascontiguousarray makes it so)");
    stride *= shape[d];
  }
  // Element alignment is what the kernels need (their vector loads are unaligned ones).
  bool aligned = reinterpret_cast<uintptr_t>(info.ptr) % dtypeSize(want) == 0;
  if (aligned && !castFromF32) {
    // The tensor holds a reference to the array's owner; dropping it needs the GIL, which a run releases.
    auto* owner = new py::object(py::reinterpret_borrow<py::object>(array));
    std::shared_ptr<void> storage(info.ptr, [owner](void*) {
      py::gil_scoped_acquire gil;
      delete owner;
    });
    return Tensor::view(want, shape, std::move(storage));
  }
  Tensor t = Tensor::uninitialized(*dtype, shape);
  if (t.byteSize() > 0) std::memcpy(t.rawData(), info.ptr, t.byteSize());
  return castFromF32 ? t.castTo(DType::BF16) : t;
}

void bindOutputArray(py::module_& m) {
  py::class_<OutputArray>(m, "OutputArray", py::buffer_protocol(),
                          "A result tensor; numpy.asarray(x) wraps it without copying.")
      .def_buffer([](OutputArray& o) {
        if (o.tensor.dtype() == DType::BF16) o.tensor = o.tensor.castTo(DType::F32);
        const Tensor& t = o.tensor;
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides(shape.size());
        py::ssize_t step = py::ssize_t(dtypeSize(t.dtype()));
        for (size_t d = shape.size(); d-- > 0;) strides[d] = step, step *= shape[d];
        return py::buffer_info(const_cast<void*>(t.rawData()), py::ssize_t(dtypeSize(t.dtype())), formatOf(t.dtype()),
                               py::ssize_t(shape.size()), shape, strides);
      });
}

}  // namespace friction::python
