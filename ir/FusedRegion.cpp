#include "ir/FusedRegion.h"

#include <algorithm>

#include "ir/Error.h"

namespace friction {
namespace {

constexpr std::pair<RegionKind, std::string_view> kKinds[] = {
    {RegionKind::Generic, ""},           {RegionKind::Epilogue, "epilogue"}, {RegionKind::Elementwise, "elementwise"},
    {RegionKind::Reduction, "reduction"}, {RegionKind::Pattern, "pattern"},   {RegionKind::Nhwc, "nhwc"},
};

const std::vector<int64_t> kToNchw = {0, 3, 1, 2}, kToNhwc = {0, 2, 3, 1};

bool isTransposeOf(const Node* n, const Value* x, const std::vector<int64_t>& perm) {
  return n && n->op() == "Transpose" && n->input(0) == x && n->attrInts("perm") == perm;
}

}  // namespace

std::string_view regionKindName(RegionKind kind) {
  for (const auto& [k, name] : kKinds)
    if (k == kind) return name;
  return "";
}

RegionKind parseRegionKind(std::string_view name) {
  std::string known;
  for (const auto& [k, n] : kKinds) {
    if (n == name) return k;
    if (!n.empty()) known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw Error("unknown region kind '" + std::string(name) + "' (kinds: " + known + ")");
}

std::optional<FusedRegion> FusedRegion::of(const Node& n) {
  if (n.op() != "Fused") return std::nullopt;
  const Attribute* body = n.findAttr("body");
  const auto* graph = body ? std::get_if<std::shared_ptr<Graph>>(body) : nullptr;
  FRICTION_CHECK(graph && *graph, n.describe() + ": a Fused node without a body graph");
  return FusedRegion(n, parseRegionKind(n.attrString("kind", "")), **graph);
}

std::string FusedRegion::label() const {
  std::string_view kind = regionKindName(kind_);
  return kind.empty() ? "region" : "region " + std::string(kind);
}

const Value* FusedRegion::operandFor(const Value* v) const {
  const auto& ins = body_->inputs();
  auto it = std::find(ins.begin(), ins.end(), v);
  return it == ins.end() ? nullptr : node_->input(size_t(it - ins.begin()));
}

std::vector<const Value*> FusedRegion::outerInputs(const Node& inner) const {
  std::vector<const Value*> out;
  for (const Value* v : inner.inputs()) {
    const Value* operand = operandFor(v);
    out.push_back(operand ? operand : v);
  }
  return out;
}

const Node* FusedRegion::nhwcOp() const {
  if (kind_ != RegionKind::Nhwc) return nullptr;
  const Graph& b = *body_;
  if (b.nodes().size() != 3 || b.outputs().size() != 1 || b.inputs().empty()) return nullptr;
  const Node *toNchw = b.nodes()[0].get(), *op = b.nodes()[1].get(), *toNhwc = b.nodes()[2].get();
  if (!isTransposeOf(toNchw, b.inputs()[0], kToNchw) || op->numOutputs() != 1 || op->input(0) != toNchw->output(0) ||
      !isTransposeOf(toNhwc, op->output(0), kToNhwc) || b.outputs()[0] != toNhwc->output(0))
    return nullptr;
  for (size_t i = 1; i < op->numInputs(); ++i)
    if (op->input(i) && op->input(i)->producer()) return nullptr;
  return op;
}

std::map<std::string, Attribute> fusedAttrs(std::shared_ptr<Graph> body, RegionKind kind,
                                            std::vector<std::string> provenance) {
  std::map<std::string, Attribute> attrs = {{"body", std::move(body)}, {"provenance", std::move(provenance)}};
  if (kind != RegionKind::Generic) attrs["kind"] = std::string(regionKindName(kind));
  return attrs;
}

}  // namespace friction
