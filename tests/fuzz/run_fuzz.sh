#!/usr/bin/env bash
# Runs one fuzz target for a bounded time from the committed seeds.
# Usage: run_fuzz.sh BINARY SEED_DIR CORPUS_DIR SECONDS. Exit 77 (skip) when
# the clang fuzz tree was not built.
set -euo pipefail
bin=$1 seeds=$2 corpus=$3 seconds=$4
if [[ ! -x "$bin" ]]; then
  echo "SKIP: $bin not built (scripts/test.sh builds the clang-19 fuzz tree in build-fuzz/)"
  exit 77
fi
mkdir -p "$corpus"
# libFuzzer's own error exit code defaults to 77, which ctest would read as "skipped": make findings failures.
exec "$bin" -error_exitcode=1 -artifact_prefix="$corpus/../$(basename "$bin")-" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 "$corpus" "$seeds"
