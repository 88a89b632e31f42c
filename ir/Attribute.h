// Typed node attributes, mirroring ONNX's attribute kinds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/Tensor.h"

namespace friction {

class Graph;

// The order of alternatives matches AttrKind.
using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor, std::shared_ptr<Graph>>;

enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };

inline AttrKind attrKind(const Attribute& a) { return AttrKind(a.index()); }
std::string_view attrKindName(AttrKind k);

}  // namespace friction
