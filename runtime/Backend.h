// The one interface every executor sits behind: the reference interpreter,
// the compiled CPU/CUDA backends and the vendor bridges. `compile` does all
// ahead-of-time work; `run` is what the harness times.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Graph.h"

namespace friction {

// The times of consecutive runs (ms); `internal` when the backend timed them
// itself rather than the caller's wall clock around run().
struct TimedRuns {
  std::vector<double> ms;
  bool internal = false;
};

class CompiledModel {
 public:
  virtual ~CompiledModel() = default;
  // One tensor per graph input, in order; returns one tensor per graph output.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  // Milliseconds the last run() spent inside the executor, when the backend
  // measures it itself (a bridge to another process excludes its transport);
  // negative when the caller's wall clock is the measurement.
  virtual double lastRunMs() const { return -1; }
  // Runs the model `n` times back to back on the same inputs, outputs
  // discarded: what the harness times. By default run() in a loop, each run
  // timed by lastRunMs() or else the wall clock; a bridge overrides it to loop
  // inside the vendor's process, as the vendors' own benchmark tools do, so no
  // transport falls between the timed runs.
  virtual TimedRuns timeRuns(const std::vector<Tensor>& inputs, int n);
  // Versions and settings of what executes the model (recorded with results).
  virtual std::string description() const { return ""; }
  // Nodes run by the reference interpreter's kernels rather than the
  // executor's own code: a compiled backend's fallbacks (0 when everything is
  // compiled), every node for `interp`; -1 when the executor does not say (a
  // vendor bridge runs the model its own way).
  virtual int64_t interpNodes() const { return -1; }
  // Where the run time went, per kind of step, over the runs so far; empty
  // unless the backend was asked to profile (runtime/StepProfile.h).
  virtual std::string profile() const { return ""; }
  // True when the cores may stay busy after a run returns: a vendor runtime's
  // thread pool spins on (ONNX Runtime's for ~50 ms here), so the protocol
  // parks the model (below) or waits for quiet before timing anything else. friction's own OpenMP
  // executors spin well under the protocol's 1 ms pause: false.
  virtual bool leavesCoresBusy() const { return true; }
  // Stops what the runs so far left spinning until the next run (a bridge stops its worker process): true when
  // nothing of this model can take a core now, so the harness need not wait for quiet after its block; false
  // when it cannot tell.
  virtual bool park() { return false; }
  // True when the model runs in another process (a bridge's worker): compiling the graph again starts a new
  // process, which the harness may do alongside others (Contender::reincarnatesApart).
  virtual bool runsApart() const { return false; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The graph must outlive the returned model.
  virtual std::unique_ptr<CompiledModel> compile(const Graph& graph) = 0;
};

// A backend spec is NAME or NAME?key=value&... (ir/Spec.h; options are the backend's own,
// e.g. `ort?level=basic&disable=ConstantFolding`). `createBackend` throws
// Error for names that are unknown or not available, listing the available ones.
using BackendFactory = std::function<std::unique_ptr<Backend>(const std::map<std::string, std::string>& options)>;
void registerBackend(const std::string& name, BackendFactory factory);
std::vector<std::string> availableBackends();
std::unique_ptr<Backend> createBackend(const std::string& spec);

}  // namespace friction
