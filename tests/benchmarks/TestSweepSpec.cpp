// Sweep specifications: what a spec may say and the errors for what it may not, the cells it expands to (with
// and without executors and depths), and how shards split them.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "benchmarks/SweepSpec.h"
#include "ir/Error.h"

namespace friction {
namespace {

using bench::SweepCell;

std::string errorOf(const std::string& toml) {
  try {
    bench::parseSweepSpecText(toml, "spec.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> lines(const std::vector<SweepCell>& cells) {
  std::vector<std::string> r;
  for (const auto& c : cells) r.push_back(c.model + " " + c.backend + " " + std::to_string(c.batch) + " " + c.config);
  return r;
}

TEST(SweepSpec, DefaultsAndMeasureOptions) {
  auto s = bench::parseSweepSpecText("models = [\"zoo:mlp\"]\n", "spec.toml");
  EXPECT_EQ(s.name, "sweep");
  EXPECT_EQ(s.batches, std::vector<int64_t>{1});
  EXPECT_EQ(s.backends, std::vector<std::string>{"interp"});
  EXPECT_EQ(s.configs, (std::vector<std::string>{"all-off", "default"}));
  EXPECT_EQ(s.measure.reps, 10);
  EXPECT_EQ(s.measure.warmup, 2);
  EXPECT_EQ(s.maxSecondsPerCell, 30.0);
  EXPECT_EQ(s.rounds.rounds, bench::RoundsOptions{}.rounds);
  EXPECT_EQ(s.rounds.order, bench::RoundOrder::Clustered);
  EXPECT_EQ(s.groupBy, "depth-batch");
  EXPECT_FALSE(s.aaControl);
  EXPECT_TRUE(s.measure.checkOutputs);
  s = bench::parseSweepSpecText("name = \"n\"\nmodels = [\"m.onnx\"]\nreps = 3\nwarmup = 0\ntarget_ci = 0.02\n"
                                "max_seconds = 5.0\nthreads = 2\nseed = 7\ncheck = false\n",
                                "spec.toml");
  EXPECT_EQ(s.name, "n");
  EXPECT_EQ(s.measure.reps, 3);
  EXPECT_EQ(s.measure.warmup, 0);
  EXPECT_EQ(s.rounds.targetRelCI, 0.02);
  EXPECT_EQ(s.maxSecondsPerCell, 5.0);
  EXPECT_EQ(s.measure.threads, 2);
  EXPECT_EQ(s.measure.seed, 7u);
  EXPECT_FALSE(s.measure.checkOutputs);
}

TEST(SweepSpec, ParseErrorsNameTheProblem) {
  EXPECT_EQ(errorOf("modles = []\n"), "spec.toml: unknown key 'modles'");
  EXPECT_EQ(errorOf("name = \"x\"\n"), "spec.toml: 'models' lists no model");
  EXPECT_EQ(errorOf("models = \"zoo:mlp\"\n"), "sweep spec: 'models' must be an array");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nbatches = [1, \"2\"]\n"),
            "sweep spec: 'batches' has an element of the wrong type");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nconfigs = [\"fast\"]\n"),
            "sweep: configuration 'fast' must be default, all-off, -a,-b, +a,+b or =a,b");
  EXPECT_NE(errorOf("models = [\"zoo:mlp\"]\nconfigs = [\"-fold-everything\"]\n").find("fold-everything"),
            std::string::npos);
  EXPECT_NE(errorOf("models = [\"zoo:mlp\"]\nbackends = [\"warp\"]\n").find("unknown backend 'warp'"),
            std::string::npos);
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nbackends = [\"cpu\"]\nexecutors = [{ backend = \"cpu\" }]\n"),
            "spec.toml: 'executors' replaces 'backends' and 'configs': give one or the other");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nexecutors = []\n"),
            "spec.toml: 'executors' must be a non-empty array of {backend, config} tables");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nexecutors = [\"cpu\"]\n"),
            "spec.toml: each of 'executors' must be a table like { backend = \"cpu\", config = \"default\" }");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nexecutors = [{ backend = \"interp\", level = 1 }]\n"),
            "spec.toml: unknown key 'level' in 'executors' (keys: backend, config)");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\nexecutors = [{ config = \"default\" }]\n"),
            "spec.toml: an entry of 'executors' has no backend");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"\n").rfind("spec.toml:", 0), 0u);  // TOML syntax: file and line
}

TEST(SweepSpec, ReadsAFile) {
  auto path = std::filesystem::temp_directory_path() / ("friction_sweep_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << "models = [\"zoo:mlp\"]\nbatches = [2]\n";
  EXPECT_EQ(bench::parseSweepSpec(path.string()).batches, std::vector<int64_t>{2});
  std::ofstream(path) << "models = [\n";
  try {
    bench::parseSweepSpec(path.string());
    ADD_FAILURE() << "a broken spec parsed";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ":", 0), 0u) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(SweepSpec, ConfigsBecomePipelineOptions) {
  EXPECT_TRUE(bench::parseSweepConfig("default").disable.empty());
  EXPECT_EQ(bench::parseSweepConfig("all-off").passes, std::vector<std::string>{"none"});
  EXPECT_EQ(bench::parseSweepConfig("-a,-b").disable, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(bench::parseSweepConfig("+a,b").only, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(bench::parseSweepConfig("=b,a").passes, (std::vector<std::string>{"b", "a"}));
  EXPECT_THROW(bench::parseSweepConfig(""), Error);
}

TEST(SweepSpec, ExpandsModelsBackendsBatchesConfigs) {
  auto s = bench::parseSweepSpecText("models = [\"zoo:mlp\", \"m.onnx\"]\nbatches = [1, 4]\n", "spec.toml");
  EXPECT_EQ(lines(s.expandCells()),
            (std::vector<std::string>{"zoo:mlp interp 1 all-off", "zoo:mlp interp 1 default",
                                      "zoo:mlp interp 4 all-off", "zoo:mlp interp 4 default",
                                      "m.onnx interp 1 all-off", "m.onnx interp 1 default",
                                      "m.onnx interp 4 all-off", "m.onnx interp 4 default"}));
}

// Each depth becomes the zoo model's last knob, replacing a depth it had: model names are stored, so the
// spelling must stay as it was. Files have no depth knob.
TEST(SweepSpec, ExpandsZooModelsOverDepths) {
  auto s = bench::parseSweepSpecText(
      "models = [\"zoo:resnet?depth=4&width=32\", \"zoo:mlp\", \"m.onnx\"]\ndepths = [1, 2]\nconfigs = [\"default\"]\n",
      "spec.toml");
  EXPECT_EQ(lines(s.expandCells()),
            (std::vector<std::string>{"zoo:resnet?width=32&depth=1 interp 1 default",
                                      "zoo:resnet?width=32&depth=2 interp 1 default",
                                      "zoo:mlp?depth=1 interp 1 default", "zoo:mlp?depth=2 interp 1 default",
                                      "m.onnx interp 1 default"}));
}

TEST(SweepSpec, ExecutorsReplaceTheProduct) {
  auto s = bench::parseSweepSpecText(
      "models = [\"zoo:mlp?width=8\"]\ndepths = [1, 2]\nbatches = [1, 4]\n"
      "executors = [{ backend = \"interp\", config = \"all-off\" }, { backend = \"interp\" }]\n",
      "spec.toml");
  EXPECT_EQ(lines(s.expandCells()),
            (std::vector<std::string>{
                "zoo:mlp?width=8&depth=1 interp 1 all-off", "zoo:mlp?width=8&depth=1 interp 4 all-off",
                "zoo:mlp?width=8&depth=1 interp 1 default", "zoo:mlp?width=8&depth=1 interp 4 default",
                "zoo:mlp?width=8&depth=2 interp 1 all-off", "zoo:mlp?width=8&depth=2 interp 4 all-off",
                "zoo:mlp?width=8&depth=2 interp 1 default", "zoo:mlp?width=8&depth=2 interp 4 default"}));
}

TEST(SweepSpec, RoundsKeysAndTheirErrors) {
  auto s = bench::parseSweepSpecText("models = [\"zoo:mlp\"]\nrounds = 12\nmin_rounds = 3\nblock_ms = 20.0\n"
                                     "reps_per_round = 4\norder = \"fixed\"\nrepeat_slow_rounds = true\n"
                                     "aa_control = true\ngroup_by = \"model-batch\"\nnear_wait_ms = 0\nround_wait_ms = 500\n"
                                     "epochs = 2\nblock_warmup_ms = 4\n",
                                     "spec.toml");
  EXPECT_EQ(s.rounds.rounds, 12);
  EXPECT_EQ(s.rounds.minRounds, 3);
  EXPECT_EQ(s.rounds.blockMs, 20.0);
  EXPECT_EQ(s.rounds.repsPerRound, 4);
  EXPECT_EQ(s.rounds.order, bench::RoundOrder::Fixed);
  EXPECT_TRUE(s.rounds.repeatSlowRounds);
  EXPECT_EQ(s.rounds.nearWaitMs, 0);
  EXPECT_EQ(s.rounds.roundWaitMs, 500);
  EXPECT_EQ(s.rounds.epochs, 2);
  EXPECT_EQ(s.rounds.blockWarmupMs, 4);
  EXPECT_EQ(bench::parseSweepSpecText("models = [\"zoo:mlp\"]\n", "spec.toml").rounds.nearWaitMs,
            bench::RoundsOptions{}.nearWaitMs);
  EXPECT_EQ(bench::parseSweepSpecText("models = [\"zoo:mlp\"]\norder = \"shuffled\"\n", "spec.toml").rounds.order,
            bench::RoundOrder::Shuffled);
  EXPECT_TRUE(s.aaControl);
  EXPECT_EQ(s.groupBy, "model-batch");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\norder = \"random\"\n"),
            "spec.toml: order must be clustered, shuffled, fixed or sequential, not 'random'");
  EXPECT_EQ(errorOf("models = [\"zoo:mlp\"]\ngroup_by = \"model\"\n"),
            "spec.toml: group_by must be depth-batch or model-batch, not 'model'");
  for (const char* bad :
       {"rounds = 0\n", "near_wait_ms = -1.0\n", "round_wait_ms = -1\n", "epochs = 0\n", "block_warmup_ms = -1\n"})
    EXPECT_EQ(errorOf(std::string("models = [\"zoo:mlp\"]\n") + bad),
              "spec.toml: rounds, min_rounds, epochs and block_ms must be positive, reps_per_round, near_wait_ms, "
              "round_wait_ms and block_warmup_ms not negative");
}

TEST(SweepSpec, GroupsHoldEveryModelAndExecutorOfADepthAndBatch) {
  std::string text = "models = [\"zoo:mlp?width=8\", \"zoo:resnet?width=8\", \"m.onnx\"]\ndepths = [1, 2]\n"
                     "batches = [1, 4]\nexecutors = [{ backend = \"interp\", config = \"all-off\" }, { backend = \"interp\" }]\n";
  auto s = bench::parseSweepSpecText(text, "spec.toml");
  auto groups = s.expandGroups();
  std::vector<std::string> keys;
  size_t cells = 0;
  for (const auto& g : groups) {
    keys.push_back(g.key + ":" + std::to_string(g.cells.size()));
    cells += g.cells.size();
    for (const auto& c : g.cells) EXPECT_EQ(c.group, g.key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"d1|b1:4", "d1|b4:4", "d2|b1:4", "d2|b4:4", "d-|b1:2", "d-|b4:2"}));
  EXPECT_EQ(cells, s.expandCells().size());
  s = bench::parseSweepSpecText(text + "group_by = \"model-batch\"\n", "spec.toml");
  EXPECT_EQ(s.expandGroups().size(), 10u);  // 2 zoo models x 2 depths x 2 batches + the file x 2 batches
}

TEST(SweepSpec, ShardsTakeEveryNthGroup) {
  std::vector<bench::SweepGroup> groups;
  for (int i = 0; i < 7; ++i) groups.push_back({"g" + std::to_string(i), {}});
  auto names = [](const std::vector<bench::SweepGroup>& shard) {
    std::string r;
    for (const auto& g : shard) r += g.key + " ";
    return r;
  };
  EXPECT_EQ(names(bench::shardGroups(groups, 0, 1)), "g0 g1 g2 g3 g4 g5 g6 ");
  EXPECT_EQ(names(bench::shardGroups(groups, 0, 3)), "g0 g3 g6 ");
  EXPECT_EQ(names(bench::shardGroups(groups, 2, 3)), "g2 g5 ");
  EXPECT_EQ(names(bench::shardGroups(groups, 6, 8)), "g6 ");
  EXPECT_EQ(names(bench::shardGroups(groups, 7, 8)), "");
  EXPECT_THROW(bench::shardGroups(groups, 3, 3), Error);
  EXPECT_THROW(bench::shardGroups(groups, 0, 0), Error);
  EXPECT_EQ(bench::parseShard("1/6"), std::make_pair(size_t(1), size_t(6)));
  EXPECT_THROW(bench::parseShard("1of6"), Error);
  EXPECT_THROW(bench::parseShard("-1/6"), Error);
}

}  // namespace
}  // namespace friction
