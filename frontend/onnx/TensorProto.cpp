#include "frontend/onnx/TensorProto.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "ir/Error.h"

namespace friction::onnxio {

using onnx::TensorProto;

namespace {

// Copies the typed repeated field of `proto` into `t` (sizes already checked).
template <typename Dst, typename Field>
void fillFrom(Tensor& t, const Field& field) {
  Dst* d = t.data<Dst>();
  for (int i = 0; i < field.size(); ++i) d[i] = static_cast<Dst>(field.Get(i));
}

std::string readExternal(const TensorProto& proto, const std::string& baseDir, size_t want,
                         const std::string& context) {
  std::string location;
  int64_t offset = 0, length = -1;
  auto number = [&](const std::string& key, const std::string& text) {
    int64_t v = -1;
    auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    FRICTION_CHECK(r.ec == std::errc() && r.ptr == text.data() + text.size() && v >= 0,
                   context + ": external data " + key + " '" + text + "' is not a non-negative integer");
    return v;
  };
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = number("offset", kv.value());
    else if (kv.key() == "length") length = number("length", kv.value());
  }
  FRICTION_CHECK(!location.empty(), context + ": external data has no location");
  FRICTION_CHECK(location.find("..") == std::string::npos && location[0] != '/',
                 context + ": external data location '" + location + "' must stay inside the model folder");
  std::string path = (std::filesystem::path(baseDir) / location).string();
  std::ifstream f(path, std::ios::binary);
  FRICTION_CHECK(f.good(), context + ": cannot open external data file '" + path + "'");
  if (length < 0) length = int64_t(want);
  FRICTION_CHECK(size_t(length) == want, context + ": external data length " + std::to_string(length) +
                                             " does not match shape (" + std::to_string(want) + " bytes)");
  std::string bytes(size_t(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
  FRICTION_CHECK(f.gcount() == length, context + ": external data file '" + path + "' is too short");
  return bytes;
}

}  // namespace

Tensor tensorFromProto(TensorProto& proto, const std::string& baseDir, const std::string& context) {
  FRICTION_CHECK(!proto.has_segment(), context + ": segmented tensors are not supported");
  DType dtype = dtypeFromOnnxCode(proto.data_type(), context);
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims)
    FRICTION_CHECK(d >= 0, context + ": negative dimension " + std::to_string(d));
  int64_t numel;
  try {
    numel = checkedNumel(dims);
  } catch (const Error& e) {
    throw Error(context + ": " + e.what());
  }
  size_t bytes = size_t(numel) * dtypeSize(dtype);

  if (proto.data_location() == TensorProto::EXTERNAL)
    return Tensor::adoptString(dtype, dims, readExternal(proto, baseDir, bytes, context));
  if (proto.has_raw_data()) {
    FRICTION_CHECK(proto.raw_data().size() == bytes,
                   context + ": raw_data has " + std::to_string(proto.raw_data().size()) +
                       " bytes, shape " + Shape::fromStatic(dims).str() + " of " +
                       std::string(dtypeName(dtype)) + " needs " + std::to_string(bytes));
    return Tensor::adoptString(dtype, dims, std::move(*proto.mutable_raw_data()));
  }
  // Check the value count before allocating, so a corrupt dims field cannot request huge memory.
  int64_t count = 0;
  switch (dtype) {
    case DType::F32: count = proto.float_data_size(); break;
    case DType::F64: count = proto.double_data_size(); break;
    case DType::I64: count = proto.int64_data_size(); break;
    case DType::U32:
    case DType::U64: count = proto.uint64_data_size(); break;
    default: count = proto.int32_data_size(); break;
  }
  FRICTION_CHECK(count == numel, context + ": has " + std::to_string(count) + " values, shape " +
                                     Shape::fromStatic(dims).str() + " needs " + std::to_string(numel));
  Tensor t(dtype, dims);
  if (numel == 0) return t;
  switch (dtype) {
    case DType::F32: fillFrom<float>(t, proto.float_data()); break;
    case DType::F64: fillFrom<double>(t, proto.double_data()); break;
    case DType::I64: fillFrom<int64_t>(t, proto.int64_data()); break;
    case DType::U32: fillFrom<uint32_t>(t, proto.uint64_data()); break;
    case DType::U64: fillFrom<uint64_t>(t, proto.uint64_data()); break;
    case DType::I32: fillFrom<int32_t>(t, proto.int32_data()); break;
    case DType::I16: fillFrom<int16_t>(t, proto.int32_data()); break;
    case DType::I8: fillFrom<int8_t>(t, proto.int32_data()); break;
    case DType::U16: fillFrom<uint16_t>(t, proto.int32_data()); break;
    case DType::U8: fillFrom<uint8_t>(t, proto.int32_data()); break;
    case DType::Bool: fillFrom<bool>(t, proto.int32_data()); break;
    case DType::F16:  // int32_data holds the raw 16-bit patterns
    case DType::BF16: fillFrom<uint16_t>(t, proto.int32_data()); break;
  }
  return t;
}

TensorProto tensorToProto(const Tensor& t, const std::string& name) {
  TensorProto p;
  p.set_name(name);
  p.set_data_type(dtypeToOnnxCode(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(std::string(static_cast<const char*>(t.rawData()), t.byteSize()));
  return p;
}

Tensor readTensorFile(const std::string& path, std::string* name) {
  int fd = ::open(path.c_str(), O_RDONLY);
  FRICTION_CHECK(fd >= 0, "cannot open tensor file '" + path + "'");
  TensorProto proto;
  bool ok;
  {
    google::protobuf::io::FileInputStream in(fd);
    ok = proto.ParseFromZeroCopyStream(&in);
  }
  ::close(fd);
  FRICTION_CHECK(ok, "'" + path + "' is not a valid serialized TensorProto");
  if (name) *name = proto.name();
  return tensorFromProto(proto, std::filesystem::path(path).parent_path().string(), path);
}

void writeTensorFile(const std::string& path, const Tensor& t, const std::string& name) {
  std::ofstream f(path, std::ios::binary);
  FRICTION_CHECK(f.good(), "cannot write '" + path + "'");
  FRICTION_CHECK(tensorToProto(t, name).SerializeToOstream(&f), "failed writing '" + path + "'");
}

}  // namespace friction::onnxio
