#include "ir/DType.h"

#include <array>
#include <cmath>
#include <cstring>

#include "ir/Error.h"

namespace friction {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
  int32_t onnxCode;  // TensorProto.DataType
};
constexpr std::array<DTypeInfo, 13> kInfo = {{
    {DType::F32, "f32", 4, 1},  {DType::F64, "f64", 8, 11}, {DType::F16, "f16", 2, 10}, {DType::BF16, "bf16", 2, 16},
    {DType::I8, "i8", 1, 3},    {DType::I16, "i16", 2, 5},  {DType::I32, "i32", 4, 6},  {DType::I64, "i64", 8, 7},
    {DType::U8, "u8", 1, 2},    {DType::U16, "u16", 2, 4},  {DType::U32, "u32", 4, 12}, {DType::U64, "u64", 8, 13},
    {DType::Bool, "bool", 1, 9},
}};
}  // namespace

size_t dtypeSize(DType t) { return kInfo[size_t(t)].size; }
std::string_view dtypeName(DType t) { return kInfo[size_t(t)].name; }

DType dtypeFromName(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  throw Error("unknown dtype '" + std::string(name) + "'");
}

DType dtypeFromOnnxCode(int64_t code, const std::string& context) {
  for (const auto& i : kInfo)
    if (i.onnxCode == code) return i.type;
  if (code == 8) throw Error(context + ": string tensors are not supported");
  if (code == 0) throw Error(context + ": element type is undefined");
  throw Error(context + ": unsupported element type " + std::to_string(code));
}

int32_t dtypeToOnnxCode(DType t) { return kInfo[size_t(t)].onnxCode; }

bool isFloat(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }
bool isSignedInt(DType t) { return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64; }
bool isUnsignedInt(DType t) { return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64; }

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal half: normalize
      int e = -1;
      do {
        e++;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) return uint16_t(sign | 0x7c00);  // rounds to inf
  if (absx < 0x38800000) {  // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    // scale so that the half subnormal unit (2^-24) becomes 1, then round to nearest even
    float scaled = a * 16777216.0f;
    uint32_t m = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | m);
  }
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = exp << 10 | mant >> 13;
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return uint16_t(sign | h);
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return uint16_t((x + rounding) >> 16);
}

}  // namespace friction
