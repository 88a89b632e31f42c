// A spec names something and sets some of its options: `NAME` or
// `NAME?key=value&key2=value2`. Backends (`ort?level=all&threads=2`,
// `cpu?profile=on`) and zoo models (`zoo:resnet?depth=4&width=32`) are
// written so. Options keep the order they were written or set in: spec
// strings are stored in results databases (executor and model names), so a
// parsed spec prints back as the same string.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace friction {

class Spec {
 public:
  using Option = std::pair<std::string, std::string>;

  explicit Spec(std::string name) : name_(std::move(name)) {}

  // Throws Error, naming `what` and the text (e.g. "backend 'ort?x': expected
  // key=value, got 'x'"), for an empty name, an option without '=' or with an
  // empty key, and a key given twice. Empty options (`a=1&&b=2`, a trailing
  // `&` or `?`) are skipped. A value may hold '=' and '?'; the name ends at the
  // first '?'.
  static Spec parse(const std::string& text, const std::string& what = "spec");
  // An option value as a whole decimal integer in [lo, hi], or nullopt (the
  // caller names the option in its message).
  static std::optional<int64_t> integer(const std::string& value, int64_t lo, int64_t hi);
  // "a|b|c": the values an option may take, for messages.
  template <typename Range>
  static std::string alternatives(const Range& values) {
    std::string all;
    for (const auto& v : values) all += (all.empty() ? "" : "|") + std::string(v);
    return all;
  }
  // NAME, or NAME?k=v&.. in option order: print(parse(s)) == s for every s
  // without empty options.
  std::string print() const;

  const std::string& name() const { return name_; }
  const std::vector<Option>& options() const { return options_; }
  // The options by key, for consumers that look them up by name.
  std::map<std::string, std::string> optionMap() const;

  bool has(const std::string& key) const;
  std::optional<std::string> get(const std::string& key) const;
  // Replaces the value where the key stands, or appends the option. Throws
  // Error for what could not be parsed back: an empty key, a key holding '='
  // or '&', a value holding '&'.
  void set(const std::string& key, const std::string& value);
  // False when there was no such option.
  bool erase(const std::string& key);

 private:
  size_t indexOf(const std::string& key) const;  // options().size() when absent
  std::string name_;
  std::vector<Option> options_;
};

}  // namespace friction
