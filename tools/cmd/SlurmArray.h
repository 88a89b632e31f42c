// `friction sweep SPEC --slurm-array OUT.sh [--shards N]`: a script that submits the sweep to Slurm as a job
// array (one shard of whole comparison groups per array task, each measured into a store on the node's
// local disk and then copied beside the others) and a job, dependent on the whole array, that merges the
// shards' stores and writes the report. docs/study.md shows it in use.
#pragma once
#include <cstddef>
#include <string>

namespace friction::cli {

struct SlurmArrayRequest {
  std::string spec;     // the sweep specification (made absolute)
  std::string name;     // the spec's name (job names)
  size_t groups = 0;    // its comparison groups: the most shards that can be busy
  size_t shards = 0;    // array tasks; 0: one per group, at most 16
  std::string output;   // OUT.sh; results go to OUT.results/ unless FRICTION_RESULTS says otherwise at submission
  std::string binary;   // the friction binary the jobs run (this one)
};

// Writes the submission script; returns the shard count it used.
size_t writeSlurmArray(const SlurmArrayRequest& request);

}  // namespace friction::cli
