#include "ir/Spec.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "ir/Error.h"

namespace friction {

Spec Spec::parse(const std::string& text, const std::string& what) {
  const std::string where = what + " '" + text + "'";
  size_t q = text.find('?');
  Spec s(text.substr(0, q));
  FRICTION_CHECK(!s.name_.empty(), where + ": empty name");
  if (q == std::string::npos) return s;
  for (size_t pos = q + 1; pos <= text.size();) {
    size_t amp = std::min(text.find('&', pos), text.size());
    std::string kv = text.substr(pos, amp - pos);
    pos = amp + 1;
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    FRICTION_CHECK(eq != std::string::npos && eq > 0, where + ": expected key=value, got '" + kv + "'");
    std::string key = kv.substr(0, eq);
    FRICTION_CHECK(!s.has(key), where + ": option '" + key + "' is given twice");
    s.options_.emplace_back(key, kv.substr(eq + 1));
  }
  return s;
}

std::string Spec::print() const {
  std::string r = name_;
  char separator = '?';
  for (const auto& [k, v] : options_) {
    r += separator + k + "=" + v;
    separator = '&';
  }
  return r;
}

std::map<std::string, std::string> Spec::optionMap() const { return {options_.begin(), options_.end()}; }

size_t Spec::indexOf(const std::string& key) const {
  return size_t(std::find_if(options_.begin(), options_.end(), [&](const Option& o) { return o.first == key; }) -
                options_.begin());
}

bool Spec::has(const std::string& key) const { return indexOf(key) < options_.size(); }

std::optional<std::string> Spec::get(const std::string& key) const {
  size_t i = indexOf(key);
  return i < options_.size() ? std::optional(options_[i].second) : std::nullopt;
}

void Spec::set(const std::string& key, const std::string& value) {
  FRICTION_CHECK(!key.empty() && key.find_first_of("=&") == std::string::npos && value.find('&') == std::string::npos,
                 "spec '" + name_ + "': cannot set option '" + key + "=" + value +
                     "' (a key cannot be empty or hold '=' or '&', a value cannot hold '&')");
  if (size_t i = indexOf(key); i < options_.size()) options_[i].second = value;
  else options_.emplace_back(key, value);
}

bool Spec::erase(const std::string& key) {
  size_t i = indexOf(key);
  if (i == options_.size()) return false;
  options_.erase(options_.begin() + std::ptrdiff_t(i));
  return true;
}

std::optional<int64_t> Spec::integer(const std::string& value, int64_t lo, int64_t hi) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE || n < lo || n > hi) return std::nullopt;
  return int64_t(n);
}

}  // namespace friction
