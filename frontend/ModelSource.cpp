#include "frontend/ModelSource.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/onnx/OnnxExport.h"
#include "frontend/onnx/OnnxImport.h"
#include "frontend/zoo/Zoo.h"
#include "ir/Error.h"
#include "ir/TextFormat.h"

namespace friction {

std::unique_ptr<Graph> loadModel(const std::string& spec) {
  if (spec.rfind("zoo:", 0) == 0) return zoo::build(zoo::parseSpec(spec.substr(4)));
  std::filesystem::path p(spec);
  if (p.extension() == ".fir") {
    std::ifstream f(spec);
    FRICTION_CHECK(f.good(), "cannot open model '" + spec + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    return parseGraph(ss.str(), spec);
  }
  return onnxio::importOnnxFile(spec);
}

void saveModel(const Graph& graph, const std::string& path) {
  if (std::filesystem::path(path).extension() != ".fir") return onnxio::exportOnnxFile(graph, path);
  std::ofstream f(path);
  FRICTION_CHECK(f.good(), "cannot write '" + path + "'");
  f << printGraph(graph);
}

}  // namespace friction
