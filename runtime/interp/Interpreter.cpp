#include "runtime/interp/Interpreter.h"

#include <map>
#include <new>
#include <unordered_map>

#include "ir/Error.h"
#include "runtime/Inputs.h"
#include "runtime/MemoryLimit.h"
#include "runtime/interp/KernelRegistry.h"

namespace friction::interp {
std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs) {
  checkInputs(graph, inputs);
  std::unordered_map<const Value*, Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[graph.inputs()[i]] = inputs[i];
  for (Value* v : graph.initializers())
    if (!env.count(v)) env[v] = v->constant();

  // Last use of each value, so intermediates are freed early.
  std::unordered_map<const Value*, size_t> lastUse;
  const auto& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (Value* in : nodes[i]->inputs())
      if (in) lastUse[in] = i;
  for (Value* out : graph.outputs()) lastUse[out] = nodes.size();

  const KernelRegistry& kernels = KernelRegistry::instance();
  std::vector<Tensor> args;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = *nodes[i];
    const Kernel* k = kernels.find(node.op());
    FRICTION_CHECK(k != nullptr, "interp: no kernel for op '" + node.op() + "' (node '" + node.name() + "')");
    args.clear();
    for (Value* in : node.inputs()) {
      if (!in) {
        args.emplace_back();
        continue;
      }
      auto it = env.find(in);
      FRICTION_CHECK(it != env.end(), node.describe() + ": input '" + in->name() + "' has no value");
      args.push_back(it->second);
    }
    checkOutputsFitMemory(node);
    std::vector<Tensor> outs;
    try {
      outs = (*k)(node, args);
    } catch (const std::bad_alloc&) {  // a kernel's own scratch (an index map of a run-time shape)
      throw Error(node.describe() + ": out of memory computing its outputs");
    } catch (const Error& e) {
      std::string msg = e.what();
      // Kernels usually name the node already; add it when they did not.
      if (msg.find(node.name()) == std::string::npos) msg = node.describe() + ": " + msg;
      throw Error(msg);
    }
    FRICTION_CHECK(outs.size() >= node.numOutputs() || outs.size() >= 1,
                   node.describe() + ": kernel returned no outputs");
    for (size_t o = 0; o < node.numOutputs() && o < outs.size(); ++o) {
      Value* v = node.output(o);
      if (lastUse.count(v)) env[v] = std::move(outs[o]);
    }
    for (Value* in : node.inputs())
      if (in && lastUse[in] == i && !in->isConstant()) env.erase(in);
  }
  std::vector<Tensor> results;
  for (Value* out : graph.outputs()) {
    auto it = env.find(out);
    FRICTION_CHECK(it != env.end() && it->second.defined(), "output '" + out->name() + "' was not computed");
    results.push_back(it->second);
  }
  return results;
}

}  // namespace friction::interp
