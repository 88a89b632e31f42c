// Element types of tensors in the IR.
#pragma once
#include <cstddef>
#include <cstdint>
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

}  // namespace friction
