#include "vendor_bridge/Npy.h"

#include <fstream>
#include <regex>

#include "ir/Error.h"

namespace friction::vendor {
namespace {

struct Descr {
  DType dtype;
  const char* code;
};
constexpr Descr kDescrs[] = {{DType::F32, "<f4"}, {DType::F64, "<f8"}, {DType::F16, "<f2"}, {DType::I8, "|i1"},
                             {DType::I16, "<i2"}, {DType::I32, "<i4"}, {DType::I64, "<i8"}, {DType::U8, "|u1"},
                             {DType::U16, "<u2"}, {DType::U32, "<u4"}, {DType::U64, "<u8"}, {DType::Bool, "|b1"}};

}  // namespace

void writeNpy(const std::string& path, const Tensor& t) {
  const char* code = nullptr;
  for (const auto& d : kDescrs)
    if (d.dtype == t.dtype()) code = d.code;
  FRICTION_CHECK(code, "dtype " + std::string(dtypeName(t.dtype())) + " cannot be passed to a Python bridge (numpy has no bfloat16)");
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  shape += ")";
  std::string header = "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to 64 bytes, ending in '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  FRICTION_CHECK(f.good(), "cannot write '" + path + "'");
  uint16_t len = uint16_t(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(static_cast<const char*>(t.rawData()), std::streamsize(t.byteSize()));
}

Tensor readNpy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  FRICTION_CHECK(f.good(), "cannot open '" + path + "'");
  char magic[8];
  f.read(magic, 8);
  FRICTION_CHECK(f.good() && std::string(magic, 6) == "\x93NUMPY", "'" + path + "' is not a .npy file");
  uint32_t len = 0;
  if (magic[6] == 1) {
    uint16_t l16;
    f.read(reinterpret_cast<char*>(&l16), 2);
    len = l16;
  } else {
    f.read(reinterpret_cast<char*>(&len), 4);
  }
  std::string header(len, '\0');
  f.read(header.data(), len);
  std::smatch m;
  FRICTION_CHECK(std::regex_search(header, m, std::regex("'descr': '([^']+)'")), "'" + path + "': no descr");
  std::string code = m[1];
  FRICTION_CHECK(header.find("'fortran_order': False") != std::string::npos, "'" + path + "': Fortran order");
  FRICTION_CHECK(std::regex_search(header, m, std::regex("'shape': \\(([^)]*)\\)")), "'" + path + "': no shape");
  std::vector<int64_t> dims;
  std::string shape = m[1];
  static const std::regex number("[0-9]+");
  for (std::sregex_iterator it(shape.begin(), shape.end(), number), end; it != end; ++it)
    dims.push_back(std::stoll(it->str()));
  for (const auto& d : kDescrs)
    if (code == d.code) {
      Tensor t(d.dtype, dims);
      f.read(static_cast<char*>(t.rawData()), std::streamsize(t.byteSize()));
      FRICTION_CHECK(f.gcount() == std::streamsize(t.byteSize()), "'" + path + "' is truncated");
      return t;
    }
  throw Error("'" + path + "': unsupported numpy dtype " + code);
}

}  // namespace friction::vendor
