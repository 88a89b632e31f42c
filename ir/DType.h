// Element types of tensors in the IR.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace friction {

enum class DType : uint8_t { F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, Bool };

size_t dtypeSize(DType t);
std::string_view dtypeName(DType t);  // short text-format name: f32, i64, bool, ...
DType dtypeFromName(std::string_view name);  // throws Error on unknown names
// ONNX TensorProto.DataType codes (used by ONNX files and by attributes such
// as Cast's `to`). Throws Error for codes friction has no dtype for
// (string=8, complex, float8), naming `context`.
DType dtypeFromOnnxCode(int64_t code, const std::string& context);
int32_t dtypeToOnnxCode(DType t);

bool isFloat(DType t);
inline bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }
bool isSignedInt(DType t);
bool isUnsignedInt(DType t);
inline bool isInteger(DType t) { return isSignedInt(t) || isUnsignedInt(t); }

// IEEE half and bfloat16 conversions (round to nearest even).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
inline float bf16ToFloat(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
uint16_t floatToBf16(float f);

// Float to integer as every friction cast does it: truncate toward zero; NaN
// gives 0 and out-of-range values saturate (C++ leaves those undefined, ONNX
// unspecified).
template <typename T>
T floatToInt(double d) {
  if (std::isnan(d)) return T(0);
  if (d <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (d >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(d);
}

// Calls f(T{}) with the C++ element type of `t`; false for F16 and BF16, which have none.
template <typename F>
bool withElementType(DType t, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); return true;
    case DType::F64: f(double{}); return true;
    case DType::I8: f(int8_t{}); return true;
    case DType::I16: f(int16_t{}); return true;
    case DType::I32: f(int32_t{}); return true;
    case DType::I64: f(int64_t{}); return true;
    case DType::U8: f(uint8_t{}); return true;
    case DType::U16: f(uint16_t{}); return true;
    case DType::U32: f(uint32_t{}); return true;
    case DType::U64: f(uint64_t{}); return true;
    case DType::Bool: f(bool{}); return true;
    case DType::F16:
    case DType::BF16: return false;
  }
  return false;
}

}  // namespace friction
