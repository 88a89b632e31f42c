#include "ir/Structural.h"

#include <cstdio>
#include <unordered_map>

#include "ir/TextFormat.h"

namespace friction {
namespace {

void appendGraph(std::string& out, const Graph& g, const StructureOptions& o, const std::string& indent);

void appendAttribute(std::string& out, const Attribute& a, const StructureOptions& o, const std::string& indent) {
  if (const auto* body = std::get_if<std::shared_ptr<Graph>>(&a)) {
    out += "{\n";
    appendGraph(out, **body, o, indent + "  ");
    out += indent + "}";
  } else if (const auto* t = std::get_if<Tensor>(&a); t && o.hashTensors) {
    out += t->type().str() + "#" +
           hex64(fnv1a64(std::string_view(static_cast<const char*>(t->rawData()), t->byteSize())));
  } else {
    out += printAttribute(a);
  }
}

// " name = value" for every attribute but provenance (names, not structure).
void appendAttributes(std::string& out, const Node& n, const StructureOptions& o, const std::string& indent) {
  for (const auto& [name, a] : n.attrs()) {
    if (name == "provenance") continue;
    out += " " + name + " = ";
    appendAttribute(out, a, o, indent);
  }
}

void appendGraph(std::string& out, const Graph& g, const StructureOptions& o, const std::string& indent) {
  std::unordered_map<const Value*, size_t> id;
  auto ref = [&](const Value* v) { return v ? "%" + std::to_string(id.at(v)) : std::string("_"); };
  auto define = [&](const Value* v) {
    size_t k = id.size();
    id[v] = k;
    return "%" + std::to_string(k) + " : " + structuralType(v, o);
  };
  for (const Value* v : g.inputs()) out += indent + "input " + define(v) + "\n";
  for (const Value* v : g.initializers()) {
    out += indent + "const " + define(v) + " = ";
    appendAttribute(out, v->constant(), o, indent);
    out += "\n";
  }
  for (const auto& n : g.nodes()) {
    out += indent;
    for (size_t i = 0; i < n->numOutputs(); ++i) out += (i ? ", " : "") + define(n->output(i));
    out += " = " + n->op() + "(";
    for (size_t i = 0; i < n->numInputs(); ++i) out += (i ? ", " : "") + ref(n->input(i));
    out += ")";
    appendAttributes(out, *n, o, indent);
    out += "\n";
  }
  for (const Value* v : g.outputs()) out += indent + "output " + ref(v) + "\n";
}

}  // namespace

std::string structuralText(const Graph& g, const StructureOptions& options) {
  std::string out;
  appendGraph(out, g, options, "");
  return out;
}

std::string nodeStructure(const Node& n, const StructureOptions& options) {
  std::string out = n.op() + "(";
  for (size_t i = 0; i < n.numInputs(); ++i) {
    out += (i ? ", " : "") + (n.input(i) ? structuralType(n.input(i), options) : std::string("_"));
    for (size_t j = 0; j < i; ++j)
      if (n.input(i) && n.input(j) == n.input(i)) {
        out += "=#" + std::to_string(j);
        break;
      }
  }
  out += ") -> (";
  for (size_t i = 0; i < n.numOutputs(); ++i) out += (i ? ", " : "") + structuralType(n.output(i), options);
  out += ")";
  appendAttributes(out, n, options, "");
  return out;
}

std::string structuralType(const Value* v, const StructureOptions& options) {
  std::string s = v->type().str();
  if (options.knownContents && v->knownContents()) {
    s += "{";
    for (const Dim& d : *v->knownContents()) s += d.str() + ",";
    s += "}";
  }
  return s;
}

std::string structuralAttribute(const Attribute& a, const StructureOptions& options) {
  std::string out;
  appendAttribute(out, a, options, "");
  return out;
}

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex64(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace friction
