// NAME?k=v specs: parsed and printed back unchanged (spec strings are stored in results databases as
// executor and model names), edited without reordering, and malformed ones refused with one clear line.
#include <gtest/gtest.h>

#include "ir/Error.h"
#include "ir/Spec.h"

namespace friction {
namespace {

std::string errorOf(const std::string& text, const std::string& what = "backend") {
  try {
    Spec::parse(text, what);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Spec, PrintsBackWhatWasParsed) {
  for (const char* text : {"interp", "cpu?profile=on", "ort?threads=2&level=all", "ort?level=all&threads=2",
                           "zoo:resnet?depth=4&width=32", "cpu?aot=/tmp/a b/r.so", "x?k=a=b?c", "x?k="}) {
    EXPECT_EQ(Spec::parse(text).print(), text);
  }
}

TEST(Spec, NameAndOptionsInOrder) {
  Spec s = Spec::parse("zoo:resnet?width=32&depth=4");
  EXPECT_EQ(s.name(), "zoo:resnet");
  ASSERT_EQ(s.options().size(), 2u);
  EXPECT_EQ(s.options()[0], Spec::Option("width", "32"));
  EXPECT_EQ(s.options()[1], Spec::Option("depth", "4"));
  EXPECT_EQ(s.get("depth"), "4");
  EXPECT_EQ(s.get("resolution"), std::nullopt);
  EXPECT_TRUE(s.has("width"));
  EXPECT_EQ(s.optionMap(), (std::map<std::string, std::string>{{"depth", "4"}, {"width", "32"}}));
  EXPECT_EQ(Spec::parse("x?k=a=b?c").get("k"), "a=b?c");  // the name ends at the first '?', a value at '&'
}

TEST(Spec, EmptyOptionsAreSkipped) {
  EXPECT_EQ(Spec::parse("resnet?").print(), "resnet");
  EXPECT_EQ(Spec::parse("resnet?depth=2&").print(), "resnet?depth=2");
  EXPECT_EQ(Spec::parse("resnet?&depth=2&&width=8").print(), "resnet?depth=2&width=8");
}

TEST(Spec, SetReplacesInPlaceOrAppends) {
  Spec s = Spec::parse("ort?threads=2&level=all");
  s.set("threads", "4");
  EXPECT_EQ(s.print(), "ort?threads=4&level=all");
  s.set("disable", "A,B");
  EXPECT_EQ(s.print(), "ort?threads=4&level=all&disable=A,B");
  EXPECT_TRUE(s.erase("threads"));
  EXPECT_FALSE(s.erase("threads"));
  EXPECT_EQ(s.print(), "ort?level=all&disable=A,B");
  Spec bare("cpu");
  bare.set("aot", "/tmp/r.so");
  EXPECT_EQ(bare.print(), "cpu?aot=/tmp/r.so");
  EXPECT_TRUE(bare.erase("aot"));
  EXPECT_EQ(bare.print(), "cpu");
}

TEST(Spec, SetRefusesWhatCouldNotBeParsedBack) {
  Spec s("cpu");
  EXPECT_THROW(s.set("", "1"), Error);
  EXPECT_THROW(s.set("a=b", "1"), Error);
  EXPECT_THROW(s.set("a&b", "1"), Error);
  EXPECT_THROW(s.set("a", "1&b=2"), Error);
  EXPECT_EQ(s.print(), "cpu");
}

TEST(Spec, MalformedSpecsGetOneClearLine) {
  EXPECT_EQ(errorOf("ort?level"), "backend 'ort?level': expected key=value, got 'level'");
  EXPECT_EQ(errorOf("ort?=all"), "backend 'ort?=all': expected key=value, got '=all'");
  EXPECT_EQ(errorOf("?threads=2"), "backend '?threads=2': empty name");
  EXPECT_EQ(errorOf("", "zoo spec"), "zoo spec '': empty name");
  EXPECT_EQ(errorOf("ort?threads=2&level=all&threads=4"), "backend 'ort?threads=2&level=all&threads=4': option "
                                                          "'threads' is given twice");
}

}  // namespace
}  // namespace friction
