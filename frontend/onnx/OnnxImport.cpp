#include "frontend/onnx/OnnxImport.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "frontend/onnx/OpsetAdapters.h"
#include "frontend/onnx/TensorProto.h"
#include "ir/Error.h"
#include "ir/OpRegistry.h"

namespace friction::onnxio {
namespace {

TensorType typeFromValueInfo(const onnx::ValueInfoProto& vi, const std::string& where) {
  std::string ctx = where + " '" + vi.name() + "'";
  FRICTION_CHECK(vi.type().has_tensor_type(), ctx + ": only tensor types are supported");
  const auto& tt = vi.type().tensor_type();
  TensorType type;
  type.dtype = dtypeFromOnnxCode(tt.elem_type(), ctx);
  if (!tt.has_shape()) {
    type.shape = Shape::unknownRank();
    return type;
  }
  std::vector<Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      FRICTION_CHECK(d.dim_value() >= 0, ctx + ": negative dimension " + std::to_string(d.dim_value()));
      FRICTION_CHECK(d.dim_value() <= kMaxDimExtent, ctx + ": dimension " + std::to_string(d.dim_value()) + " is too large");
      dims.emplace_back(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      dims.push_back(Dim::sym(d.dim_param()));
    } else {
      dims.push_back(Dim::unknown());
    }
  }
  type.shape = Shape(std::move(dims));
  if (type.shape.isStatic()) {
    try {
      checkedNumel(type.shape.staticDims());
    } catch (const Error& e) {
      throw Error(ctx + ": " + e.what());
    }
  }
  return type;
}

Attribute convertAttribute(onnx::AttributeProto& a, const std::string& baseDir, const std::string& ctx) {
  using A = onnx::AttributeProto;
  std::string where = ctx + ": attribute '" + a.name() + "'";
  switch (a.type()) {
    case A::INT: return int64_t(a.i());
    case A::FLOAT: return a.f();
    case A::STRING: return a.s();
    case A::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::FLOATS: return std::vector<float>(a.floats().begin(), a.floats().end());
    case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TENSOR: return tensorFromProto(*a.mutable_t(), baseDir, where);
    case A::UNDEFINED: {
      // Old exporters omit `type`; infer it from the populated field.
      if (a.has_i()) return int64_t(a.i());
      if (a.has_f()) return a.f();
      if (a.has_s()) return a.s();
      if (a.ints_size()) return std::vector<int64_t>(a.ints().begin(), a.ints().end());
      if (a.floats_size()) return std::vector<float>(a.floats().begin(), a.floats().end());
      if (a.has_t()) return tensorFromProto(*a.mutable_t(), baseDir, where);
      throw Error(where + " has no type");
    }
    default: throw Error(where + " has an unsupported kind (graphs, sparse tensors and type protos are not supported)");
  }
}

std::string nodeLabel(const onnx::NodeProto& n, int index) {
  return n.op_type() + " '" + (n.name().empty() ? "#" + std::to_string(index) : n.name()) + "'";
}

// Reconciles an inferred output type with the one the model declares.
void checkDeclaredOutput(Value& v, const TensorType& declared) {
  const TensorType& inferred = v.type();
  FRICTION_CHECK(inferred.dtype == declared.dtype,
                 "graph output '" + v.name() + "' is declared " + std::string(dtypeName(declared.dtype)) +
                     " but computes " + std::string(dtypeName(inferred.dtype)));
  if (!inferred.shape.hasRank()) {
    v.setType(declared);
    return;
  }
  if (!declared.shape.hasRank()) return;
  FRICTION_CHECK(inferred.shape.rank() == declared.shape.rank(),
                 "graph output '" + v.name() + "' is declared " + declared.shape.str() + " but computes " +
                     inferred.shape.str());
  Shape merged = inferred.shape;
  for (size_t i = 0; i < merged.rank(); ++i) {
    const Dim &a = inferred.shape[i], &b = declared.shape[i];
    if (a.isStatic() && b.isStatic())
      FRICTION_CHECK(a.value == b.value, "graph output '" + v.name() + "' is declared " + declared.shape.str() +
                                             " but computes " + inferred.shape.str());
    else if (a.isUnknown())
      merged[i] = b;  // the declaration knows more
  }
  v.setType({inferred.dtype, merged});
}

}  // namespace

std::unique_ptr<Graph> importOnnxModel(onnx::ModelProto& model, const std::string& baseDir, const std::string& name) {
  FRICTION_CHECK(model.has_graph(), name + ": not an ONNX model (no graph)");
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  FRICTION_CHECK(opset >= 0, name + ": model imports no default-domain opset");
  FRICTION_CHECK(opset >= kMinOpset && opset <= kMaxOpset,
                 name + ": opset " + std::to_string(opset) + " is not supported (supported: " +
                     std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset) + ")");

  onnx::GraphProto& gp = *model.mutable_graph();
  auto graph = std::make_unique<Graph>(gp.name().empty() ? "main" : gp.name());
  graph->setOpset(17);
  const std::string where = name + ": ";

  try {
    for (auto& init : *gp.mutable_initializer()) {
      FRICTION_CHECK(!init.name().empty(), "an initializer has no name");
      FRICTION_CHECK(!graph->findValue(init.name()), "initializer '" + init.name() + "' is defined twice");
      graph->addInitializer(init.name(), tensorFromProto(init, baseDir, "initializer '" + init.name() + "'"));
    }
    for (const auto& in : gp.input()) {
      if (Value* v = graph->findValue(in.name())) {
        // IR < 4 lists initializers among inputs: they stay constants.
        FRICTION_CHECK(v->isConstant(), "graph input '" + in.name() + "' is defined twice");
        continue;
      }
      FRICTION_CHECK(!in.name().empty(), "a graph input has no name");
      graph->addInput(in.name(), typeFromValueInfo(in, "graph input"));
    }

    // Create every node with its outputs first, so inputs may refer to nodes
    // listed later (sorted below; cycles are reported there).
    std::vector<std::vector<std::string>> inputNames;
    int index = 0;
    for (auto& np : *gp.mutable_node()) {
      std::string label = nodeLabel(np, index);
      FRICTION_CHECK(np.domain().empty() || np.domain() == "ai.onnx",
                     "node " + label + ": op domain '" + np.domain() + "' is not supported");
      FRICTION_CHECK(OpRegistry::instance().find(np.op_type()) != nullptr || isAdaptedOp(np.op_type(), opset),
                     "node " + label + ": unsupported op '" + np.op_type() + "'");
      std::map<std::string, Attribute> attrs;
      for (auto& a : *np.mutable_attribute()) {
        FRICTION_CHECK(!attrs.count(a.name()), "node " + label + ": attribute '" + a.name() + "' given twice");
        attrs[a.name()] = convertAttribute(a, baseDir, "node " + label);
      }
      std::vector<std::string> outs(np.output().begin(), np.output().end());
      for (const auto& o : outs)
        FRICTION_CHECK(o.empty() || !graph->findValue(o), "node " + label + ": output '" + o + "' is defined twice");
      std::string nodeName = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
      graph->addNode(np.op_type(), {}, outs, std::move(attrs), nodeName);
      inputNames.emplace_back(np.input().begin(), np.input().end());
      ++index;
    }
    for (size_t i = 0; i < inputNames.size(); ++i) {
      Node& n = *graph->nodes()[i];
      std::vector<Value*> ins;
      for (const auto& in : inputNames[i]) {
        if (in.empty()) {
          ins.push_back(nullptr);
          continue;
        }
        Value* v = graph->findValue(in);
        FRICTION_CHECK(v != nullptr, "node " + n.describe() + ": input '" + in + "' is not defined by any node, input or initializer");
        ins.push_back(v);
      }
      // Trailing absent inputs carry no meaning; dropping them simplifies arity checks.
      while (!ins.empty() && !ins.back()) ins.pop_back();
      n.setInputs(std::move(ins));
    }
    graph->topologicalSort();

    // Adapt and infer in order: adapters see typed inputs.
    std::vector<Node*> order;
    for (const auto& n : graph->nodes()) order.push_back(n.get());
    for (Node* n : order) {
      adaptToOpset17(*graph, *n, opset);
      inferNode(*n);
    }
    graph->topologicalSort();

    FRICTION_CHECK(gp.output_size() > 0, "the graph has no outputs");
    for (const auto& out : gp.output()) {
      Value* v = graph->findValue(out.name());
      FRICTION_CHECK(v != nullptr, "graph output '" + out.name() + "' is not produced by any node");
      if (out.has_type() && out.type().tensor_type().elem_type() != 0)
        checkDeclaredOutput(*v, typeFromValueInfo(out, "graph output"));
      graph->addOutput(v);
    }
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
  return graph;
}

std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& name) {
  FRICTION_CHECK(size > 0, name + ": file is empty");
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream in(data, int(size));
  google::protobuf::io::CodedInputStream coded(&in);
  coded.SetTotalBytesLimit(INT32_MAX);
  FRICTION_CHECK(model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage(),
                 name + ": not a valid ONNX model (protobuf parse failed)");
  return importOnnxModel(model, ".", name);
}

std::unique_ptr<Graph> importOnnxFile(const std::string& path) {
  struct stat st {};
  FRICTION_CHECK(::stat(path.c_str(), &st) == 0, "cannot open model '" + path + "': " + std::strerror(errno));
  FRICTION_CHECK(S_ISREG(st.st_mode), "cannot open model '" + path + "': not a regular file");
  FRICTION_CHECK(st.st_size > 0, path + ": file is empty");
  int fd = ::open(path.c_str(), O_RDONLY);
  FRICTION_CHECK(fd >= 0, "cannot open model '" + path + "': " + std::strerror(errno));
  onnx::ModelProto model;
  bool ok;
  {
    // Streaming parse: protobuf allocates each initializer's bytes once, and
    // the importer moves them into tensors, so peak memory stays near the file size.
    google::protobuf::io::FileInputStream in(fd);
    google::protobuf::io::CodedInputStream coded(&in);
    coded.SetTotalBytesLimit(INT32_MAX);
    ok = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  ::close(fd);
  FRICTION_CHECK(ok, path + ": not a valid ONNX model (protobuf parse failed)");
  return importOnnxModel(model, std::filesystem::path(path).parent_path().string(), path);
}

}  // namespace friction::onnxio
