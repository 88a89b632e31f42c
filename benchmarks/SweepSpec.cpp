#include "benchmarks/SweepSpec.h"

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "ir/Error.h"
#include "ir/Spec.h"
#include "runtime/Backend.h"

namespace friction::bench {
namespace {

template <typename T>
std::vector<T> list(const toml::table& t, const char* key, std::vector<T> def) {
  const toml::array* a = t[key].as_array();
  if (!a) {
    FRICTION_CHECK(!t.contains(key), std::string("sweep spec: '") + key + "' must be an array");
    return def;
  }
  std::vector<T> r;
  for (const auto& e : *a) {
    auto v = e.value<T>();
    FRICTION_CHECK(v.has_value(), std::string("sweep spec: '") + key + "' has an element of the wrong type");
    r.push_back(*v);
  }
  return r;
}

std::vector<SweepExecutor> executorsOf(const toml::table& spec, const std::string& source) {
  FRICTION_CHECK(!spec.contains("backends") && !spec.contains("configs"),
                 source + ": 'executors' replaces 'backends' and 'configs': give one or the other");
  const toml::array* ex = spec["executors"].as_array();
  FRICTION_CHECK(ex && !ex->empty(), source + ": 'executors' must be a non-empty array of {backend, config} tables");
  std::vector<SweepExecutor> executors;
  for (const auto& e : *ex) {
    const toml::table* t = e.as_table();
    FRICTION_CHECK(t, source + ": each of 'executors' must be a table like { backend = \"cpu\", config = \"default\" }");
    for (const auto& [k, v] : *t)
      FRICTION_CHECK(k.str() == "backend" || k.str() == "config",
                     source + ": unknown key '" + std::string(k.str()) + "' in 'executors' (keys: backend, config)");
    auto b = (*t)["backend"].value<std::string>();
    FRICTION_CHECK(b.has_value(), source + ": an entry of 'executors' has no backend");
    executors.push_back({*b, (*t)["config"].value_or(std::string("default"))});
  }
  return executors;
}

SweepSpec fromTable(const toml::table& t, const std::string& source) {
  static const std::set<std::string> known = {
      "name",   "models",     "depths",    "batches",        "backends",   "configs",   "reps",
      "warmup", "target_ci",  "max_seconds", "threads",      "seed",       "check",     "executors",
      "rounds", "min_rounds", "reps_per_round", "block_ms", "order",      "repeat_slow_rounds", "aa_control",
      "group_by", "near_wait_ms", "round_wait_ms", "epochs", "block_warmup_ms"};
  for (const auto& [k, v] : t)
    FRICTION_CHECK(known.count(std::string(k.str())), source + ": unknown key '" + std::string(k.str()) + "'");
  SweepSpec s;
  s.name = t["name"].value_or(s.name);
  s.models = list<std::string>(t, "models", {});
  FRICTION_CHECK(!s.models.empty(), source + ": 'models' lists no model");
  s.depths = list<int64_t>(t, "depths", s.depths);
  s.batches = list<int64_t>(t, "batches", s.batches);
  s.backends = list<std::string>(t, "backends", s.backends);
  s.configs = list<std::string>(t, "configs", s.configs);
  if (t.contains("executors")) s.executors = executorsOf(t, source);
  MeasureOptions& mo = s.measure;
  mo.reps = int(t["reps"].value_or(int64_t(10)));
  mo.warmup = int(t["warmup"].value_or(int64_t(2)));
  mo.threads = int(t["threads"].value_or(int64_t(0)));
  mo.seed = uint64_t(t["seed"].value_or(int64_t(0)));
  mo.checkOutputs = t["check"].value_or(true);
  RoundsOptions& ro = s.rounds;
  ro.rounds = int(t["rounds"].value_or(int64_t(ro.rounds)));
  ro.minRounds = int(t["min_rounds"].value_or(int64_t(ro.minRounds)));
  ro.repsPerRound = int(t["reps_per_round"].value_or(int64_t(0)));
  ro.blockMs = t["block_ms"].value_or(ro.blockMs);
  ro.blockWarmupMs = t["block_warmup_ms"].value_or(ro.blockWarmupMs);
  ro.targetRelCI = t["target_ci"].value_or(0.0);
  ro.repeatSlowRounds = t["repeat_slow_rounds"].value_or(false);
  ro.nearWaitMs = t["near_wait_ms"].value_or(ro.nearWaitMs);
  ro.roundWaitMs = t["round_wait_ms"].value_or(ro.roundWaitMs);
  ro.epochs = int(t["epochs"].value_or(int64_t(ro.epochs)));
  ro.seed = mo.seed;
  ro.threads = mo.threads;
  FRICTION_CHECK(ro.rounds > 0 && ro.minRounds > 0 && ro.epochs > 0 && ro.repsPerRound >= 0 && ro.blockMs > 0 &&
                     ro.nearWaitMs >= 0 && ro.roundWaitMs >= 0 && ro.blockWarmupMs >= 0,
                 source + ": rounds, min_rounds, epochs and block_ms must be positive, reps_per_round, near_wait_ms, "
                          "round_wait_ms and block_warmup_ms not negative");
  std::string order = t["order"].value_or(std::string("clustered"));
  auto named = roundOrderNames().find(order);
  FRICTION_CHECK(named != roundOrderNames().end(),
                 source + ": order must be clustered, shuffled, fixed or sequential, not '" + order + "'");
  ro.order = named->second;
  s.maxSecondsPerCell = t["max_seconds"].value_or(30.0);
  s.groupBy = t["group_by"].value_or(s.groupBy);
  FRICTION_CHECK(s.groupBy == "depth-batch" || s.groupBy == "model-batch",
                 source + ": group_by must be depth-batch or model-batch, not '" + s.groupBy + "'");
  s.aaControl = t["aa_control"].value_or(false);

  // Bad configurations, unknown backends and backend options are refused before anything is measured.
  if (s.executors.empty()) {
    for (const auto& c : s.configs) buildPipeline(parseSweepConfig(c));
    for (const auto& b : s.backends) createBackend(b);
  } else {
    for (const auto& e : s.executors) buildPipeline(parseSweepConfig(e.config));
    for (const auto& e : s.executors) createBackend(e.backend);
  }
  return s;
}

std::string parseErrorMessage(const toml::parse_error& e, const std::string& source) {
  return source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description());
}

// Zoo models get each depth as their last knob (replacing a depth they have); files are taken as they are.
// Each model with its depth ("-" for none).
std::vector<std::pair<std::string, std::string>> modelsAtDepths(const std::vector<std::string>& models,
                                                                const std::vector<int64_t>& depths) {
  std::vector<std::pair<std::string, std::string>> expanded;
  for (const auto& m : models) {
    if (depths.empty() || m.rfind("zoo:", 0) != 0) {
      expanded.push_back({m, "-"});
      continue;
    }
    Spec base = Spec::parse(m, "model");
    base.erase("depth");
    for (int64_t d : depths) {
      Spec deep = base;
      deep.set("depth", std::to_string(d));
      expanded.push_back({deep.print(), std::to_string(d)});
    }
  }
  return expanded;
}

}  // namespace

SweepSpec parseSweepSpec(const std::string& path) {
  try {
    return fromTable(toml::parse_file(path), path);
  } catch (const toml::parse_error& e) {
    throw Error(parseErrorMessage(e, path));
  }
}

SweepSpec parseSweepSpecText(const std::string& text, const std::string& source) {
  try {
    return fromTable(toml::parse(text, source), source);
  } catch (const toml::parse_error& e) {
    throw Error(parseErrorMessage(e, source));
  }
}

PipelineOptions parseSweepConfig(const std::string& c) {
  PipelineOptions o;
  if (c == "default") return o;
  if (c == "all-off") {
    o.passes = {"none"};
    return o;
  }
  FRICTION_CHECK(!c.empty() && std::string("-+=").find(c[0]) != std::string::npos,
                 "sweep: configuration '" + c + "' must be default, all-off, -a,-b, +a,+b or =a,b");
  std::stringstream ss(c);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty() && std::string("-+=").find(item[0]) != std::string::npos) item = item.substr(1);
    (c[0] == '-' ? o.disable : c[0] == '+' ? o.only : o.passes).push_back(item);
  }
  return o;
}

std::vector<SweepCell> SweepSpec::expandCells() const {
  std::vector<SweepCell> cells;
  for (const auto& [m, depth] : modelsAtDepths(models, depths)) {
    auto cell = [&](const std::string& backend, const std::string& config, int64_t batch) {
      std::string group = (groupBy == "model-batch" ? m : "d" + depth) + "|b" + std::to_string(batch);
      cells.push_back({m, backend, config, batch, group});
    };
    if (executors.empty()) {
      for (const auto& b : backends)
        for (int64_t batch : batches)
          for (const auto& c : configs) cell(b, c, batch);
    } else {
      for (const auto& e : executors)
        for (int64_t batch : batches) cell(e.backend, e.config, batch);
    }
  }
  return cells;
}

std::vector<SweepGroup> SweepSpec::expandGroups() const {
  std::vector<SweepGroup> groups;
  std::map<std::string, size_t> index;
  for (auto& c : expandCells()) {
    auto [it, fresh] = index.emplace(c.group, groups.size());
    if (fresh) groups.push_back({c.group, {}});
    groups[it->second].cells.push_back(std::move(c));
  }
  return groups;
}

std::pair<size_t, size_t> parseShard(const std::string& text) {
  std::smatch m;
  FRICTION_CHECK(std::regex_match(text, m, std::regex("([0-9]+)/([0-9]+)")), "--shard must look like i/n, e.g. 0/4");
  return {std::stoul(m[1]), std::stoul(m[2])};
}

std::vector<SweepGroup> shardGroups(const std::vector<SweepGroup>& groups, size_t index, size_t count) {
  FRICTION_CHECK(count > 0 && index < count, "--shard i/n needs 0 <= i < n");
  std::vector<SweepGroup> mine;
  for (size_t i = index; i < groups.size(); i += count) mine.push_back(groups[i]);
  return mine;
}

}  // namespace friction::bench
