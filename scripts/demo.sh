#!/usr/bin/env bash
# The main job: set up, build, then ablate every pass on a built-in zoo model
# (leave-one-out, batches 1 and 4) and write the report to out/report.html.
# MODEL, BACKEND and BATCHES override the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
MODEL=${MODEL:-"zoo:resnet?depth=4&width=32&resolution=64"}
BACKEND=${BACKEND:-interp}   # the reference interpreter; BACKEND=cpu ablates the compiled backend
BATCHES=${BATCHES:-1,4}
mkdir -p out
rm -f out/results.db out/results.db-wal out/results.db-shm   # each demo run measures afresh
echo "== friction inspect $MODEL"
build/bin/friction inspect "$MODEL"
echo "== friction ablate $MODEL --backend $BACKEND --batches $BATCHES --mode loo"
build/bin/friction ablate "$MODEL" --backend "$BACKEND" --batches "$BATCHES" --mode loo \
  --warmup 2 --target-ci 0.03 --db out/results.db
echo "== friction report"
build/bin/friction report --db out/results.db -o out/report.html
