#include "ir/DotFormat.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ir/Error.h"
#include "ir/FusedRegion.h"
#include "ir/Shell.h"
#include "ir/Structural.h"

namespace friction {
namespace {

// A DOT string's contents: quotes and backslashes escaped, newlines as DOT's centred line breaks.
std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\n') {
      r += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r;
}

std::string shapeLabel(const Value* v) {
  if (!v->shape().hasRank()) return "?";
  std::string s;
  for (size_t d = 0; d < v->shape().rank(); ++d) s += (d ? "x" : "") + v->shape()[d].str();
  return s.empty() ? "scalar" : s;
}

// Colours of the dedup patterns' instances, one per distinct body.
constexpr const char* kPatternColours[] = {"#e7f0fd", "#fdf1e7", "#eafbe7", "#f6e7fd", "#fdfbe7", "#e7fbfb"};

class DotWriter {
 public:
  std::string write(const Graph& g, const DotOptions& o) {
    out_ << "digraph \"" << escape(g.name()) << "\" {\n"
         << "  graph [fontname=\"Helvetica\", fontsize=11, rankdir=TB, labelloc=t, label=\""
         << escape(o.title.empty() ? g.name() : o.title) << "\"];\n"
         << "  node [fontname=\"Helvetica\", fontsize=10, shape=box, style=\"rounded,filled\", fillcolor=white];\n"
         << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    Scope scope;
    for (const Value* in : g.inputs()) {
      std::string id = fresh();
      out_ << "  " << id << " [shape=ellipse, fillcolor=\"#dddddd\", label=\"" << escape(in->name() + "\n" + shapeLabel(in))
           << "\"];\n";
      scope[in] = id;
    }
    emitNodes(g, scope, "  ");
    for (const Value* v : g.outputs()) {
      std::string id = fresh();
      out_ << "  " << id << " [shape=ellipse, fillcolor=\"#dddddd\", label=\"" << escape(v->name()) << "\"];\n";
      edge(scope, v, id);
    }
    out_ << "}\n";
    return out_.str();
  }

 private:
  // Which DOT node computes each value, per region instance (instances of one pattern share body Values).
  using Scope = std::map<const Value*, std::string>;

  std::string fresh() { return "n" + std::to_string(next_++); }

  void edge(const Scope& scope, const Value* v, const std::string& to) {
    auto it = scope.find(v);
    if (it == scope.end()) return;  // a constant
    out_ << "  " << it->second << " -> " << to << " [label=\"" << escape(shapeLabel(v)) << "\"];\n";
  }

  static int constantOperands(const Node& n, const Scope& scope) {
    int k = 0;
    for (const Value* in : n.inputs()) k += in && !scope.count(in);
    return k;
  }

  void emitNodes(const Graph& g, Scope& scope, const std::string& indent) {
    for (const auto& n : g.nodes()) {
      if (n->op() == "Constant") continue;
      auto region = FusedRegion::of(*n);
      if (region && region->kind() == RegionKind::Nhwc && region->nhwcOp()) {
        // One box: the region's body is the op between its layout transposes, which run inside the kernel.
        emitOp(*n, region->nhwcOp()->op() + " (nhwc)", "#ffe8cc", scope, indent);
      } else if (region) {
        emitRegion(*region, scope, indent);
      } else if (n->op() == "Transpose") {
        std::string perm;
        for (int64_t p : n->attrInts("perm")) perm += (perm.empty() ? "" : ",") + std::to_string(p);
        emitOp(*n, "Transpose [" + perm + "]", "#ffb870", scope, indent);
      } else {
        emitOp(*n, n->op(), "", scope, indent);
      }
    }
  }

  // One box for `n`, with an edge from each operand computed in `scope`; constants are counted in the label.
  void emitOp(const Node& n, std::string label, const std::string& fill, Scope& scope, const std::string& indent) {
    std::string id = fresh();
    if (int constants = constantOperands(n, scope)) label += "\n+" + std::to_string(constants) + " const";
    out_ << indent << id << " [label=\"" << escape(label) << "\", tooltip=\"" << escape(n.name()) << "\""
         << (fill.empty() ? "" : ", fillcolor=\"" + fill + "\"") << "];\n";
    for (const Value* in : n.inputs())
      if (in) edge(scope, in, id);
    for (const Value* out : n.outputs()) scope[out] = id;
  }

  void emitRegion(const FusedRegion& r, Scope& outer, const std::string& indent) {
    const Graph& body = r.body();
    Scope inner;
    for (const Value* in : body.inputs())
      if (const Value* operand = r.operandFor(in); operand && outer.count(operand)) inner[in] = outer.at(operand);
    std::string fill = "#f4f4f4";
    std::string label = r.label();
    if (r.kind() == RegionKind::Pattern) {
      // Instances share one body in memory; a parsed graph has copies, so patterns are told apart by structure.
      std::string key = structuralText(body, {.hashTensors = true});
      auto it = patterns_.emplace(key, int(patterns_.size())).first;
      fill = kPatternColours[size_t(it->second) % std::size(kPatternColours)];
      int instance = ++instances_[key];
      label = "pattern " + std::to_string(it->second + 1) + ", instance " + std::to_string(instance);
    }
    std::vector<std::string> provenance;
    if (auto it = r.node().attrs().find("provenance"); it != r.node().attrs().end())
      if (auto* names = std::get_if<std::vector<std::string>>(&it->second)) provenance = *names;
    std::string from;
    for (size_t i = 0; i < provenance.size() && i < 4; ++i) from += (i ? ", " : "") + provenance[i];
    if (provenance.size() > 4) from += ", ... (" + std::to_string(provenance.size()) + " nodes)";
    out_ << indent << "subgraph cluster_" << next_++ << " {\n"
         << indent << "  style=\"rounded,filled\"; fillcolor=\"" << fill << "\"; color=\"#888888\"; fontsize=9;\n"
         << indent << "  label=\"" << escape(label + (from.empty() ? "" : "\nfrom: " + from)) << "\";\n";
    emitNodes(body, inner, indent + "  ");
    out_ << indent << "}\n";
    // The region's results are computed where its body's outputs are (a body input passed through included).
    for (size_t k = 0; k < body.outputs().size() && k < r.node().outputs().size(); ++k)
      if (auto it = inner.find(body.outputs()[k]); it != inner.end()) outer[r.node().outputs()[k]] = it->second;
  }

  std::ostringstream out_;
  int next_ = 0;
  std::map<std::string, int> patterns_;   // pattern number by body structure
  std::map<std::string, int> instances_;  // instances drawn so far
};

}  // namespace

std::string printDot(const Graph& graph, const DotOptions& options) { return DotWriter().write(graph, options); }

std::string renderSvg(const std::string& dot) {
  static std::atomic<int> calls{0};
  std::filesystem::path base = std::filesystem::temp_directory_path() /
                               ("friction-dot-" + std::to_string(::getpid()) + "-" + std::to_string(calls++));
  std::string in = base.string() + ".dot", out = base.string() + ".svg";
  {
    std::ofstream f(in);
    FRICTION_CHECK(f.good(), "cannot write '" + in + "'");
    f << dot;
  }
  int status = runCommand({"dot", "-Tsvg", in, "-o", out});
  std::stringstream svg;
  svg << std::ifstream(out).rdbuf();
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  FRICTION_CHECK(status == 0, status == 127 ? "drawing needs Graphviz's `dot` (Debian package graphviz; scripts/setup.sh installs it)"
                                            : "Graphviz's dot failed (exit " + std::to_string(status) + ")");
  return svg.str();
}

}  // namespace friction
