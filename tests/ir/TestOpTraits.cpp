// Op traits: what every trait promises holds for the ops that declare it, and
// docs/ir.md's trait table lists exactly the registry's ops.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <regex>

#include "ir/OpRegistry.h"

using namespace friction;

TEST(OpTraits, EveryTraitIsNamedOnce) {
  std::set<std::string> names;
  for (const auto& t : allOpTraits()) EXPECT_TRUE(names.insert(t.name).second) << t.name;
  EXPECT_EQ(names.size(), size_t(OpTrait::Nondeterministic) + 1);
}

TEST(OpTraits, ActivationsAreUnaryElementwiseOps) {
  for (const std::string& op : opsWithTrait(OpTrait::Activation)) {
    const OpSchema* s = OpRegistry::instance().find(op);
    EXPECT_TRUE(s->traits.has(OpTrait::Elementwise)) << op;
    EXPECT_EQ(s->minInputs, 1) << op;  // Clip's bounds are optional scalars
    EXPECT_EQ(s->maxOutputs, 1) << op;
  }
}

TEST(OpTraits, ElementwiseAndViewOpsHaveOneOutput) {
  for (OpTrait t : {OpTrait::Elementwise, OpTrait::View})
    for (const std::string& op : opsWithTrait(t)) EXPECT_EQ(OpRegistry::instance().find(op)->maxOutputs, 1) << op;
}

TEST(OpTraits, CommutativeOpsAreElementwise) {
  for (const std::string& op : opsWithTrait(OpTrait::Commutative))
    EXPECT_TRUE(opHasTrait(op, OpTrait::Elementwise)) << op;
  EXPECT_TRUE(opHasTrait("Add", OpTrait::Commutative));
  EXPECT_FALSE(opHasTrait("Sub", OpTrait::Commutative));
}

TEST(OpTraits, UnknownOpsHaveNoTraits) {
  EXPECT_FALSE(opHasTrait("NoSuchOp", OpTrait::Elementwise));
  EXPECT_FALSE(opHasTrait("Gelu", OpTrait::Activation));  // not an opset-17 op
}

TEST(OpTraits, DocumentedTableMatchesRegistry) {
  std::ifstream f(std::string(FRICTION_SOURCE_DIR) + "/docs/ir.md");
  ASSERT_TRUE(f.good());
  std::map<std::string, std::string> documented;  // trait -> "op, op, ..."
  static const std::regex row(R"(^\| `(\w+)` \| .* \| ([\w, ]*) \|$)");
  for (std::string line; std::getline(f, line);)
    if (std::smatch m; std::regex_match(line, m, row)) documented[m[1]] = m[2];
  for (const auto& t : allOpTraits()) {
    std::string ops;
    for (const std::string& op : opsWithTrait(t.trait)) ops += (ops.empty() ? "" : ", ") + op;
    ASSERT_TRUE(documented.count(t.name)) << "docs/ir.md has no row for trait " << t.name;
    EXPECT_EQ(documented[t.name], ops) << "docs/ir.md's row for " << t.name << " is stale";
  }
}
