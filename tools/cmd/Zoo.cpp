#include <iostream>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/zoo/Zoo.h"
#include "tools/cmd/Commands.h"

namespace friction::cli {
namespace {

struct ExportArgs {
  std::string arch, out;
  std::optional<int64_t> depth, width, resolution;
  std::optional<std::string> preset;
  std::vector<std::string> knobs;  // extra key=value
};

void exportModel(const ExportArgs& a) {
  zoo::ZooSpec spec = zoo::parseSpec(a.arch);
  if (a.depth) spec.params["depth"] = std::to_string(*a.depth);
  if (a.width) spec.params["width"] = std::to_string(*a.width);
  if (a.resolution) spec.params["resolution"] = std::to_string(*a.resolution);
  if (a.preset) spec.params["preset"] = *a.preset;
  for (const auto& kv : a.knobs) {
    zoo::ZooSpec extra = zoo::parseSpec("x?" + kv);
    spec.params.insert(extra.params.begin(), extra.params.end());
  }
  auto g = zoo::build(spec);
  onnxio::exportOnnxFile(*g, a.out);
  std::cout << "wrote " << a.out << " (" << g->nodes().size() << " nodes)\n";
}

}  // namespace

void addZoo(CLI::App& app) {
  auto* zooCmd = app.add_subcommand("zoo", "built-in parametric model archetypes");
  zooCmd->require_subcommand(1);
  zooCmd->add_subcommand("list", "one archetype per line: name, knobs with defaults, presets, summary")->callback([] {
    for (const auto& a : zoo::list()) {
      std::cout << a.name;
      for (const auto& k : a.knobs) std::cout << " " << k;
      std::cout << " presets=";
      for (size_t i = 0; i < a.presets.size(); ++i) std::cout << (i ? "," : "") << a.presets[i].name;
      std::cout << "  # " << a.summary << "\n";
    }
  });
  auto args = std::make_shared<ExportArgs>();
  auto* ex = zooCmd->add_subcommand("export", "write an archetype as a standard ONNX model (opset 17)");
  ex->add_option("arch", args->arch, "archetype name (knobs may follow: resnet?depth=4)")->required();
  ex->add_option("--depth", args->depth, "number of repeated blocks");
  ex->add_option("--width", args->width, "channels / hidden width");
  ex->add_option("--resolution", args->resolution, "input resolution");
  ex->add_option("--preset", args->preset, "named configuration (e.g. resnet50, vit_b); explicit knobs override it");
  ex->add_option("--knob", args->knobs, "extra knob as key=value (repeatable)");
  ex->add_option("-o,--output", args->out, "output .onnx path")->required();
  ex->callback([args] { exportModel(*args); });
}

}  // namespace friction::cli
