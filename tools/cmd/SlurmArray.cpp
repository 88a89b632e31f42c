#include "tools/cmd/SlurmArray.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ir/Error.h"
#include "ir/Shell.h"

namespace fs = std::filesystem;

namespace friction::cli {

namespace {
// Text for a `#` comment line: control characters (a newline would end the comment) become spaces.
std::string commentSafe(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}
}  // namespace

size_t writeSlurmArray(const SlurmArrayRequest& r) {
  FRICTION_CHECK(r.groups > 0, "the spec has no cells: nothing to submit");
  size_t shards = r.shards ? r.shards : std::min<size_t>(r.groups, 16);
  FRICTION_CHECK(shards >= 1, "--shards must be at least 1");
  FRICTION_CHECK(shards <= r.groups, "--shards " + std::to_string(shards) + ": the spec has only " +
                                         std::to_string(r.groups) + " comparison group(s), the unit of a shard");
  fs::path out = fs::absolute(r.output);
  fs::path results = out.parent_path() / (out.stem().string() + ".results");
  std::ofstream f(out);
  FRICTION_CHECK(f.good(), "cannot write '" + out.string() + "'");
  // The paths are fixed now (quoted); the inner job scripts read them from the environment, which sbatch
  // passes on (--export=ALL, its default), so their heredocs stay unexpanded and readable.
  f << "#!/usr/bin/env bash\n"
    << "# Written by `friction sweep " << commentSafe(fs::path(r.spec).filename().string()) << " --slurm-array "
    << commentSafe(out.filename().string()) << " --shards " << shards << "`.\n"
    << "# Submits sweep '" << commentSafe(r.name) << "' as a Slurm job array of " << shards << " shard(s) (whole comparison groups;\n"
    << "# every executor of a group on one node, measured together in interleaved rounds) and a job that merges the\n"
    << "# shards' stores and writes the report once every shard has succeeded.\n"
    << "#   bash " << commentSafe(out.filename().string()) << " [more sbatch options, e.g. --partition=P --time=2:00:00]\n"
    << "# FRICTION_RESULTS (default below) must be a folder every node sees. Each shard measures into a store on its\n"
    << "# node's local disk ($TMPDIR) and copies it there when done; --exclusive keeps other jobs off the cores a\n"
    << "# shard is timing.\n"
    << "set -euo pipefail\n"
    << "export FRICTION_BIN=" << shellQuote(fs::absolute(r.binary).string()) << "\n"
    << "export FRICTION_SPEC=" << shellQuote(fs::absolute(r.spec).string()) << "\n"
    << "export FRICTION_SHARDS=" << shards << "\n"
    << "export FRICTION_RESULTS=${FRICTION_RESULTS:-" << shellQuote(results.string()) << "}\n"
    << "mkdir -p \"$FRICTION_RESULTS\"\n"
    << "array=$(sbatch --parsable --job-name=" << shellQuote("friction-" + r.name) << " --array=0-" << shards - 1
    << " --exclusive \\\n    --output=\"$FRICTION_RESULTS/shard-%a.log\" \"$@\" <<'JOB'\n"
    << "#!/usr/bin/env bash\n"
    << "set -euo pipefail\n"
    << "local_db=\"${TMPDIR:-/tmp}/friction-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID.db\"\n"
    << "\"$FRICTION_BIN\" sweep \"$FRICTION_SPEC\" --shard \"$SLURM_ARRAY_TASK_ID/$FRICTION_SHARDS\" --db \"$local_db\"\n"
    << "# merge writes a complete copy (a plain cp could miss a write-ahead log).\n"
    << "\"$FRICTION_BIN\" merge \"$FRICTION_RESULTS/shard-$SLURM_ARRAY_TASK_ID.db\" \"$local_db\"\n"
    << "rm -f \"$local_db\" \"$local_db-wal\" \"$local_db-shm\"\n"
    << "JOB\n)\n"
    << "merge=$(sbatch --parsable --job-name=" << shellQuote("friction-" + r.name + "-merge")
    << " --dependency=\"afterok:$array\" \\\n    --output=\"$FRICTION_RESULTS/merge.log\" \"$@\" <<'JOB'\n"
    << "#!/usr/bin/env bash\n"
    << "set -euo pipefail\n"
    << "\"$FRICTION_BIN\" merge \"$FRICTION_RESULTS/study.db\" \"$FRICTION_RESULTS\"/shard-*.db\n"
    << "\"$FRICTION_BIN\" report --db \"$FRICTION_RESULTS/study.db\" -o \"$FRICTION_RESULTS/report.html\"\n"
    << "JOB\n)\n"
    << "echo \"submitted job array $array ($FRICTION_SHARDS shards) and merge job $merge; results in $FRICTION_RESULTS\"\n";
  f.close();
  fs::permissions(out, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add);
  return shards;
}

}  // namespace friction::cli
