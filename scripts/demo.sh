#!/usr/bin/env bash
# The main job: set up, build, then a small study and a per-pass ablation on built-in zoo models, and the
# report (out/report.html). The study (benchmarks/specs/main-job.toml): three archetypes at two depths, batches
# 1-16, friction cpu with every pass off and with its default pipeline, ONNX Runtime with its optimizations
# disabled and all on, in interleaved rounds with an A/A control. The ablation: every pass left out in turn on
# MODEL (cpu, batches 1 and 8). About three minutes on a 2-core machine after the build.
# SPEC, MODEL, BACKEND and BATCHES override the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
SPEC=${SPEC:-benchmarks/specs/main-job.toml}
MODEL=${MODEL:-"zoo:mobilenetv2?depth=4&width=16&resolution=32"}
BACKEND=${BACKEND:-cpu}
BATCHES=${BATCHES:-1,8}
mkdir -p out
rm -f out/results.db out/results.db-wal out/results.db-shm   # each demo run measures afresh
start=$SECONDS
echo "== friction sweep $SPEC"
build/bin/friction sweep "$SPEC" --db out/results.db
echo "== friction ablate $MODEL --backend $BACKEND --batches $BATCHES --mode loo"
build/bin/friction ablate "$MODEL" --backend "$BACKEND" --batches "$BATCHES" --mode loo --rounds 24 --db out/results.db
echo "== friction opt $MODEL --svg out/graph.svg"
build/bin/friction opt "$MODEL" --batch 1 --svg out/graph.svg 2>/dev/null
echo "== friction report"
build/bin/friction report --db out/results.db -o out/report.html
echo "main job: $((SECONDS - start)) s after the build; open out/report.html"
