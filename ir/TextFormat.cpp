#include "ir/TextFormat.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "ir/Error.h"
#include "ir/Verifier.h"

namespace friction {
namespace {

// ---- printing ----

bool isBareName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == ':' || c == '/'))
      return false;
  return true;
}

std::string quote(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += char(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      r += buf;
    } else {
      r += char(c);
    }
  }
  return r + "\"";
}

std::string valueRef(const Value* v) {
  if (!v) return "_";
  return "%" + (isBareName(v->name()) ? v->name() : quote(v->name()));
}

std::string formatFloat(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, f);  // shortest exact round-trip form
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string formatType(const TensorType& t) {
  std::string s(dtypeName(t.dtype));
  if (!t.shape.hasRank()) return s + "[*]";
  s += "[";
  for (size_t i = 0; i < t.shape.rank(); ++i) {
    if (i) s += ",";
    const Dim& d = t.shape[i];
    s += d.isStatic() || d.isUnknown() || isBareName(d.symbol) ? d.str() : quote(d.symbol);
  }
  return s + "]";
}

std::string hexBytes(const Tensor& t) {
  static const char* digits = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(t.rawData());
  std::string s;
  s.reserve(t.byteSize() * 2 + 5);
  s += "hex\"";
  for (size_t i = 0; i < t.byteSize(); ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s + "\"";
}

void printGraphBody(std::ostringstream& os, const Graph& g, const PrintOptions& opt, const std::string& indent);

template <typename T, typename F>
std::string formatList(const std::vector<T>& v, const char* emptyName, F fmt) {
  if (v.empty()) return std::string(emptyName) + "[]";
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt(v[i]);
  return s + "]";
}

std::string formatAttr(const Attribute& a, const PrintOptions& opt, const std::string& indent) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, float>) return formatFloat(v);
        else if constexpr (std::is_same_v<T, std::string>) return quote(v);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return formatList(v, "ints", [](int64_t x) { return std::to_string(x); });
        else if constexpr (std::is_same_v<T, std::vector<float>>) return formatList(v, "floats", formatFloat);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) return formatList(v, "strings", quote);
        else if constexpr (std::is_same_v<T, Tensor>) return "tensor<" + formatType(v.type()) + "> " + hexBytes(v);
        else {
          std::ostringstream os;
          printGraphBody(os, *v, opt, indent);
          return os.str();
        }
      },
      a);
}

void printGraphBody(std::ostringstream& os, const Graph& g, const PrintOptions& opt, const std::string& indent) {
  std::string in = indent + "  ";
  os << "graph " << quote(g.name()) << " opset " << g.opset() << " {\n";
  for (const Value* v : g.inputs()) os << in << "input " << valueRef(v) << " : " << formatType(v->type()) << "\n";
  for (const Value* v : g.initializers()) {
    os << in << "const " << valueRef(v) << " : " << formatType(v->type()) << " = ";
    if (opt.maxConstantBytes >= 0 && int64_t(v->constant().byteSize()) > opt.maxConstantBytes)
      os << "<" << v->constant().byteSize() << " bytes>\n";
    else
      os << hexBytes(v->constant()) << "\n";
  }
  for (const auto& n : g.nodes()) {
    os << in;
    for (size_t i = 0; i < n->numOutputs(); ++i)
      os << (i ? ", " : "") << valueRef(n->output(i)) << " : " << formatType(n->output(i)->type());
    os << " = " << n->op() << "(";
    for (size_t i = 0; i < n->numInputs(); ++i) os << (i ? ", " : "") << valueRef(n->input(i));
    os << ")";
    if (!n->attrs().empty()) {
      os << " {";
      bool first = true;
      for (const auto& [name, a] : n->attrs()) {
        os << (first ? "" : ", ") << name << " = " << formatAttr(a, opt, in);
        first = false;
      }
      os << "}";
    }
    os << " @" << quote(n->name()) << "\n";
  }
  for (const Value* v : g.outputs()) os << in << "output " << valueRef(v) << "\n";
  for (const auto& [name, a] : g.metadata()) os << in << "meta " << quote(name) << " = " << formatAttr(a, opt, in) << "\n";
  os << indent << "}";
}

// ---- parsing ----

class Parser {
 public:
  Parser(const std::string& text, std::string source) : s_(text), source_(std::move(source)) {}

  std::unique_ptr<Graph> parseGraphBlock() {
    expectWord("graph");
    auto g = std::make_unique<Graph>(parseString());
    expectWord("opset");
    g->setOpset(parseInt());
    expect('{');
    // Outputs are declared before their nodes are fully read; resolve references lazily by name.
    while (!tryConsume('}')) parseStatement(*g);
    return g;
  }

  void expectEnd() {
    skipSpace();
    if (pos_ != s_.size()) fail("unexpected text after the graph");
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') line++, col = 1;
      else col++;
    }
    throw Error(source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
  }

  void skipSpace() {
    while (pos_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[pos_]))) pos_++;
      else if (s_[pos_] == '#') while (pos_ < s_.size() && s_[pos_] != '\n') pos_++;
      else break;
    }
  }
  char peek() {
    skipSpace();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool tryConsume(char c) {
    if (peek() != c) return false;
    pos_++;
    return true;
  }
  void expect(char c) {
    if (!tryConsume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string word() {
    skipSpace();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) pos_++;
    return s_.substr(b, pos_ - b);
  }
  void expectWord(const std::string& w) {
    size_t at = pos_;
    if (word() != w) {
      pos_ = at;
      fail("expected '" + w + "'");
    }
  }
  bool tryWord(const std::string& w) {
    size_t at = pos_;
    if (word() == w) return true;
    pos_ = at;
    return false;
  }

  std::string parseString() {
    if (peek() != '"') fail("expected a string");
    pos_++;
    std::string r;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        char e = s_[pos_++];
        if (e == 'x') {
          int value = 0;
          auto hex = [&](size_t at) {
            char c = at < s_.size() ? s_[at] : '\0';
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            fail("bad \\x escape in string");
          };
          value = hex(pos_) * 16 + hex(pos_ + 1);
          r += char(value);
          pos_ += 2;
        } else {
          r += e;
        }
      } else {
        r += c;
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    pos_++;
    return r;
  }

  std::string parseName() {
    if (peek() == '"') return parseString();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || std::string("_.-:/").find(s_[pos_]) != std::string::npos))
      pos_++;
    if (b == pos_) fail("expected a name");
    return s_.substr(b, pos_ - b);
  }

  // Numbers are read as text first so ints and floats stay distinct.
  std::string numberText() {
    skipSpace();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.'))
      pos_++;
    if (b == pos_) fail("expected a number");
    return s_.substr(b, pos_ - b);
  }
  static bool looksFloat(const std::string& t) {
    return t.find_first_of(".eE") != std::string::npos || t == "inf" || t == "-inf" || t == "nan";
  }
  int64_t toInt(const std::string& t) {
    int64_t v = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) fail("bad integer '" + t + "'");
    return v;
  }
  float toFloat(const std::string& t) {
    if (t == "inf") return INFINITY;
    if (t == "-inf") return -INFINITY;
    if (t == "nan") return NAN;
    float v = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) fail("bad float '" + t + "'");
    return v;
  }
  int64_t parseInt() { return toInt(numberText()); }

  TensorType parseType() {
    std::string dt = word();
    TensorType t;
    try {
      t.dtype = dtypeFromName(dt);
    } catch (const Error& e) {
      fail(e.what());
    }
    expect('[');
    if (tryConsume('*')) {
      expect(']');
      t.shape = Shape::unknownRank();
      return t;
    }
    std::vector<Dim> dims;
    while (!tryConsume(']')) {
      if (!dims.empty()) expect(',');
      char c = peek();
      if (c == '?') {
        pos_++;
        dims.push_back(Dim::unknown());
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        dims.emplace_back(parseInt());
      } else {
        dims.push_back(Dim::sym(c == '"' ? parseString() : word()));
      }
    }
    t.shape = Shape(std::move(dims));
    return t;
  }

  Tensor parseHexData(const TensorType& type) {
    expectWord("hex");
    if (!type.shape.isStatic()) fail("constant data needs a static shape");
    std::string hex = parseString();
    // Check the size before allocating, so a corrupt shape cannot request huge memory.
    int64_t numel = 0;
    try {
      numel = checkedNumel(type.shape.staticDims());
    } catch (const Error& e) {
      fail(e.what());
    }
    size_t bytes = size_t(numel) * dtypeSize(type.dtype);
    if (hex.size() != bytes * 2)
      fail("constant data has " + std::to_string(hex.size() / 2) + " bytes, type " + formatType(type) + " needs " +
           std::to_string(bytes));
    Tensor t(type.dtype, type.shape.staticDims());
    auto* p = static_cast<unsigned char*>(t.rawData());
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      fail("bad hex digit");
    };
    for (size_t i = 0; i < t.byteSize(); ++i) p[i] = uint8_t(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
    return t;
  }

  Value* lookup(Graph& g, const std::string& name) {
    Value* v = g.findValue(name);
    if (!v) fail("value '%" + name + "' is not defined");
    return v;
  }

  Value* parseValueRef(Graph& g) {
    if (tryConsume('_')) return nullptr;
    expect('%');
    return lookup(g, parseName());
  }

  Attribute parseAttrValue() {
    char c = peek();
    if (c == '"') return parseString();
    if (c == '[') {
      pos_++;
      if (tryConsume(']')) fail("empty lists are written ints[], floats[] or strings[]");
      if (peek() == '"') {
        std::vector<std::string> v;
        do v.push_back(parseString());
        while (tryConsume(','));
        expect(']');
        return v;
      }
      std::vector<std::string> texts;
      do texts.push_back(numberText());
      while (tryConsume(','));
      expect(']');
      bool anyFloat = false;
      for (const auto& t : texts) anyFloat |= looksFloat(t);
      if (anyFloat) {
        std::vector<float> v;
        for (const auto& t : texts) v.push_back(toFloat(t));
        return v;
      }
      std::vector<int64_t> v;
      for (const auto& t : texts) v.push_back(toInt(t));
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t at = pos_;
      std::string w = word();
      if (w == "ints" || w == "floats" || w == "strings") {
        expect('[');
        expect(']');
        if (w == "ints") return std::vector<int64_t>{};
        if (w == "floats") return std::vector<float>{};
        return std::vector<std::string>{};
      }
      if (w == "tensor") {
        expect('<');
        TensorType t = parseType();
        expect('>');
        return parseHexData(t);
      }
      if (w == "graph") {
        pos_ = at;
        return std::shared_ptr<Graph>(parseGraphBlock());
      }
      pos_ = at;  // inf / nan
    }
    std::string t = numberText();
    if (looksFloat(t)) return toFloat(t);
    return toInt(t);
  }

  void parseStatement(Graph& g) {
    size_t at = pos_;
    std::string w = word();
    if (w == "input" || w == "const") {
      expect('%');
      std::string name = parseName();
      expect(':');
      TensorType type = parseType();
      if (g.findValue(name)) fail("value '%" + name + "' is defined twice");
      if (w == "input") {
        // Declared extents are what a run allocates: refused beyond the ONNX importer's limit too. (Inferred
        // results of an imported graph may exceed it, and print and parse back.)
        if (type.shape.hasRank())
          for (size_t d = 0; d < type.shape.rank(); ++d)
            if (type.shape[d].isStatic() && type.shape[d].value > kMaxDimExtent)
              pos_ = at, fail("input '%" + name + "': dimension " + std::to_string(type.shape[d].value) + " is too large");
        g.addInput(name, type);
      } else {
        expect('=');
        if (peek() == '<') fail("constant '%" + name + "' was printed without its data");
        g.addInitializer(name, parseHexData(type));
      }
      return;
    }
    if (w == "output") {
      expect('%');
      g.addOutput(lookup(g, parseName()));
      return;
    }
    if (w == "meta") {
      std::string name = parseString();
      expect('=');
      g.metadata()[name] = parseAttrValue();
      return;
    }
    pos_ = at;
    std::vector<std::pair<std::string, TensorType>> outs;
    do {
      expect('%');
      std::string name = parseName();
      expect(':');
      outs.emplace_back(name, parseType());
      if (g.findValue(name)) fail("value '%" + name + "' is defined twice");
    } while (tryConsume(','));
    expect('=');
    std::string op = word();
    if (op.empty()) fail("expected an op name");
    expect('(');
    std::vector<Value*> ins;
    while (!tryConsume(')')) {
      if (!ins.empty()) expect(',');
      ins.push_back(parseValueRef(g));
    }
    std::map<std::string, Attribute> attrs;
    if (tryConsume('{')) {
      while (!tryConsume('}')) {
        if (!attrs.empty()) expect(',');
        std::string an = word();
        if (an.empty()) fail("expected an attribute name");
        expect('=');
        attrs[an] = parseAttrValue();
      }
    }
    expect('@');
    std::string nodeName = parseString();
    std::vector<std::string> names;
    for (auto& o : outs) names.push_back(o.first);
    Node* n = g.addNode(op, std::move(ins), names, std::move(attrs), nodeName);
    for (size_t i = 0; i < outs.size(); ++i) n->output(i)->setType(outs[i].second);
  }

  const std::string& s_;
  std::string source_;
  size_t pos_ = 0;
};

}  // namespace

std::string printGraph(const Graph& graph, const PrintOptions& options) {
  std::ostringstream os;
  printGraphBody(os, graph, options, "");
  os << "\n";
  return os.str();
}

std::string printAttribute(const Attribute& a) { return formatAttr(a, PrintOptions{}, ""); }

std::unique_ptr<Graph> parseGraph(const std::string& text, const std::string& source) {
  Parser p(text, source);
  auto g = p.parseGraphBlock();
  p.expectEnd();
  try {
    verify(*g);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return g;
}

}  // namespace friction
